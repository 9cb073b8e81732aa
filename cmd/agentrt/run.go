package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/tito"
)

const runUsage = `usage: agentrt run CONFIG --prompts FILE --out FILE [flags]

Runs every prompt of FILE (JSON lines: "id", "messages" or "prompt", optional "n", "label", "metadata",
"sampling_params", "max_response_tokens": the episode's response budget, over the agent's) through the agent and
appends one trajectory per sample to --out, as JSON lines.
Each trajectory is written to --out as it finishes (fsynced in the background), so nothing finished is
lost, even to kill -9. Re-running with the same --out runs only the samples that are not in it yet, and,
when the agent's partial_rollout is "resume", again those SGLang aborted (their lines are replaced).
Ctrl-C stops starting episodes, aborts the ones in flight (they are not written, so a re-run completes
them) and keeps everything finished; a second Ctrl-C quits at once. To watch the trajectories token by
token as they arrive, open the viewer on the file: agentrt view FILE (it follows the file).

flags:
`

func runRun(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt run", "run", io, runUsage)
	prompts := fs.String("prompts", "", "JSONL file of prompts (required)")
	out := fs.String("out", "", "JSONL file the trajectories are appended to (required)")
	agentName := fs.String("agent", "", "agent to run (default: the only one in CONFIG)")
	concurrency := fs.Int("concurrency", 0, "episodes in flight (default: server.concurrency from CONFIG)")
	n := fs.Int("n", 0, "samples per prompt, for prompts that do not say (default 1)")
	quiet := fs.Bool("quiet", false, "no progress bar (there is none when stderr is not a terminal)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to FILE (go tool pprof)")
	var cfgPath string
	if code, ok := fs.parse(args, &cfgPath); !ok {
		return code
	}
	if cfgPath == "" || *prompts == "" || *out == "" {
		fs.Usage()
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process (default behaviour)

	cfg, err := config.Load(cfgPath)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	f, err := os.Open(*prompts)
	if err != nil {
		return fs.fail(exitUsage, "%v", err)
	}
	items, err := rollout.ReadItems(f, *prompts)
	f.Close()
	if err != nil {
		return fs.fail(exitUsage, "%v", err)
	}
	done, err := rollout.ReadFinished(*out)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	sys, err := system.Build(ctx, cfg, io.err, nil)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	defer sys.Close()
	agent, err := sys.Agent(*agentName)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
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
		if err := rollout.DropTrajectories(*out, redo); err != nil {
			return fs.fail(exitStartup, "%v", err)
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
		return fs.fail(exitStartup, "%v", err)
	}
	dw := rollout.NewWriter(w)
	var overhead turnOverheads
	emit := func(t *tito.Trajectory) error {
		overhead.add(t)
		return dw.Write(t)
	}
	c := *concurrency
	if c <= 0 {
		c = cfg.Server.Concurrency
	}
	var bar *progressbar.ProgressBar
	var progress func(rollout.Stats)
	if !*quiet && isTerminal(io.err) {
		bar = progressbar.NewOptions(len(eps), progressbar.OptionSetWriter(io.err), progressbar.OptionSetWidth(20),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
		progress = func(s rollout.Stats) {
			secs := max(s.Elapsed.Seconds(), 1e-9)
			bar.Describe(fmt.Sprintf("%.1f ep/s %.0f tok/s %s", float64(s.Done)/secs, float64(s.Tokens)/secs, statusLine(s.ByStatus)))
			bar.Set(s.Done)
		}
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return fs.fail(exitUsage, "--cpuprofile: %v", err)
		}
		defer stopProfile()
	}
	var final rollout.Stats
	t0 := time.Now()
	runErr := rollout.RunBatch(ctx, agent, eps, c, emit, func(s rollout.Stats) {
		final = s
		if progress != nil {
			progress(s)
		}
	})
	if err := dw.Close(); err != nil && runErr == nil {
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
		return fs.fail(exitFailure, "%v", runErr)
	}
	return exitOK
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

// isTerminal reports whether w is a terminal (progress bars only make sense there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
