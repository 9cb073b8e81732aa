package main

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
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// This file builds and wires every component of a runtime.toml: model folders, the SGLang client (or the
// in-process emulator), the plugin host and its modules, and the agents. It holds no rollout logic.

var (
	_ runtime.Generator = (*sglang.Client)(nil)
	_ runtime.Tokenizer = (*tito.Tokenizer)(nil)
	_ runtime.Template  = (*tito.ChatTemplate)(nil)
)

func loadConfig(path string) (*runtime.Config, error) { return config.Load(path) }

// system is everything a config builds. Close releases it in reverse order.
type system struct {
	cfg     *runtime.Config
	log     *slog.Logger
	client  *sglang.Client
	host    *plugin.Host
	emuURL  string
	models  map[string]*tito.Model
	agents  map[string]*runtime.Agent
	gate    *runtime.Gate
	closers []func()
}

func (s *system) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// Agent returns the agent named name (or the only one).
func (s *system) Agent(name string) (*runtime.Agent, error) {
	ac, err := s.cfg.Agent(name)
	if err != nil {
		return nil, err
	}
	return s.agents[ac.Name], nil
}

// buildSystem builds everything cfg describes; pluginCall, if not nil, receives plugin call durations.
func buildSystem(ctx context.Context, cfg *runtime.Config, logw io.Writer, pluginCall func(kind, plugin string, d time.Duration)) (_ *system, err error) {
	s := &system{cfg: cfg, models: map[string]*tito.Model{}, agents: map[string]*runtime.Agent{}, gate: &runtime.Gate{},
		log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, ac := range cfg.Agents {
		if s.models[ac.Model] != nil {
			continue
		}
		m, err := tito.LoadModel(ac.Model)
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
		s.models[ac.Model] = m
		s.closers = append(s.closers, m.Close)
	}
	scfg := cfg.SGLang
	if cfg.UsesEmulator() {
		url, err := s.startEmulator(ctx, s.models[cfg.Agents[0].Model])
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
		a, err := runtime.BuildAgent(ctx, ac, runtime.BuildEnv{Host: s.host, Generator: s.client, Model: s.models[ac.Model],
			MaxModelLen: func(ctx context.Context) (int, error) { return s.client.MaxModelLen(ctx, "") },
			Server:      server, Logger: s.log, Gate: s.gate, PluginCall: pluginCall})
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
		s.agents[ac.Name] = a
		s.closers = append(s.closers, func() { a.Close(context.Background()) })
	}
	return s, nil
}

// startEmulator serves the built-in SGLang emulator on a loopback port, with the first agent's tokenizer.
func (s *system) startEmulator(ctx context.Context, m *tito.Model) (string, error) {
	ec := s.cfg.Emulator
	c := ec.Config
	c.VocabSize = m.Tokenizer.VocabSize()
	c.StopIDs = m.StopIDs
	c.ModelPath = m.Dir
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
