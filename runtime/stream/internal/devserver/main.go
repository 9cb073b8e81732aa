// Command devserver serves the trajectory stream's WebSocket endpoint with the synthetic fakerunner, for the
// Python client's tests until they run against `agentrt serve` + `agentrt emulate`. It prints
// "listening ws://ADDR/v1/stream" on stdout once it accepts connections, and shuts down on SIGINT/SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	spool := fs.String("spool", "", "spool directory (required)")
	token := fs.String("token", "", "bearer token consumers must present")
	tokens := fs.Int("tokens", 256, "tokens per synthetic trajectory")
	delay := fs.Duration("delay", 0, "time each synthetic episode takes")
	fsync := fs.Bool("fsync", true, "fsync spool commits")
	maxMsg := fs.Int64("max-message-bytes", 1<<20, "largest frame a consumer may send")
	spoolMax := fs.Int("spool-max-records", 100000, "spool bound in records")
	reuse := fs.Bool("reuse", false, "send one pre-built trajectory for every sample (stream benchmarks)")
	verbose := fs.Bool("v", false, "log to stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := stream.DefaultConfig()
	cfg.SpoolDir, cfg.Token, cfg.Fsync, cfg.MaxMessageBytes, cfg.SpoolMaxRecords = *spool, *token, *fsync, *maxMsg, *spoolMax
	cfg.PingInterval = 2 * time.Second
	srv, err := stream.New(cfg, &fakerunner.Runner{Tokens: *tokens, Delay: *delay, Reuse: *reuse}, stream.WithLogger(log))
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/stream", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go hs.Serve(ln)
	fmt.Printf("listening ws://%s/v1/stream\n", ln.Addr())
	<-ctx.Done()
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		return 1
	}
	return 0
}
