package system

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/runtime/viewer"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

var (
	_ turn.Generator = (*sglang.Client)(nil)
	_ turn.Aborter   = (*sglang.Client)(nil)
	_ turn.Tokenizer = (*tito.Tokenizer)(nil)
	_ turn.Template  = (*tito.ChatTemplate)(nil)
	_ turn.Parser    = (*plugin.Parser)(nil)
)

// System is everything a config builds: model folders, the SGLang client (or the in-process emulator), the plugin
// host and its modules, the agents, and the pause gate their model calls share. Close releases it in reverse order.
type System struct {
	cfg     *config.Config
	log     *slog.Logger
	client  *sglang.Client
	host    *plugin.Host
	emuURL  string
	models  map[string]*tito.Model // by modelKey
	commits map[string]string      // by modelKey: a hub model's commit
	agents  map[string]*runtime.Agent
	gate    *turn.Gate
	closers []func()
}

// Close releases what Build made, in reverse order.
func (s *System) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// Tokenizer returns the tokenizer of a model the system loaded, by what trajectories record in their provenance:
// the folder or hub id, and a hub model's commit (for the viewer's token texts); else why there is none.
func (s *System) Tokenizer(model, revision string) (viewer.Tokenizer, string) {
	for _, ac := range s.cfg.Agents {
		key := modelKey(ac)
		if ac.Model == model && s.commits[key] == revision && s.models[key] != nil {
			return s.models[key].Tokenizer, model
		}
	}
	return nil, "this server did not load the model " + model
}

// Agent returns the agent named name (or the only one).
func (s *System) Agent(name string) (*runtime.Agent, error) {
	ac, err := s.cfg.Agent(name)
	if err != nil {
		return nil, err
	}
	return s.agents[ac.Name], nil
}

// Agents returns every agent, by name.
func (s *System) Agents() map[string]*runtime.Agent { return s.agents }

// Client is the SGLang client.
func (s *System) Client() *sglang.Client { return s.client }

// Host is the plugin host.
func (s *System) Host() *plugin.Host { return s.host }

// Gate is the pause gate of every agent's model calls.
func (s *System) Gate() *turn.Gate { return s.gate }

// EmulatorURL is where the in-process emulator serves ("" when the config names SGLang servers).
func (s *System) EmulatorURL() string { return s.emuURL }

// Build builds everything cfg describes; logw receives the components' warnings; pluginCall, if not nil, receives
// plugin call durations.
func Build(ctx context.Context, cfg *config.Config, logw io.Writer, pluginCall func(kind, plugin string, d time.Duration)) (_ *System, err error) {
	s := &System{cfg: cfg, models: map[string]*tito.Model{}, agents: map[string]*runtime.Agent{}, gate: &turn.Gate{},
		log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.commits = map[string]string{}
	commits := s.commits
	for _, ac := range cfg.Agents {
		key := modelKey(ac)
		if s.models[key] != nil {
			continue
		}
		dir := ac.Model
		if ac.Hub {
			snap, err := hubSnapshot(ctx, ac.Model, ac.Revision, s.log)
			if err != nil {
				return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
			}
			dir, commits[key] = snap.Dir, snap.Commit
		}
		m, err := tito.LoadModel(dir)
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
		s.models[key] = m
		s.closers = append(s.closers, m.Close)
	}
	scfg := cfg.SGLang
	if cfg.UsesEmulator() {
		url, err := s.startEmulator(ctx, s.models[modelKey(cfg.Agents[0])], cfg.Agents[0].Model)
		if err != nil {
			return nil, err
		}
		scfg.Workers = []string{url}
	}
	s.client, err = sglang.New(scfg, sglang.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { s.client.Close() })
	hcfg := plugin.DefaultConfig()
	hcfg.CacheDir = cfg.Plugins.CacheDir
	if hcfg.CacheDir != "" {
		if err := os.MkdirAll(hcfg.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("plugins.cache_dir: %w", err)
		}
	}
	s.host, err = plugin.NewHost(ctx, hcfg, plugin.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { s.host.Close(context.Background()) })
	server := strings.Join(s.client.Workers(), ",")
	if g := s.client.Gateway(); g != "" {
		server = g
	}
	for _, ac := range cfg.Agents {
		a, err := BuildAgent(ctx, ac, BuildEnv{Host: s.host, Generator: s.client, Model: s.models[modelKey(ac)], ModelCommit: commits[modelKey(ac)],
			MaxModelLen: func(ctx context.Context) (int, error) { return s.client.MaxModelLen(ctx, "") },
			Server:      server, Logger: s.log, Gate: s.gate, PluginCall: pluginCall, Agents: s.Agent})
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
		s.agents[ac.Name] = a
		s.closers = append(s.closers, func() { a.Close(context.Background()) })
	}
	return s, nil
}

// modelKey names an agent's model among the loaded ones: its folder, or its hub id and revision.
func modelKey(ac config.Agent) string {
	if ac.Hub {
		return ac.Model + "@" + ac.Revision
	}
	return ac.Model
}

// startEmulator serves the built-in SGLang emulator on a loopback port, with the first agent's tokenizer; it
// reports modelPath (the folder or hub id, as SGLang's --model-path) as its model.
func (s *System) startEmulator(ctx context.Context, m *tito.Model, modelPath string) (string, error) {
	ec := s.cfg.Emulator
	c := ec.Config
	c.VocabSize = m.Tokenizer.VocabSize()
	c.StopIDs = m.StopIDs
	c.ModelPath = modelPath
	var opts []emulator.Option
	if ec.Script != "" {
		f, err := os.Open(ec.Script)
		if err != nil {
			return "", fmt.Errorf("emulator.script: %w", err)
		}
		sc, err := emulator.ParseScript(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("emulator.script %s: %w", ec.Script, err)
		}
		opts = append(opts, emulator.WithScript(sc))
	}
	if ec.Log != "" {
		f, err := os.OpenFile(ec.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return "", fmt.Errorf("emulator.log: %w", err)
		}
		s.closers = append(s.closers, func() { f.Close() })
		opts = append(opts, emulator.WithLog(f))
	}
	emu, err := emulator.New(c, m.Tokenizer, opts...)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("emulator: %w", err)
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); emu.Run(ectx, ln) }()
	s.closers = append(s.closers, func() {
		// In process there is nothing to drain for: abort what is left (Run would wait for it), then stop.
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		emu.Close(cctx)
		ccancel()
		cancel()
		<-done
	})
	s.emuURL = "http://" + ln.Addr().String()
	return s.emuURL, nil
}
