package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentrt/agentrt/internal/testutil"
)

func withSubjects(consumer, request string) jetstream.StreamInfoOpt {
	return jetstream.WithSubjectFilter(requestSubjects(consumer, request) + ".>")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		with    func(*Config)
		wantKey string
		wantErr string
	}{
		{"default", func(*Config) {}, "", ""},
		{"bad mode", func(c *Config) { c.Mode = "mesh" }, "mode", `"mesh" is not a mode`},
		{"ack wait", func(c *Config) { c.AckWait = 0 }, "ack_wait", "must be > 0"},
		{"max deliver", func(c *Config) { c.MaxDeliver = 0 }, "max_deliver", "must be >= 1"},
		{"sync", func(c *Config) { c.SyncInterval = "sometimes" }, "sync_interval", `want "always" or a positive duration`},
		{"sync always", func(c *Config) { c.SyncInterval = SyncAlways }, "", ""},
		{"payload", func(c *Config) { c.MaxPayload = 64 << 20 }, "max_payload", "must be 1024 to"},
		{"embedded replicas", func(c *Config) { c.Replicas = 3 }, "replicas", "embedded mode keeps one copy"},
		{"embedded url", func(c *Config) { c.URL = "nats://x:4222" }, "url", "url is for mode"},
		{"embedded routes", func(c *Config) { c.Routes = []string{"nats-route://x:6222"} }, "routes", "are for mode"},
		{"cluster no name", func(c *Config) {
			c.Mode = ModeCluster
			c.Listen = "127.0.0.1:6222"
			c.Routes = []string{"nats-route://a:6222"}
		}, "name", "needs a server name"},
		{"cluster bad listen", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "6222"
			c.Routes = []string{"nats-route://a:6222"}
		}, "listen", "host:port"},
		{"cluster bad route", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "127.0.0.1:6222"
			c.Routes = []string{"nats://a:6222"}
		}, "routes", "want nats-route://host:port"},
		{"cluster ok", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "127.0.0.1:6222"
			c.Routes = []string{"nats-route://a:6222", "nats-route://b:6222"}
		}, "", ""},
		{"cluster kernel-chosen port", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "127.0.0.1:0"
			c.Routes = []string{"nats-route://a:6222"}
		}, "", ""},
		{"cluster port not a number", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "127.0.0.1:route"
			c.Routes = []string{"nats-route://a:6222"}
		}, "listen", "port must be a number from 0"},
		{"cluster port too big", func(c *Config) {
			c.Mode = ModeCluster
			c.Name = "n1"
			c.Listen = "127.0.0.1:65536"
			c.Routes = []string{"nats-route://a:6222"}
		}, "listen", "port must be a number from 0"},
		{"external no url", func(c *Config) { c.Mode = ModeExternal }, "url", "needs url"},
		{"external bad url", func(c *Config) { c.Mode = ModeExternal; c.URL = "http://x" }, "url", "want nats://host:port"},
		{"external ok", func(c *Config) { c.Mode = ModeExternal; c.URL = "nats://a:4222, nats://b:4222"; c.Replicas = 3 }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.with(&c)
			key, err := c.Validate()
			if key != tt.wantKey || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %q, %v; want key %q, error containing %q", key, err, tt.wantKey, tt.wantErr)
			}
		})
	}
}

// TestSubmitIsIdempotent: a repeated submit, and a fan-out published again, store no second work item; a
// submit that finds its fan-out unfinished (the process died between the record and the work items) finishes it.
func TestSubmitIsIdempotent(t *testing.T) {
	b := openBus(t, testConfig(t))
	ctx := patienceCtx(t)
	req, ss := request("trainer", "r1", 2, 3)
	if out := submit(t, b, req, ss); out.Duplicate || out.Stored != 6 {
		t.Fatalf("first submit: %+v, want 6 stored", out)
	}
	if out := submit(t, b, req, ss); !out.Duplicate || out.Stored != 0 {
		t.Fatalf("second submit: %+v, want a duplicate that stores nothing", out)
	}
	e, err := b.requests.Get(ctx, requestKey("trainer", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.fanOut(ctx, e.Revision()-1, ss, true); err != nil || n != 0 {
		t.Fatalf("fan-out published again: %d stored, %v; want 0 (Nats-Msg-Id dedup)", n, err)
	}
	ws, err := b.js.Stream(ctx, WorkStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ws.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 6 {
		t.Fatalf("work stream holds %d items, want 6", info.State.Msgs)
	}
	got, found, err := b.Request(ctx, "trainer", "r1")
	if err != nil || !found || !got.FannedOut || got.Samples != 6 || string(got.Body) != `{"agent":"a"}` {
		t.Fatalf("request record: %+v found=%v err=%v", got, found, err)
	}

	// A crash after the record and two work items: the repeated submit stores the other four.
	req2, ss2 := request("trainer", "r2", 1, 6)
	val, _ := json.Marshal(req2)
	rev, err := b.requests.Create(ctx, requestKey("trainer", "r2"), val)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.fanOut(ctx, rev, ss2[:2], false); err != nil || n != 2 {
		t.Fatalf("partial fan-out: %d, %v", n, err)
	}
	if out := submit(t, b, req2, ss2); !out.Duplicate || out.Stored != 4 {
		t.Fatalf("submit after a partial fan-out: %+v, want a duplicate that stores the 4 missing items", out)
	}
	if info, err = ws.Info(ctx); err != nil || info.State.Msgs != 12 {
		t.Fatalf("work stream holds %d items (%v), want 12", info.State.Msgs, err)
	}

	// Every sample runs once; the requests close.
	ev := newEvents()
	serve(t, b, Node{Slots: 4, Run: echo, Observe: ev.observe})
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	results := drainRequests(t, o, map[string]int{"r1": 6, "r2": 6})
	checkAll(t, results["r1"], ss)
	checkAll(t, results["r2"], ss2)
	if n := ev.count(EventClaimed); n != 12 {
		t.Errorf("%d runs, want 12", n)
	}

	if _, err := b.Submit(ctx, req, ss[:2]); err == nil || !strings.Contains(err.Error(), "6 samples, 2 given") {
		t.Errorf("a submit with missing samples: %v", err)
	}
}

// TestPullIsBackPressure: a node claims no more samples than it has slots; the rest wait in the stream.
func TestPullIsBackPressure(t *testing.T) {
	b := openBus(t, testConfig(t))
	ctx := patienceCtx(t)
	req, ss := request("trainer", "r", 1, 5)
	submit(t, b, req, ss)
	release := make(chan struct{})
	ev := newEvents()
	serve(t, b, Node{Slots: 2, Run: blocking(release), Observe: ev.observe})
	ev.waitFor(t, EventClaimed, 2)
	ci, err := b.work.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumAckPending != 2 || ci.NumPending != 3 {
		t.Fatalf("with 2 slots busy: %d claimed, %d waiting; want 2 and 3", ci.NumAckPending, ci.NumPending)
	}
	if n := ev.count(EventClaimed); n != 2 {
		t.Fatalf("%d runs started with 2 slots", n)
	}
	close(release)
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, drain(t, o, "r", 5), ss)
}

// TestInProgressKeepsTheClaim: a run that lasts many claim periods keeps its sample (heartbeats), though another
// node is asking for work all along.
func TestInProgressKeepsTheClaim(t *testing.T) {
	b := openBus(t, testConfig(t))
	req, ss := request("trainer", "r", 1, 1)
	submit(t, b, req, ss)
	release := make(chan struct{})
	evA := newEvents()
	serve(t, b, Node{Slots: 1, Run: blocking(release), Observe: evA.observe})
	evA.waitFor(t, EventClaimed, 1)
	evB := newEvents()
	serve(t, peer(t, b), Node{Slots: 1, Run: echo, Observe: evB.observe})
	// 12 heartbeats every ack_wait/4: three claim periods.
	evA.waitFor(t, EventHeartbeat, 12)
	close(release)
	o, err := b.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 1)
	if r := got[ss[0].TrajectoryID]; r.Delivery != 1 {
		t.Errorf("result from claim %d, want 1 (the claim was kept)", r.Delivery)
	}
	if n := evB.count(EventClaimed); n != 0 {
		t.Errorf("the other node ran the sample %d times while its claim was held", n)
	}
}

// TestNodeDeathRedelivers: a node dies holding samples; another node runs them from the start under the same
// trajectory ids, and each reaches the trainer once.
func TestNodeDeathRedelivers(t *testing.T) {
	b := openBus(t, testConfig(t))
	req, ss := request("trainer", "r", 2, 2)
	submit(t, b, req, ss)
	victim := peer(t, b)
	evV := newEvents()
	serve(t, victim, Node{Slots: 4, Run: blocking(make(chan struct{})), Observe: evV.observe})
	evV.waitFor(t, EventClaimed, 4)
	victim.Close() // its connection is gone: no heartbeat, no ack
	evS := newEvents()
	serve(t, b, Node{Slots: 4, Run: echo, Observe: evS.observe})
	o, err := b.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 4)
	checkAll(t, got, ss)
	for id, r := range got {
		if r.Delivery != 2 || r.Status != StatusFinished {
			t.Errorf("%s: %s on claim %d, want finished on claim 2", id, r.Status, r.Delivery)
		}
	}
	evV.waitFor(t, EventFenced, 4) // the dead node's runs were aborted, not finished
	if n := evV.count(EventStored) + evV.count(EventDuplicate); n != 0 {
		t.Errorf("the dead node stored %d results", n)
	}
}

// TestClaimsRunOutIntoAFailedResult: a sample whose nodes keep dying becomes a failed result (reason node_lost)
// after max_deliver claims, so its group and request close.
func TestClaimsRunOutIntoAFailedResult(t *testing.T) {
	cfg := testConfig(t) // max_deliver 2
	b := openBus(t, cfg)
	req, ss := request("trainer", "r", 1, 2)
	submit(t, b, req, ss)
	for i := range cfg.MaxDeliver {
		victim := peer(t, b)
		ev := newEvents()
		serve(t, victim, Node{Slots: 2, Run: blocking(make(chan struct{})), Observe: ev.observe})
		ev.waitFor(t, EventClaimed, 2)
		for _, e := range ev.of(EventClaimed) {
			if e.Delivery != i+1 {
				t.Fatalf("death %d: claim %d of %s", i+1, e.Delivery, e.Sample.TrajectoryID)
			}
		}
		victim.Close()
	}
	ev := newEvents()
	serve(t, b, Node{Slots: 2, Run: echo, Observe: ev.observe,
		Failed: func(s Sample, reason, msg string) json.RawMessage {
			b, _ := json.Marshal(map[string]string{"id": s.TrajectoryID, "status": "failed", "status_reason": reason, "error": msg})
			return b
		}})
	o, err := b.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 2)
	checkAll(t, got, ss)
	for id, r := range got {
		if r.Status != StatusFailed || r.Reason != ReasonNodeLost || r.Delivery != cfg.MaxDeliver+1 || !strings.Contains(r.Error, "claimed 2 times") {
			t.Errorf("%s: %+v, want failed (node_lost) on claim %d", id, r, cfg.MaxDeliver+1)
		}
		var traj map[string]string
		if err := json.Unmarshal(r.Trajectory, &traj); err != nil || traj["status"] != "failed" || traj["id"] != id {
			t.Errorf("%s: failed trajectory %s (%v)", id, r.Trajectory, err)
		}
	}
	if n := ev.count(EventClaimed); n != 0 {
		t.Errorf("a sample past max_deliver ran %d times", n)
	}
}

// TestLateFinisherIsDropped: a node that stalls (its claim lapses without it knowing) and finishes after another
// node ran the sample again stores nothing: one trajectory per sample reaches the trainer.
func TestLateFinisherIsDropped(t *testing.T) {
	b := openBus(t, testConfig(t))
	req, ss := request("trainer", "r", 1, 1)
	submit(t, b, req, ss)
	release := make(chan struct{})
	evA := newEvents()
	serve(t, peer(t, b), Node{Slots: 1, Run: blocking(release), Observe: evA.observe, noHeartbeat: true})
	evA.waitFor(t, EventClaimed, 1)
	evB := newEvents()
	serve(t, b, Node{Slots: 1, Run: echo, Observe: evB.observe})
	evB.waitFor(t, EventStored, 1)
	close(release) // the stalled node finishes late
	evA.waitFor(t, EventDuplicate, 1)
	if n := evA.count(EventStored); n != 0 {
		t.Fatalf("the late node stored %d results", n)
	}
	o, err := b.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 1)
	if r := got[ss[0].TrajectoryID]; r.Delivery != 2 {
		t.Errorf("the result came from claim %d, want 2", r.Delivery)
	}
	if n := storedResults(t, b, "trainer", "r"); n != 2 {
		t.Errorf("%d messages stored for the request, want 2 (one result, one done marker)", n)
	}
}

// TestRunnerErrorFails: a sample the runner refuses becomes a failed result (reason runner_error) at once.
func TestRunnerErrorFails(t *testing.T) {
	b := openBus(t, testConfig(t))
	req, ss := request("trainer", "r", 1, 2)
	submit(t, b, req, ss)
	serve(t, b, Node{Slots: 2, Run: func(ctx context.Context, s Sample, delivery int) (json.RawMessage, error) {
		if s.Index == 1 {
			return nil, errors.New("unknown agent \"x\"")
		}
		return echo(ctx, s, delivery)
	}})
	o, err := b.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 2)
	if r := got["r/item0/1"]; r.Status != StatusFailed || r.Reason != ReasonRunner || r.Error != `unknown agent "x"` || r.Delivery != 1 {
		t.Errorf("refused sample: %+v", r)
	}
	if r := got["r/item0/0"]; r.Status != StatusFinished {
		t.Errorf("other sample: %+v", r)
	}
}

// TestForgetAndRestart: the store survives a restart of the embedded server on the same folder, and Forget
// removes an ended request so its id can be used again.
func TestForgetAndRestart(t *testing.T) {
	cfg := testConfig(t)
	b, err := Open(patienceCtx(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, ss := request("trainer", "r", 1, 3)
	submit(t, b, req, ss)
	b.Close()

	b = openBus(t, cfg)
	if out := submit(t, b, req, ss); !out.Duplicate || out.Stored != 0 {
		t.Fatalf("submit after a restart: %+v, want a duplicate", out)
	}
	serve(t, b, Node{Slots: 3, Run: echo})
	ctx := patienceCtx(t)
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, drain(t, o, "r", 3), ss)
	if err := b.Forget(ctx, "trainer", "r"); err != nil {
		t.Fatal(err)
	}
	if _, found, err := b.Request(ctx, "trainer", "r"); err != nil || found {
		t.Fatalf("request record after Forget: found=%v err=%v", found, err)
	}
	if n := storedResults(t, b, "trainer", "r"); n != 0 {
		t.Fatalf("%d messages left after Forget", n)
	}
	if out := submit(t, b, req, ss); out.Duplicate || out.Stored != 3 {
		t.Fatalf("submit after Forget: %+v, want a new request", out)
	}
	checkAll(t, drain(t, o, "r", 3), ss)
}

// TestStoredButNotCountedCloses: a node that stored a result and died before it counted it or acked the work
// item: the next claim finds the result, counts it and acks the item without running it, and the request closes.
func TestStoredButNotCountedCloses(t *testing.T) {
	b := openBus(t, testConfig(t))
	ctx := patienceCtx(t)
	req, ss := request("trainer", "r", 1, 2)
	submit(t, b, req, ss)
	// The result of sample 0 as the dead node stored it: in the stream, not counted.
	m := nats.NewMsg(resultSubject("trainer", "r", ss[0].TrajectoryID))
	m.Data = []byte(`{"by":"the dead node"}`)
	m.Header.Set(hdrTrajectory, ss[0].TrajectoryID)
	m.Header.Set(hdrStatus, StatusFinished)
	if _, err := b.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	serve(t, b, Node{Slots: 2, Run: echo, Observe: ev.observe})
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 2)
	if r := got[ss[0].TrajectoryID]; string(r.Trajectory) != `{"by":"the dead node"}` {
		t.Errorf("sample 0: %s, want the stored result", r.Trajectory)
	}
	if claimed := ev.of(EventClaimed); len(claimed) != 1 || claimed[0].Sample.TrajectoryID != ss[1].TrajectoryID {
		t.Errorf("runs: %+v, want sample 1 only", claimed)
	}
}

// TestForgottenRequestTakesNoLateResult: a node that stalled through a whole request, which the trainer then
// finished and forgot, stores nothing when it finally ends.
func TestForgottenRequestTakesNoLateResult(t *testing.T) {
	b := openBus(t, testConfig(t))
	ctx := patienceCtx(t)
	req, ss := request("trainer", "r", 1, 1)
	submit(t, b, req, ss)
	release := make(chan struct{})
	evA := newEvents()
	serve(t, peer(t, b), Node{Slots: 1, Run: blocking(release), Observe: evA.observe, noHeartbeat: true})
	evA.waitFor(t, EventClaimed, 1)
	serve(t, b, Node{Slots: 1, Run: echo})
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	drain(t, o, "r", 1)
	if err := b.Forget(ctx, "trainer", "r"); err != nil {
		t.Fatal(err)
	}
	close(release)
	evA.waitFor(t, EventDropped, 1)
	if n := storedResults(t, b, "trainer", "r"); n != 0 {
		t.Errorf("%d messages stored for the forgotten request", n)
	}
}

// TestCancelReachesEveryNode: a cancel stored on the bus ends the runs of the request's samples on every node
// (each returns its aborted trajectory, which is stored), and the samples not claimed yet become failed results
// with reason cancelled, so the request still closes with one result per sample.
func TestCancelReachesEveryNode(t *testing.T) {
	ctx := patienceCtx(t)
	b := openBus(t, testConfig(t))
	req, ss := request("trainer", "r", 1, 6)
	submit(t, b, req, ss)
	if found, err := b.Cancel(ctx, "trainer", "nope"); found || err != nil {
		t.Fatalf("cancel of an unknown request: found %v, %v", found, err)
	}
	untilCancelled := func(ctx context.Context, s Sample, delivery int) (json.RawMessage, error) {
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), errCancelled) {
			return json.RawMessage(`{"status":"aborted"}`), nil
		}
		return nil, context.Cause(ctx)
	}
	evA, evB := newEvents(), newEvents()
	serve(t, b, Node{Slots: 2, Run: untilCancelled, Observe: evA.observe})
	serve(t, peer(t, b), Node{Slots: 2, Run: untilCancelled, Observe: evB.observe})
	evA.waitFor(t, EventClaimed, 2)
	evB.waitFor(t, EventClaimed, 2)
	if active, done, _, err := b.Requests(ctx, "trainer"); err != nil || len(active) != 1 || active[0] != "r" || len(done) != 0 {
		t.Fatalf("requests before the cancel: active %v, done %v, %v", active, done, err)
	}
	if found, err := b.Cancel(ctx, "trainer", "r"); !found || err != nil {
		t.Fatalf("cancel: found %v, %v", found, err)
	}
	o, err := b.Outbox(ctx, "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 6)
	aborted, cancelled := 0, 0
	for id, r := range got {
		switch {
		case r.Status == StatusFinished && string(r.Trajectory) == `{"status":"aborted"}`:
			aborted++
		case r.Status == StatusFailed && r.Reason == ReasonCancelled:
			cancelled++
		default:
			t.Errorf("%s: %s %s %q", id, r.Status, r.Reason, r.Trajectory)
		}
	}
	if aborted != 4 || cancelled != 2 {
		t.Errorf("%d aborted runs and %d samples failed as cancelled; want the 4 running and the 2 waiting", aborted, cancelled)
	}
	if n := evA.count(EventStored) + evB.count(EventStored); n != 4 {
		t.Errorf("%d runs stored their trajectory, want 4 (both nodes' runs saw the cancel)", n)
	}
	if found, err := b.Cancel(ctx, "trainer", "r"); found || err != nil {
		t.Fatalf("cancel of a done request: found %v, %v", found, err)
	}
	if active, done, _, err := b.Requests(ctx, "trainer"); err != nil || len(active) != 0 || len(done) != 1 {
		t.Fatalf("requests once done: active %v, done %v, %v", active, done, err)
	}
}

// TestBacklog: the backlog counts every trainer's messages not acked yet (results and done markers, waiting or
// offered), and drops as they are acked.
func TestBacklog(t *testing.T) {
	b := openBus(t, testConfig(t))
	ctx := patienceCtx(t)
	for _, consumer := range []string{"t1", "t2"} {
		if _, err := b.Outbox(ctx, consumer); err != nil {
			t.Fatal(err)
		}
	}
	r1, s1 := request("t1", "r", 1, 3)
	r2, s2 := request("t2", "r", 1, 2)
	submit(t, b, r1, s1)
	submit(t, b, r2, s2)
	serve(t, b, Node{Slots: 2, Run: echo})
	backlog := func() int {
		n, err := b.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	testutil.Until(t, "a backlog of 7 (3+2 results, 2 done markers)", func() bool { return backlog() == 7 })
	o, err := b.Outbox(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, drain(t, o, "r", 3), s1)
	testutil.Until(t, "a backlog of 3 once t1 acked its 4 messages", func() bool { return backlog() == 3 })
}
