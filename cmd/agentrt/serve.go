package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/system"
)

const serveUsage = `usage: agentrt serve CONFIG [flags]

Runs the rollout service that trainers drive: HTTP on server.addr with
  /v1/stream  the WebSocket trajectory stream (docs/PROTOCOL.md)
  /healthz    200 while the process serves
  /readyz     200 when SGLang answers /health and the plugins are loaded
  /metrics    Prometheus metrics
  /view/      the trajectory viewer: the latest trajectories, token by token, live (docs/viewer.md);
              [viewer] enabled = false turns it off. With server.token set it asks for the same token
              (open /view/?token=TOKEN once); without one it answers on loopback addresses only
  /s/SESSION/v1/chat/completions, /s/SESSION/v1/responses, /s/SESSION/v1/messages, /s/SESSION/end
              with [frontdoor] enabled: the OpenAI/Anthropic-compatible front door; each session's
              trajectories go to frontdoor.consumer's stream (docs/frontdoor.md)
Trainers present server.token, or $AGENTRT_TOKEN when the config sets none (required beyond loopback).
Accepted requests and finished trajectories are kept in NATS JetStream ([bus]: embedded by default, under
server.spool_dir/bus) until a trainer acks them; a restart on the same store (even after kill -9) resumes
every request that had not ended. With bus.mode = "cluster" several serve processes share the store: any
of them runs samples and serves trainers (docs/scale-out.md). SIGINT/SIGTERM stop accepting work, let
running episodes finish for server.shutdown_grace, then hand the rest back to the store (they run again,
here on the next start or on another node); a second signal quits at once.

flags:
`

func runServe(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt serve", "serve", io, serveUsage)
	addr := fs.String("addr", "", "listen address (default: server.addr from CONFIG)")
	spoolDir := fs.String("spool-dir", "", "spool folder (default: server.spool_dir from CONFIG); each running serve needs its own")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole serve to FILE when it stops (go tool pprof)")
	var cfgPath string
	if code, ok := fs.parse(args, &cfgPath); !ok {
		return code
	}
	if cfgPath == "" {
		fs.Usage()
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fs.fail(exitUsage, "--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: level}))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	if *addr != "" {
		cfg.Server.Addr = *addr
	}
	if *spoolDir != "" {
		cfg.SetSpoolDir(*spoolDir)
	}
	if cfg.Server.Token == "" {
		// The trainer client reads the same variable; a launcher (agentrt_client.ray) passes the token here
		// rather than on the command line, where other users of the machine could read it.
		cfg.Server.Token = os.Getenv("AGENTRT_TOKEN")
	}

	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return fs.fail(exitUsage, "--cpuprofile: %v", err)
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := system.NewServer(ctx, cfg, filepath.Base(cfgPath), log, io.err)
	if err != nil {
		return fs.fail(exitStartup, "%s: %v", cfgPath, err)
	}
	defer srv.Close()
	log.Info("agentrt serve: ready", "stream", "ws://"+srv.Addr().String()+"/v1/stream", "agents", srv.Agents(),
		"inference", srv.Inference(), "spool", cfg.Server.SpoolDir)
	fmt.Fprintf(io.out, "agentrt serve: listening on http://%s (WebSocket ws://%s/v1/stream), inference on %s\n",
		srv.Addr(), srv.Addr(), srv.Inference())
	if p := srv.ViewerPath(); p != "" {
		fmt.Fprintf(io.out, "agentrt serve: trajectory viewer on http://%s%s\n", srv.Addr(), p)
	}
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process
	if err := srv.Serve(ctx); err != nil {
		return fs.fail(exitFailure, "%v", err)
	}
	return exitOK
}
