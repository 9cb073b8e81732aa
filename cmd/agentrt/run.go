package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/tito"
)

const runUsage = `usage: agentrt run CONFIG --prompts FILE --out FILE [flags]

Runs every prompt of FILE (JSON lines: "id", "messages" or "prompt", optional "n", "label", "metadata",
"sampling_params") through the agent and appends one trajectory per sample to --out, as JSON lines.
Each trajectory is written to --out as it finishes (fsynced in the background), so nothing finished is
lost, even to kill -9. Re-running with the same --out runs only the samples that are not in it yet, and,
when the agent's partial_rollout is "resume", again those SGLang aborted (their lines are replaced).
Ctrl-C stops starting episodes, aborts the ones in flight (they are not written, so a re-run completes
them) and keeps everything finished; a second Ctrl-C quits at once.

flags:
`

func runRun(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.err)
	prompts := fs.String("prompts", "", "JSONL file of prompts (required)")
	out := fs.String("out", "", "JSONL file the trajectories are appended to (required)")
	agentName := fs.String("agent", "", "agent to run (default: the only one in CONFIG)")
	concurrency := fs.Int("concurrency", 0, "episodes in flight (default: server.concurrency from CONFIG)")
	n := fs.Int("n", 0, "samples per prompt, for prompts that do not say (default 1)")
	quiet := fs.Bool("quiet", false, "no progress bar (there is none when stderr is not a terminal)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to FILE (go tool pprof)")
	fs.Usage = func() { fmt.Fprint(io.err, runUsage); fs.PrintDefaults() }
	cfgPath, rest := splitPositional(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if cfgPath == "" && fs.NArg() > 0 {
		cfgPath = fs.Arg(0)
	}
	if cfgPath == "" || *prompts == "" || *out == "" {
		fs.Usage()
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process (default behaviour)

	cfg, err := loadConfig(cfgPath)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitStartup
	}
	f, err := os.Open(*prompts)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitUsage
	}
	items, err := runtime.ReadItems(f, *prompts)
	f.Close()
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitUsage
	}
	done, err := finishedIDs(*out)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitStartup
	}
	sys, err := buildSystem(ctx, cfg, io.err, nil)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitStartup
	}
	defer sys.Close()
	agent, err := sys.Agent(*agentName)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitStartup
	}
	if agent.ResumesPartial() {
		// samples that SGLang aborted (a pause or weight update) are what partial_rollout = "resume" continues:
		// run them again, in place of their aborted lines
		var redo []string
		for id, st := range done {
			if st == runtime.StatusAborted+"/"+runtime.ReasonAbortedByRequest {
				redo = append(redo, id)
				delete(done, id)
			}
		}
		if err := dropLines(*out, redo); err != nil {
			fmt.Fprintln(io.err, "agentrt run:", err)
			return exitStartup
		}
	}
	var eps []runtime.Episode
	for i := range items {
		if items[i].N == 0 && *n > 0 {
			items[i].N = *n
		}
		for _, ep := range items[i].Episodes("") {
			if _, ok := done[ep.ID]; !ok {
				eps = append(eps, ep)
			}
		}
	}
	skipped := len(done)

	w, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt run:", err)
		return exitStartup
	}
	dw := newDurableWriter(w)
	var buf []byte
	var overhead turnOverheads
	emit := func(t *tito.Trajectory) error {
		overhead.add(t)
		// AppendJSON writes the trajectory directly (json.Marshal would re-validate every byte of it).
		b, err := t.AppendJSON(buf[:0])
		if err != nil {
			return err
		}
		buf = append(b, '\n')
		return dw.write(buf)
	}
	c := *concurrency
	if c <= 0 {
		c = cfg.Server.Concurrency
	}
	var bar *progressbar.ProgressBar
	var progress func(runtime.Stats)
	if !*quiet && isTerminal(io.err) {
		bar = progressbar.NewOptions(len(eps), progressbar.OptionSetWriter(io.err), progressbar.OptionSetWidth(20),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
		progress = func(s runtime.Stats) {
			secs := max(s.Elapsed.Seconds(), 1e-9)
			bar.Describe(fmt.Sprintf("%.1f ep/s %.0f tok/s %s", float64(s.Done)/secs, float64(s.Tokens)/secs, statusLine(s.ByStatus)))
			bar.Set(s.Done)
		}
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(io.err, "agentrt run:", err)
			return exitUsage
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintln(io.err, "agentrt run:", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}
	var final runtime.Stats
	t0 := time.Now()
	runErr := runtime.RunBatch(ctx, agent, eps, c, emit, func(s runtime.Stats) {
		final = s
		if progress != nil {
			progress(s)
		}
	})
	if err := dw.close(); err != nil && runErr == nil {
		runErr = err
	}
	if bar != nil {
		bar.Finish()
	}
	secs := time.Since(t0).Seconds()
	fmt.Fprintf(io.err, "agentrt run: %d episodes in %.1fs (%.1f ep/s, %.0f tok/s), %s; %d already in %s\n",
		final.Done, secs, float64(final.Done)/max(secs, 1e-9), float64(final.Tokens)/max(secs, 1e-9),
		statusLine(final.ByStatus), skipped, *out)
	if line := overhead.summary(); line != "" {
		fmt.Fprintln(io.err, "agentrt run:", line)
	}
	if runErr != nil {
		fmt.Fprintln(io.err, "agentrt run:", runErr)
		return exitFailure
	}
	return exitOK
}

// durableWriter writes each trajectory line with one write as it finishes: once write returns, the line is in
// the file and survives a kill -9 of the process. A background goroutine fsyncs after writes (group commit: one
// fsync for whatever was written meanwhile, at most every fsyncEvery), so a machine crash loses at most the
// last moments' lines, which a re-run completes; finishedIDs drops a line cut short.
type durableWriter struct {
	f      *os.File
	dirty  chan struct{} // a write is waiting for an fsync
	stop   chan struct{} // closed by close
	synced chan struct{} // closed when the fsync goroutine has exited
	mu     sync.Mutex
	err    error // the first write or fsync error
}

// fsyncEvery spaces fsyncs: each one also commits the filesystem's journal and holds up writes meanwhile, so
// back-to-back fsyncs cost a fast run ~12% of its episodes/s; at 10 a second they cost nothing measurable.
const fsyncEvery = 100 * time.Millisecond

func newDurableWriter(f *os.File) *durableWriter {
	d := &durableWriter{f: f, dirty: make(chan struct{}, 1), stop: make(chan struct{}), synced: make(chan struct{})}
	go func() {
		defer close(d.synced)
		for {
			select {
			case <-d.dirty:
			case <-d.stop:
				return
			}
			next := time.Now().Add(fsyncEvery)
			if err := f.Sync(); err != nil {
				d.fail(fmt.Errorf("fsync %s: %w", f.Name(), err))
			}
			t := time.NewTimer(time.Until(next))
			select {
			case <-t.C:
			case <-d.stop:
				t.Stop()
				return
			}
		}
	}()
	return d
}

func (d *durableWriter) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
}

// write appends b (whole lines) to the file; it reports an earlier fsync failure too.
func (d *durableWriter) write(b []byte) error {
	if _, err := d.f.Write(b); err != nil {
		d.fail(fmt.Errorf("write %s: %w", d.f.Name(), err))
	}
	select {
	case d.dirty <- struct{}{}:
	default: // an fsync is already due; it covers this write
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// close waits for the background fsync, fsyncs once more and closes the file. No write may follow.
func (d *durableWriter) close() error {
	close(d.stop)
	<-d.synced
	if err := d.f.Sync(); err != nil {
		d.fail(fmt.Errorf("fsync %s: %w", d.f.Name(), err))
	}
	if err := d.f.Close(); err != nil {
		d.fail(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// turnOverheads collects the runtime's own time per turn (TurnInfo.OverheadMS) for the closing summary.
type turnOverheads struct{ first, later []float64 }

func (o *turnOverheads) add(t *tito.Trajectory) {
	for _, s := range t.Segments {
		if s.Info == nil {
			continue
		}
		if s.Turn == 0 {
			o.first = append(o.first, s.Info.OverheadMS)
		} else {
			o.later = append(o.later, s.Info.OverheadMS)
		}
	}
}

// summary reads, e.g., "runtime overhead per turn p50 92 µs, p99 410 µs (2,310 later turns); first turn p50 380 µs".
func (o *turnOverheads) summary() string {
	slices.Sort(o.first)
	slices.Sort(o.later)
	pct := func(xs []float64, q float64) float64 { return 1000 * xs[min(len(xs)-1, int(q*float64(len(xs))))] }
	var parts []string
	if n := len(o.later); n > 0 {
		parts = append(parts, fmt.Sprintf("runtime overhead per turn p50 %.0f µs, p99 %.0f µs (%d later turns)", pct(o.later, 0.5), pct(o.later, 0.99), n))
	}
	if n := len(o.first); n > 0 {
		parts = append(parts, fmt.Sprintf("first turn (first prompt rendered in full) p50 %.0f µs", pct(o.first, 0.5)))
	}
	return strings.Join(parts, "; ")
}

// splitPositional takes a leading positional argument (CONFIG) off args, so flags may follow it.
func splitPositional(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func statusLine(by map[string]int) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, by[k]))
	}
	if len(parts) == 0 {
		return "nothing run"
	}
	return strings.Join(parts, " ")
}

// finishedIDs reads the trajectory ids already in out, each with its "status/status_reason". A last line cut
// short by a crash is dropped (the file is truncated to its last complete line) so that appending keeps the
// file valid JSONL.
func finishedIDs(out string) (map[string]string, error) {
	done := map[string]string{}
	b, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		cut := bytes.LastIndexByte(b, '\n') + 1
		if err := os.Truncate(out, int64(cut)); err != nil {
			return nil, err
		}
		b = b[:cut]
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			StatusReason string `json:"status_reason"`
		}
		if err := json.Unmarshal(line, &t); err != nil || t.ID == "" {
			return nil, fmt.Errorf("%s:%d: not a trajectory line (want JSON with an \"id\"): refusing to append to it", out, i+1)
		}
		done[t.ID] = t.Status + "/" + t.StatusReason
	}
	return done, nil
}

// dropLines rewrites out without the trajectories of the given ids (through a temporary file renamed over it,
// so that a crash leaves either file whole).
func dropLines(out string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var kept []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		var t struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &t) == nil && drop[t.ID] {
			continue
		}
		kept = append(kept, line...)
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, kept, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// isTerminal reports whether w is a terminal (progress bars only make sense there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
