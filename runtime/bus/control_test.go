package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentrt/agentrt/internal/testutil"
)

// fakeControl is a node's Controller that records what it applied (and the runs it started, in one log, so a
// test can see the order); block, if set, holds Pause until its context ends (a wedged node); fail, if set,
// fails every control.
type fakeControl struct {
	mu      sync.Mutex
	log     []string
	paused  bool
	version string
	block   chan struct{} // closed when a blocked Pause is entered
	fail    error
}

func (f *fakeControl) add(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

func (f *fakeControl) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

func (f *fakeControl) state() (paused bool, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused, f.version
}

func (f *fakeControl) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail
}

func (f *fakeControl) Pause(ctx context.Context, mode string) error {
	if f.block != nil {
		close(f.block)
		<-ctx.Done()
		return ctx.Err()
	}
	if err := f.failure(); err != nil {
		return err
	}
	f.add("pause " + mode)
	f.mu.Lock()
	f.paused = true
	f.mu.Unlock()
	return nil
}

func (f *fakeControl) Resume(ctx context.Context) error {
	if err := f.failure(); err != nil {
		return err
	}
	f.add("resume")
	f.mu.Lock()
	f.paused = false
	f.mu.Unlock()
	return nil
}

func (f *fakeControl) UpdateWeights(ctx context.Context, w Weights) error {
	if err := f.failure(); err != nil {
		return err
	}
	f.add("update_weights " + w.WeightVersion + " " + w.ModelPath + " " + string(w.Options))
	f.mu.Lock()
	f.version = w.WeightVersion
	f.mu.Unlock()
	return nil
}

// run is a runner that logs the run in f before echoing.
func (f *fakeControl) run(ctx context.Context, s Sample, delivery int) (json.RawMessage, error) {
	f.add("run " + s.TrajectoryID)
	return echo(ctx, s, delivery)
}

// waitNodes waits until n nodes' presence records are stored (the nodes a control then waits for).
func waitNodes(t *testing.T, b *Bus, n int) {
	t.Helper()
	testutil.Until(t, fmt.Sprintf("%d nodes' presence records", n), func() bool {
		keys, err := b.nodes.ListKeys(patienceCtx(t))
		if err != nil {
			return false
		}
		k := 0
		for range keys.Keys() {
			k++
		}
		return k == n
	})
}

func control(t *testing.T, b *Bus, c Control) {
	t.Helper()
	if err := b.Control(patienceCtx(t), c); err != nil {
		t.Fatalf("control %s on %s: %v", c.Op, b.NodeName(), err)
	}
}

// TestControlReachesEveryNode: a trainer's pause, update_weights and resume sent on any node of a 3-server
// cluster are acknowledged once every node has applied them (checked at once on every node's controller when
// Control returns), and a node that starts again while the cluster is paused starts paused, with the last
// weights, before it runs anything.
func TestControlReachesEveryNode(t *testing.T) {
	nodes := cluster(t)
	ctls := make([]*fakeControl, 3)
	stops := make([]func(), 3)
	evs := make([]*events, 3)
	for i, b := range nodes {
		ctls[i], evs[i] = &fakeControl{}, newEvents()
		stops[i], _ = serve(t, b, Node{Slots: 2, Run: ctls[i].run, Control: ctls[i], Observe: evs[i].observe})
	}
	waitNodes(t, nodes[0], 3)

	control(t, nodes[1], Control{Op: OpPause, Mode: "abort"})
	for i, c := range ctls {
		if p, _ := c.state(); !p {
			t.Fatalf("pause acknowledged but node %d is not paused: %v", i, c.calls())
		}
	}
	opts := json.RawMessage(`{"load_format":"auto"}`)
	control(t, nodes[2], Control{Op: OpUpdateWeights, Weights: &Weights{ModelPath: "/ckpt/2", WeightVersion: "v2", Options: opts}})
	for i, c := range ctls {
		if p, v := c.state(); !p || v != "v2" {
			t.Fatalf("update_weights acknowledged but node %d has paused=%v version %q: %v", i, p, v, c.calls())
		}
	}
	want := []string{"pause abort", `update_weights v2 /ckpt/2 {"load_format":"auto"}`}
	for i, c := range ctls {
		if got := c.calls(); !slices.Equal(got, want) {
			t.Errorf("node %d applied %q, want %q", i, got, want)
		}
	}

	// Node 0 stops and starts again (a new process: a fresh controller) while the cluster is paused.
	stops[0]()
	testutil.Until(t, "the stopped node's presence to be removed", func() bool {
		_, err := nodes[1].nodes.Get(patienceCtx(t), token(nodes[0].NodeName()))
		return err != nil
	})
	req, ss := request("trainer", "r", 1, 2)
	submit(t, nodes[1], req, ss)
	re := &fakeControl{}
	ev0 := newEvents()
	serve(t, nodes[0], Node{Slots: 2, Run: re.run, Control: re, Observe: ev0.observe})
	// Nodes 1 and 2 may run the samples too; the check is on node 0's own log (controls and runs in order).
	testutil.Until(t, "the restarted node to apply the cluster's state", func() bool { return len(re.calls()) >= 2 })
	if got := re.calls()[:2]; !slices.Equal(got, want) {
		t.Fatalf("the restarted node applied %q first, want %q (paused, the last weights)", got, want)
	}
	if p, v := re.state(); !p || v != "v2" {
		t.Fatalf("the restarted node: paused=%v version %q", p, v)
	}

	control(t, nodes[0], Control{Op: OpResume})
	for i, c := range append(ctls[1:], re) {
		if p, _ := c.state(); p {
			t.Fatalf("resume acknowledged but node %d is still paused: %v", i+1, c.calls())
		}
	}
	o, err := nodes[2].Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, drain(t, o, "r", 2), ss)
}

// TestControlSkipsADeadNode: a node that dies while a pause waits on it (its controller never returns) holds
// the pause back only until its presence lapses (ack_wait); the live nodes are paused when it is acknowledged.
// A node whose controller fails makes the control fail, naming the node and the reason.
func TestControlSkipsADeadNode(t *testing.T) {
	nodes := cluster(t)
	ctls := []*fakeControl{{}, {}, {block: make(chan struct{})}}
	for i, b := range nodes {
		serve(t, b, Node{Slots: 1, Run: ctls[i].run, Control: ctls[i]})
	}
	waitNodes(t, nodes[0], 3)
	var killed atomic.Bool
	go func() {
		<-ctls[2].block // node 2 took the pause and hangs in it: it dies there
		killed.Store(true)
		nodes[2].Close()
	}()
	control(t, nodes[0], Control{Op: OpPause, Mode: "retract"})
	if !killed.Load() {
		t.Fatal("the pause was acknowledged while node 2, live, had not applied it")
	}
	for i, c := range ctls[:2] {
		if p, _ := c.state(); !p {
			t.Fatalf("pause acknowledged but node %d is not paused: %v", i, c.calls())
		}
	}

	ctls[1].mu.Lock()
	ctls[1].fail = errors.New("sglang said no")
	ctls[1].mu.Unlock()
	err := nodes[0].Control(patienceCtx(t), Control{Op: OpResume})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s: resume: sglang said no", nodes[1].NodeName())) {
		t.Fatalf("resume with a failing node: %v", err)
	}
	if p, _ := ctls[0].state(); p {
		t.Fatalf("node 0 did not resume: %v", ctls[0].calls())
	}
}

// TestEmbeddedRestartForgetsDeadPresence: an embedded process is the only node, so at start it drops the
// presence records of a killed predecessor (whose server name may differ): they would hold its first controls
// back for ack_wait. A control then needs this process's node only.
func TestEmbeddedRestartForgetsDeadPresence(t *testing.T) {
	cfg := testConfig(t)
	cfg.AckWait = time.Hour // a record left behind would hold the pause for an hour: the test's patience ends first
	b := openBus(t, cfg)
	if _, err := b.nodes.Put(patienceCtx(t), token("killed-node"), []byte(`{"node":"killed-node","applied":0}`)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = openBus(t, cfg)
	if _, err := b.nodes.Get(patienceCtx(t), token("killed-node")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the killed node's presence after a restart: %v", err)
	}
	ctl := &fakeControl{}
	serve(t, b, Node{Slots: 1, Run: ctl.run, Control: ctl})
	waitNodes(t, b, 1)
	control(t, b, Control{Op: OpPause, Mode: "in_place"})
	if p, _ := ctl.state(); !p {
		t.Fatalf("not paused: %v", ctl.calls())
	}
}
