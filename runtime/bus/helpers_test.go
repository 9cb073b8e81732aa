package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// testConfig is an embedded bus in a fresh folder with short claims (so that redelivery, which the tests wait
// for as an event, comes soon).
func testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.AckWait = time.Second
	cfg.MaxDeliver = 2
	return cfg
}

func patienceCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience)
	t.Cleanup(cancel)
	return ctx
}

func openBus(t *testing.T, cfg Config) *Bus {
	t.Helper()
	b, err := Open(patienceCtx(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// peer is another connection to b's embedded server: a second node of a one-server bus. Closing it is that
// node's death (its claims lapse); the server goes on.
func peer(t *testing.T, b *Bus) *Bus {
	t.Helper()
	p, err := attach(patienceCtx(t), b.cfg, b.log, b.srv, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// request makes a request of consumer with items x n samples; trajectory ids are request/item/index.
func request(consumer, id string, items, n int) (Request, []Sample) {
	req := Request{Consumer: consumer, ID: id, Samples: items * n, Body: json.RawMessage(`{"agent":"a"}`)}
	var ss []Sample
	for i := range items {
		item := fmt.Sprintf("item%d", i)
		for k := range n {
			ss = append(ss, Sample{Consumer: consumer, Request: id, ItemID: item, Index: k, GroupID: id + "/" + item,
				TrajectoryID: fmt.Sprintf("%s/%s/%d", id, item, k), Samples: items * n, Body: json.RawMessage(`{"prompt":"p"}`)})
		}
	}
	return req, ss
}

func submit(t *testing.T, b *Bus, req Request, ss []Sample) Submitted {
	t.Helper()
	out, err := b.Submit(patienceCtx(t), req, ss)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// events records a node's events and lets a test wait for a count of one kind.
type events struct {
	mu   sync.Mutex
	all  []Event
	kick chan struct{}
}

func newEvents() *events { return &events{kick: make(chan struct{}, 1)} }

func (e *events) observe(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *events) count(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (e *events) of(kind string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func (e *events) waitFor(t *testing.T, kind string, n int) {
	t.Helper()
	testutil.Until(t, fmt.Sprintf("%d %q events (have %d)", n, kind, e.count(kind)), func() bool { return e.count(kind) >= n })
}

// serve runs a node on b until the test ends (or stop is called); done is closed when Serve returns.
func serve(t *testing.T, b *Bus, n Node) (stop func(), done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	d := make(chan struct{})
	go func() {
		defer close(d)
		if err := b.Serve(ctx, n); err != nil && err != ErrClosed {
			t.Errorf("serve: %v", err)
		}
	}()
	stop = func() { cancel(); testutil.Wait(t, "the node to stop", d) }
	t.Cleanup(stop)
	return stop, d
}

// echo is a runner that returns a trajectory naming the sample and its claim.
func echo(ctx context.Context, s Sample, delivery int) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"id": s.TrajectoryID, "delivery": delivery})
}

// blocking is a runner that holds every sample until release is closed (or its run is aborted).
func blocking(release <-chan struct{}) RunFunc {
	return func(ctx context.Context, s Sample, delivery int) (json.RawMessage, error) {
		select {
		case <-release:
			return echo(ctx, s, delivery)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// drain reads consumer's outbox until request is done, acking each message, and returns the results by
// trajectory id. It fails the test on a second result for one trajectory, or a result after the done marker.
func drain(t *testing.T, o *Outbox, request string, want int) map[string]Result {
	t.Helper()
	return drainRequests(t, o, map[string]int{request: want})[request]
}

// drainRequests is drain for several requests at once (their messages interleave): want maps each request to
// its number of samples.
func drainRequests(t *testing.T, o *Outbox, want map[string]int) map[string]map[string]Result {
	t.Helper()
	got := map[string]map[string]Result{}
	done := map[string]bool{}
	for len(done) < len(want) {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience)
		d, err := o.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("waiting for results (want %v, have %d requests done): %v\n%s", want, len(done), err, testutil.Goroutines())
		}
		if err := d.Ack(patienceCtx(t)); err != nil {
			t.Fatal(err)
		}
		n, ok := want[d.Request]
		if !ok || done[d.Request] {
			t.Fatalf("a message of request %q (done: %v) while draining %v", d.Request, done[d.Request], want)
		}
		if got[d.Request] == nil {
			got[d.Request] = map[string]Result{}
		}
		rs := got[d.Request]
		if d.Done {
			if len(rs) != n {
				t.Fatalf("request %s done after %d results, want %d", d.Request, len(rs), n)
			}
			done[d.Request] = true
			continue
		}
		if prev, dup := rs[d.TrajectoryID]; dup {
			t.Fatalf("trajectory %s delivered twice: by %s (claim %d) and %s (claim %d)", d.TrajectoryID, prev.Node, prev.Delivery, d.Node, d.Delivery)
		}
		rs[d.TrajectoryID] = d.Result
	}
	return got
}

// checkAll checks that results hold exactly the samples ss, each once.
func checkAll(t *testing.T, results map[string]Result, ss []Sample) {
	t.Helper()
	if len(results) != len(ss) {
		t.Errorf("%d results, want %d", len(results), len(ss))
	}
	for _, s := range ss {
		r, ok := results[s.TrajectoryID]
		if !ok {
			t.Errorf("no result for %s", s.TrajectoryID)
			continue
		}
		if r.ItemID != s.ItemID || r.Index != s.Index || r.GroupID != s.GroupID {
			t.Errorf("result %s: item %q index %d group %q, want %q %d %q", s.TrajectoryID, r.ItemID, r.Index, r.GroupID, s.ItemID, s.Index, s.GroupID)
		}
	}
}

// storedResults is the number of messages in the result stream under request's subjects (results and done).
func storedResults(t *testing.T, b *Bus, consumer, request string) int {
	t.Helper()
	si, err := b.results.Info(patienceCtx(t), withSubjects(consumer, request))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range si.State.Subjects {
		n += int(c)
	}
	return n
}
