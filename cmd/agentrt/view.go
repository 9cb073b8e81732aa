package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/viewer"
)

const viewUsage = `usage: agentrt view FILE [flags]

Opens the trajectory viewer (the page agentrt serve shows at /view/) on FILE, a JSON-lines file of
trajectories: what agentrt run --out writes, or the trajectory frames of the stream that a trainer saved.
It serves the page on a loopback address, prints its URL and opens a browser (--open=false: just print).
From another machine, forward the port: ssh -L 8765:127.0.0.1:8765 HOST, then agentrt view --addr
127.0.0.1:8765 FILE on HOST.

Token texts come from the model's own tokenizer, decoded here: the model each trajectory names in its
provenance ("model": a folder, or a Hugging Face id whose files, pinned to its "model_revision", come from the
Hugging Face cache), or --model DIR for all of them; without one the page shows token ids. The page follows
the file as it grows (agentrt run appends each trajectory as it finishes) and starts over when it is replaced.

flags:
`

func runView(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt view", "view", io, viewUsage)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to serve the page on (port 0: any free port)")
	model := fs.String("model", "", "model folder whose tokenizer decodes every trajectory (default: each one's provenance model)")
	follow := fs.Bool("follow", true, "keep reading lines appended to FILE")
	open := fs.Bool("open", true, "open the page in a browser (xdg-open or open), if one can be started")
	var file string
	if code, ok := fs.parse(args, &file); !ok {
		return code
	}
	if file == "" {
		fs.Usage()
		return exitUsage
	}
	if !stream.IsLoopback(*addr) {
		fmt.Fprintf(io.err, "agentrt view: --addr %s is not a loopback address: the page has no token, so it serves on loopback only (forward the port with ssh -L)\n", *addr)
		return exitUsage
	}
	if *model != "" {
		if _, err := os.Stat(*model); err != nil {
			fmt.Fprintln(io.err, "agentrt view: --model:", err)
			return exitUsage
		}
	}
	src, err := viewer.OpenFile(file, *follow)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt view:", err)
		return exitStartup
	}
	defer src.Close()
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A trajectory's model is a folder, or a hub id whose files, pinned to the recorded commit, come from the
	// Hugging Face cache (fetched when missing, unless HF_HUB_OFFLINE=1).
	folders := viewer.NewFolders(func(m, revision string) (string, error) {
		if *model != "" {
			return *model, nil
		}
		if m == "" {
			return "", errors.New("the trajectory names no model in its provenance: pass --model DIR")
		}
		return system.ModelFolder(ctx, m, revision, log)
	})
	defer folders.Close()
	h := viewer.NewHandler(src, viewer.WithTokenizers(folders.Lookup))
	mux := http.NewServeMux()
	mux.Handle(viewer.Prefix, h)
	mux.Handle("GET /{$}", http.RedirectHandler(viewer.Prefix, http.StatusFound))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt view: listen on %s: %v\n", *addr, err)
		return exitStartup
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + viewer.Prefix
	fmt.Fprintf(io.out, "agentrt view: %s (%s; Ctrl-C to stop)\n", url, file)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if *open {
		openBrowser(url)
	}
	code := exitOK
	select {
	case err := <-errc:
		fmt.Fprintln(io.err, "agentrt view:", err)
		code = exitFailure
	case <-ctx.Done():
	}
	stop()
	h.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return code
}

// openBrowser starts the desktop's browser on url when there is a launcher; it never waits for it.
func openBrowser(url string) {
	launcher := "xdg-open"
	if goruntime.GOOS == "darwin" {
		launcher = "open"
	} else if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return // no desktop to open it on (an ssh session): the printed URL is the way in
	}
	if p, err := exec.LookPath(launcher); err == nil {
		cmd := exec.Command(p, url)
		if cmd.Start() == nil {
			go cmd.Wait()
		}
	}
}
