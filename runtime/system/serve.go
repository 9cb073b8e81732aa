package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/metrics"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/viewer"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

var _ rollout.Observer = (*metrics.Metrics)(nil)

// Server is `agentrt serve`: the System of a config, the rollout service over its agents, the WebSocket
// trajectory stream and its spool, the front door when enabled, and Prometheus metrics, on one HTTP listener.
type Server struct {
	cfg  *config.Config
	log  *slog.Logger
	sys  *System
	svc  *rollout.Service
	strm *stream.Server
	bus  *bus.Bus
	fd   *frontdoor.Server
	ring *viewer.Ring
	view *viewer.Handler
	ln   net.Listener
	hs   *http.Server

	lastBacklog atomic.Int64 // the backlog gauge's last figure (backlog)
}

// viewerObserver hands each finished trajectory to the metrics and the viewer's ring.
type viewerObserver struct {
	*metrics.Metrics
	ring *viewer.Ring
}

func (o viewerObserver) EpisodeFinished(t *tito.Trajectory) {
	o.Metrics.EpisodeFinished(t)
	o.ring.Add(t)
}

// NewServer builds everything cfg describes for `agentrt serve` and listens on cfg.Server.Addr (it serves once
// Serve is called); name names it in the viewer (its config file). log receives the service's logs, logw the
// components' warnings. On error nothing is left open.
//
// # Errors
//
// A listen address beyond loopback without server.token; whatever Build, the spool or the listener refuse.
func NewServer(ctx context.Context, cfg *config.Config, name string, log *slog.Logger, logw io.Writer) (_ *Server, err error) {
	if cfg.Server.Token == "" && !stream.IsLoopback(cfg.Server.Addr) {
		return nil, fmt.Errorf("server.addr %s listens beyond loopback: set server.token (trainers must present it)", cfg.Server.Addr)
	}
	s := &Server{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	m := metrics.New(s.gauges())
	if s.sys, err = Build(ctx, cfg, logw, m.PluginCall); err != nil {
		return nil, err
	}
	// The viewer's ring sees each finished episode as the metrics do; adding to it never blocks the episode.
	var obs rollout.Observer = m
	if cfg.Viewer.Enabled {
		s.ring = viewer.NewRing("agentrt serve "+name, cfg.Viewer.Recent, int64(cfg.Viewer.RecentMB)<<20)
		obs = viewerObserver{m, s.ring}
	}
	if s.svc, err = rollout.NewService(s.sys.Agents(), cfg.Server.Concurrency, s.sys.Gate(), s.sys.Client(), obs); err != nil {
		return nil, err
	}
	s.svc.WarnStaleWeights(cfg.Server.WeightVersionWarnAfter, log)
	scfg := stream.DefaultConfig()
	scfg.SpoolDir = cfg.Server.SpoolDir
	scfg.SpoolMaxRecords = cfg.Server.SpoolMaxTrajectories
	scfg.Token = cfg.Server.Token
	scfg.MaxMessageBytes = int64(cfg.Server.MaxMessageBytes)
	if err := os.MkdirAll(scfg.SpoolDir, 0o755); err != nil {
		return nil, fmt.Errorf("server.spool_dir: %w", err)
	}
	// Accepted requests and finished trajectories live on the bus (embedded: in this process, under
	// bus.dir); its nodes run the samples (docs/scale-out.md).
	if s.bus, err = bus.Open(ctx, cfg.Bus, log.With("component", "bus")); err != nil {
		return nil, err
	}
	st, err := newBusStore(ctx, s.bus)
	if err != nil {
		return nil, err
	}
	s.svc.SetEventSink(st.publishEvent)
	if s.strm, err = stream.NewOnStore(scfg, st, clusterRunner{s.svc, s.bus}, stream.WithLogger(log)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	if cfg.Frontdoor.Enabled {
		if s.fd, err = s.frontdoor(m, obs); err != nil {
			return nil, fmt.Errorf("frontdoor: %w", err)
		}
		for _, p := range frontdoor.Paths {
			mux.Handle(p, s.fd.Handler())
		}
	}
	if s.ring != nil {
		s.view = viewer.NewHandler(s.ring, viewer.WithToken(cfg.Server.Token), viewer.WithLogger(log), viewer.WithTokenizers(s.sys.Tokenizer))
		mux.Handle(viewer.Prefix, s.view)
	}
	mux.Handle("/v1/stream", s.strm)
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := s.sys.Client().Health(rctx, ""); err != nil {
			http.Error(w, "sglang not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if s.ln, err = net.Listen("tcp", cfg.Server.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
	}
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// gauges read the service, the stream, the SGLang client and the plugin host on every scrape (zero until built).
func (s *Server) gauges() metrics.Gauges {
	sumWorkers := func(f func(sglang.WorkerStats) int) func() float64 { // a gauge over the SGLang targets
		return func() float64 {
			if s.sys == nil {
				return 0
			}
			n := 0
			for _, w := range s.sys.Client().Stats().Workers {
				n += f(w)
			}
			return float64(n)
		}
	}
	return metrics.Gauges{
		InFlight: func() float64 {
			if s.svc == nil {
				return 0
			}
			return float64(s.svc.InFlight())
		},
		SpoolBacklog: s.backlog,
		StaleWeightConsumers: func() float64 {
			if s.svc == nil {
				return 0
			}
			return float64(s.svc.StaleWeightConsumers())
		},
		SGLangQueued: sumWorkers(func(w sglang.WorkerStats) int { return w.Queued }),
		SGLangLimit:  sumWorkers(func(w sglang.WorkerStats) int { return w.Limit }),
		PluginLogsDropped: func() float64 {
			if s.sys == nil {
				return 0
			}
			return float64(s.sys.Host().DroppedLogLines())
		},
		SGLang: func() sglang.Stats {
			if s.sys == nil {
				return sglang.Stats{}
			}
			return s.sys.Client().Stats()
		},
		Stream: func() stream.Stats {
			if s.strm == nil {
				return stream.Stats{}
			}
			return s.strm.Stats()
		},
	}
}

// frontdoor serves the configured agent behind the OpenAI-compatible endpoints; session trajectories go to the
// stream's spool for frontdoor.consumer, under request id "frontdoor/SESSION".
func (s *Server) frontdoor(m *metrics.Metrics, obs rollout.Observer) (*frontdoor.Server, error) {
	a, err := s.sys.Agent(s.cfg.Frontdoor.Agent)
	if err != nil {
		return nil, err
	}
	model, err := FrontdoorModel(a)
	if err != nil {
		return nil, err
	}
	consumer := s.cfg.Frontdoor.Consumer
	sink := func(ctx context.Context, e frontdoor.Emitted) error {
		obs.EpisodeFinished(e.Traj)
		return s.strm.Emit(ctx, consumer, "frontdoor/"+e.Session, stream.Finished{ItemID: e.Session, SampleIndex: e.Index,
			GroupID: e.GroupID, TrajectoryID: e.TrajectoryID, Trajectory: e.Trajectory})
	}
	fcfg := s.cfg.Frontdoor
	fcfg.Token = s.cfg.Server.Token // the same key as the stream's: callers send it as their API key
	fd, err := frontdoor.New(fcfg, model, sink, s.log)
	if err != nil {
		return nil, err
	}
	fd.OnDrift = m.HistoryDrift
	return fd, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Inference says where the model calls go: the SGLang server(s) or the in-process emulator.
func (s *Server) Inference() string {
	if u := s.sys.EmulatorURL(); u != "" {
		return "the built-in SGLang emulator (" + u + ")"
	}
	return "SGLang " + s.sys.Client().Workers()[0]
}

// ViewerPath is where the trajectory viewer is mounted ("" when [viewer] is off).
func (s *Server) ViewerPath() string {
	if s.view == nil {
		return ""
	}
	return viewer.Prefix
}

// Agents is the number of configured agents.
func (s *Server) Agents() int { return len(s.sys.Agents()) }

// Serve serves until ctx ends, then shuts down: open front-door sessions end (their trajectories are spooled),
// the stream drains for server.shutdown_grace and flushes its spool, and the HTTP server stops.
//
// # Errors
//
// The HTTP server's failure (serving stops at once), or what failed during the shutdown.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(s.ln) }()
	// This process is a node of the bus: it claims samples for its free slots and runs them.
	nodeCtx, stopNode := context.WithCancel(context.Background())
	defer stopNode()
	drain := make(chan struct{})
	nodeDone := make(chan error, 1)
	nlog := s.log.With("component", "node", "node", s.bus.NodeName())
	go func() {
		nodeDone <- s.bus.Serve(nodeCtx, bus.Node{Slots: s.cfg.Server.Concurrency, Run: s.svc.RunSample,
			Failed: rollout.FailedSample, Drain: drain, Control: nodeControl{s.svc}, Limits: nodeLimits{s.sys.Client()}, Observe: func(e bus.Event) {
				nlog.Debug("bus: "+e.Kind, "trajectory_id", e.Sample.TrajectoryID, "delivery", e.Delivery, "err", e.Err)
			}})
	}()
	select {
	case err := <-errc:
		stopNode()
		<-nodeDone
		return err
	case err := <-nodeDone:
		s.log.Error("agentrt serve: the bus node stopped", "err", err)
		return fmt.Errorf("bus node: %w", err)
	case <-ctx.Done():
	}
	grace := s.cfg.Server.ShutdownGrace
	s.log.Info("agentrt serve: shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var errs []error
	// Running samples may finish within the grace; the rest go back to the bus (another node, or this one's
	// next start, runs them again from the start under the same trajectory id).
	close(drain)
	select {
	case err := <-nodeDone:
		if err != nil {
			errs = append(errs, fmt.Errorf("bus node: %w", err))
		}
	case <-sctx.Done():
		stopNode()
		if err := <-nodeDone; err != nil {
			errs = append(errs, fmt.Errorf("bus node: %w", err))
		}
	}
	if s.fd != nil {
		// Open sessions end now: their trajectories are spooled before the spool closes.
		if err := s.fd.Close(sctx); err != nil {
			s.log.Error("agentrt serve: frontdoor shutdown", "err", err)
			errs = append(errs, fmt.Errorf("frontdoor shutdown: %w", err))
		}
	}
	if err := s.strm.Shutdown(sctx); err != nil {
		s.log.Error("agentrt serve: stream shutdown", "err", err)
		errs = append(errs, fmt.Errorf("stream shutdown: %w", err))
	}
	if s.view != nil {
		s.view.Close() // its event streams end, so the HTTP server's shutdown does not wait on them
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	s.hs.Shutdown(hctx)
	return errors.Join(errs...)
}

// Close releases what NewServer built (after Serve, or instead of it: the stream is then stopped at once, and
// the requests it resumed from its spool are interrupted, to run again on the next start).
func (s *Server) Close() {
	if s.ln != nil {
		s.ln.Close()
	}
	if s.strm != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.strm.Shutdown(ctx) // ErrClosed after Serve's shutdown
	}
	if s.view != nil {
		s.view.Close()
	}
	if s.bus != nil {
		s.bus.Close()
	}
	if s.ring != nil {
		s.ring.Close()
	}
	if s.sys != nil {
		s.sys.Close()
	}
}

// backlog is the agentrt_spool_backlog gauge: the trainers' unacked messages on the bus (the last figure read when
// the bus does not answer within a scrape's time: a gauge that dropped to 0 would say the backlog emptied).
func (s *Server) backlog() float64 {
	if s.bus == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := s.bus.Backlog(ctx)
	if err != nil {
		s.log.Debug("metrics: backlog", "err", err)
		return float64(s.lastBacklog.Load())
	}
	s.lastBacklog.Store(int64(n))
	return float64(n)
}
