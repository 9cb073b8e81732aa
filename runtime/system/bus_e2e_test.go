package system_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/bus"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// TestServiceOverBus: rollout requests go through the embedded bus (docs/scale-out.md) to two nodes, each a rollout
// service: every sample's trajectory arrives once, with the ids Service.Run gives
// it and the invariants checked, and a request whose agent no node has closes with failed results.
func TestServiceOverBus(t *testing.T) {
	cfg := bus.DefaultConfig()
	cfg.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience)
	defer cancel()
	b, err := bus.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// Two nodes: two rollout services (each its own fair slots) over one agent and emulator, whose log checks
	// every trajectory.
	svc, h, gate := newService(t, emulator.DefaultConfig())
	svc2, err := rollout.NewService(map[string]*runtime.Agent{"calc": h.agent}, 8, gate, h.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, s := range []*rollout.Service{svc, svc2} {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := b.Serve(nodeCtx, bus.Node{Slots: 4, Run: s.RunSample}); err != nil {
				t.Errorf("serve: %v", err)
			}
		}()
	}
	defer func() {
		stop()
		for range 2 {
			testutil.Recv(t, "a node to stop", done)
		}
	}()

	good := request("r1", 3, "What is 2*21?", "Compute 3+4 and 5*6.")
	bad := request("r2", 2, "x")
	bad.Agent = "nope"
	for _, sr := range []stream.RolloutRequest{good, bad} {
		r, ss, err := rollout.BusSamples(sr)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := b.Submit(ctx, r, ss); err != nil || out.Stored != len(ss) {
			t.Fatalf("submit %s: %+v, %v", sr.ID, out, err)
		}
	}

	o, err := b.Outbox(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string]bus.Delivered{"r1": {}, "r2": {}}
	closed := map[string]bool{}
	for len(closed) < 2 {
		d, err := o.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for results (have %d and %d): %v", len(results["r1"]), len(results["r2"]), err)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if d.Done {
			closed[d.Request] = true
			continue
		}
		if _, dup := results[d.Request][d.TrajectoryID]; dup {
			t.Fatalf("%s delivered twice", d.TrajectoryID)
		}
		results[d.Request][d.TrajectoryID] = d
	}
	if len(results["r1"]) != 6 || len(results["r2"]) != 2 {
		t.Fatalf("%d and %d results, want 6 and 2", len(results["r1"]), len(results["r2"]))
	}
	for id, d := range results["r1"] {
		var tr tito.Trajectory
		if err := json.Unmarshal(d.Trajectory, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.ID != id || tr.GroupID != d.GroupID || tr.ID != tr.GroupID+"/"+string(rune('0'+tr.SampleIndex)) {
			t.Errorf("ids: trajectory %q (result %q), group %q (result %q)", tr.ID, id, tr.GroupID, d.GroupID)
		}
		h.check(t, &tr)
		wantStatus(t, &tr, runtime.StatusCompleted, "")
	}
	for id, d := range results["r2"] {
		if d.Status != bus.StatusFailed || d.Reason != bus.ReasonRunner || !strings.Contains(d.Error, `unknown agent "nope"`) {
			t.Errorf("%s: %s %s %q, want failed runner_error naming the agent", id, d.Status, d.Reason, d.Error)
		}
	}
}
