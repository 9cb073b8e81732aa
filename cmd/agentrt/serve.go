package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/metrics"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/sglang"
)

const serveUsage = `usage: agentrt serve CONFIG [flags]

Runs the rollout service that trainers drive: HTTP on server.addr with
  /v1/stream  the WebSocket trajectory stream (docs/PROTOCOL.md)
  /healthz    200 while the process serves
  /readyz     200 when SGLang answers /health and the plugins are loaded
  /metrics    Prometheus metrics
  /s/SESSION/v1/chat/completions, /s/SESSION/v1/responses, /s/SESSION/v1/messages, /s/SESSION/end
              with [frontdoor] enabled: the OpenAI/Anthropic-compatible front door; each session's
              trajectories go to frontdoor.consumer's stream (docs/frontdoor.md)
Accepted requests and finished trajectories are kept on disk (server.spool_dir) until a trainer acks them;
a restart on the same spool (even after kill -9) resumes every request that had not ended. SIGINT/SIGTERM
stop accepting work, let running episodes finish for server.shutdown_grace, then interrupt the rest (they
run again on the next start) and flush the spool; a second signal quits at once.

flags:
`

func runServe(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.err)
	addr := fs.String("addr", "", "listen address (default: server.addr from CONFIG)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.Usage = func() { fmt.Fprint(io.err, serveUsage); fs.PrintDefaults() }
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
	if cfgPath == "" {
		fs.Usage()
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(io.err, "agentrt serve: --log-level:", err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: level}))

	cfg, err := loadConfig(cfgPath)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt serve:", err)
		return exitStartup
	}
	if *addr != "" {
		cfg.Server.Addr = *addr
	}
	if cfg.Server.Token == "" && !loopback(cfg.Server.Addr) {
		fmt.Fprintf(io.err, "agentrt serve: %s: server.addr %s listens beyond loopback: set server.token (trainers must present it)\n", cfgPath, cfg.Server.Addr)
		return exitStartup
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		sys  *system
		strm *stream.Server
		svc  *runtime.Service
	)
	sumWorkers := func(f func(sglang.WorkerStats) int) func() float64 { // a gauge over the SGLang targets
		return func() float64 {
			if sys == nil {
				return 0
			}
			n := 0
			for _, w := range sys.client.Stats().Workers {
				n += f(w)
			}
			return float64(n)
		}
	}
	m := metrics.New(metrics.Gauges{
		InFlight: func() float64 {
			if svc == nil {
				return 0
			}
			return float64(svc.InFlight())
		},
		SpoolBacklog: func() float64 {
			if strm == nil {
				return 0
			}
			return float64(strm.Stats().SpoolRecords)
		},
		StaleWeightConsumers: func() float64 {
			if svc == nil {
				return 0
			}
			return float64(svc.StaleWeightConsumers())
		},
		SGLangQueued: sumWorkers(func(w sglang.WorkerStats) int { return w.Queued }),
		SGLangLimit:  sumWorkers(func(w sglang.WorkerStats) int { return w.Limit }),
		PluginLogsDropped: func() float64 {
			if sys == nil {
				return 0
			}
			return float64(sys.host.DroppedLogLines())
		},
	})
	sys, err = buildSystem(ctx, cfg, io.err, m.PluginCall)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt serve:", err)
		return exitStartup
	}
	defer sys.Close()

	svc, err = runtime.NewService(sys.agents, cfg.Server.Concurrency, sys.gate, sys.client, m)
	if err != nil {
		fmt.Fprintln(io.err, "agentrt serve:", err)
		return exitStartup
	}
	svc.WarnStaleWeights(cfg.Server.WeightVersionWarnAfter.Duration, log)
	scfg := stream.DefaultConfig()
	scfg.SpoolDir = cfg.Server.SpoolDir
	scfg.SpoolMaxRecords = cfg.Server.SpoolMaxTrajectories
	scfg.Token = cfg.Server.Token
	scfg.MaxMessageBytes = int64(cfg.Server.MaxMessageBytes)
	if err := os.MkdirAll(scfg.SpoolDir, 0o755); err != nil {
		fmt.Fprintln(io.err, "agentrt serve: server.spool_dir:", err)
		return exitStartup
	}
	strm, err = stream.New(scfg, svc, stream.WithLogger(log))
	if err != nil {
		fmt.Fprintln(io.err, "agentrt serve:", err)
		return exitStartup
	}

	mux := http.NewServeMux()
	var fd *frontdoor.Server
	if cfg.Frontdoor.Enabled {
		if fd, err = startFrontdoor(cfg, sys, strm, m, log); err != nil {
			fmt.Fprintf(io.err, "agentrt serve: %s: frontdoor: %v\n", cfgPath, err)
			return exitStartup
		}
		for _, p := range frontdoor.Paths {
			mux.Handle(p, fd.Handler())
		}
	}
	mux.Handle("/v1/stream", strm)
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := sys.client.Health(rctx, ""); err != nil {
			http.Error(w, "sglang not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt serve: listen on %s: %v\n", cfg.Server.Addr, err)
		return exitStartup
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	where := "SGLang " + sys.client.Workers()[0]
	if sys.emuURL != "" {
		where = "the built-in SGLang emulator (" + sys.emuURL + ")"
	}
	log.Info("agentrt serve: ready", "stream", "ws://"+ln.Addr().String()+"/v1/stream", "agents", len(sys.agents),
		"inference", where, "spool", scfg.SpoolDir)
	fmt.Fprintf(io.out, "agentrt serve: listening on http://%s (WebSocket ws://%s/v1/stream), inference on %s\n",
		ln.Addr(), ln.Addr(), where)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(io.err, "agentrt serve:", err)
		return exitFailure
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	log.Info("agentrt serve: shutting down", "grace", cfg.Server.ShutdownGrace.Duration)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace.Duration)
	defer cancel()
	code := exitOK
	if fd != nil {
		// Open sessions end now: their trajectories are spooled before the spool closes.
		if err := fd.Close(sctx); err != nil {
			log.Error("agentrt serve: frontdoor shutdown", "err", err)
			code = exitFailure
		}
	}
	if err := strm.Shutdown(sctx); err != nil {
		log.Error("agentrt serve: stream shutdown", "err", err)
		code = exitFailure
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	hs.Shutdown(hctx)
	return code
}

// startFrontdoor serves the configured agent behind the OpenAI-compatible endpoints; session trajectories go to
// the stream's spool for frontdoor.consumer, under request id "frontdoor/SESSION".
func startFrontdoor(cfg *runtime.Config, sys *system, strm *stream.Server, m *metrics.Metrics, log *slog.Logger) (*frontdoor.Server, error) {
	a, err := sys.Agent(cfg.Frontdoor.Agent)
	if err != nil {
		return nil, err
	}
	model, err := a.FrontdoorModel()
	if err != nil {
		return nil, err
	}
	consumer := cfg.Frontdoor.Consumer
	sink := func(ctx context.Context, e frontdoor.Emitted) error {
		m.EpisodeFinished(e.Traj)
		return strm.Emit(ctx, consumer, "frontdoor/"+e.Session, stream.Finished{ItemID: e.Session, SampleIndex: e.Index,
			GroupID: e.GroupID, TrajectoryID: e.TrajectoryID, Trajectory: e.Trajectory})
	}
	fcfg := cfg.Frontdoor
	fcfg.Token = cfg.Server.Token // the same key as the stream's: callers send it as their API key
	fd, err := frontdoor.New(fcfg, model, sink, log)
	if err != nil {
		return nil, err
	}
	fd.OnDrift = m.HistoryDrift
	return fd, nil
}

// loopback reports whether addr listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
