package sglang

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/slots"
	"github.com/agentrt/agentrt/internal/testutil"
)

// adapt: additive increase only while the worker has room and the limit is used, multiplicative decrease on
// retractions, within [min, max_in_flight_per_worker].
func TestAdapt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers = []string{"http://127.0.0.1:1"}
	cfg.MaxInFlightPerWorker = 30
	cfg.Adaptive = AdaptiveConfig{Enabled: true, Initial: 8, Min: 3, Interval: 1 << 62}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.workers[0]
	if got := w.lim.Limit(); got != 8 {
		t.Fatalf("initial limit %d", got)
	}
	steps := []struct {
		name     string
		inFlight int64
		queued   int64
		load     Load
		want     int
	}{
		{"idle client: no growth", 0, 0, Load{TokenUsage: 0.1}, 8},
		{"limit used, room: +4", 8, 0, Load{TokenUsage: 0.5}, 12},
		{"requests waiting for a slot, room: +4", 5, 3, Load{TokenUsage: 0.5}, 16},
		{"KV at the target: hold", 16, 4, Load{TokenUsage: 0.95}, 16},
		{"server queue not empty: hold", 16, 4, Load{TokenUsage: 0.5, Waiting: 2}, 16},
		{"retractions: halve", 16, 4, Load{TokenUsage: 1, Retracted: 1}, 8},
		{"retractions: halve to the floor", 8, 4, Load{Retracted: 3}, 4},
		{"floor", 4, 4, Load{Retracted: 3}, 3},
		{"growth", 3, 4, Load{}, 7},
		{"growth", 7, 4, Load{}, 11},
		{"growth", 11, 4, Load{}, 15},
		{"growth", 15, 4, Load{}, 19},
		{"growth", 19, 4, Load{}, 23},
		{"growth", 23, 4, Load{}, 27},
		{"ceiling", 27, 4, Load{}, 30},
		{"ceiling", 30, 4, Load{}, 30},
	}
	for _, s := range steps {
		w.inFlight.Store(s.inFlight)
		w.queued.Store(s.queued)
		if got := c.adapt(w, s.load); got != s.want || w.lim.Limit() != s.want {
			t.Fatalf("%s: limit %d (limiter %d), want %d", s.name, got, w.lim.Limit(), s.want)
		}
	}
	if got := c.Stats().Workers[0].Limit; got != 30 {
		t.Errorf("Stats limit %d", got)
	}
}

// Loads reads SGLang's /v1/loads (summing DP ranks); a worker without it is an HTTPError; the adaptive mode
// refuses a gateway.
func TestLoads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/loads" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.URL.Query().Get("include") != "core,queues" {
			t.Errorf("include = %q", r.URL.Query().Get("include"))
		}
		w.Write([]byte(`{"timestamp":"2026-11-25T00:00:00+00:00","version":"0.5.23","accelerator":null,"num_accelerators":1,"loads":[
			{"dp_rank":0,"num_running_reqs":3,"num_waiting_reqs":1,"num_waiting_uncached_tokens":900,"num_used_tokens":5000,"token_usage":0.5,"queues":{"waiting":1,"grammar":0,"paused":0,"retracted":2,"prealloc_ready":0}},
			{"dp_rank":1,"num_running_reqs":4,"num_waiting_reqs":0,"num_waiting_uncached_tokens":0,"num_used_tokens":7500,"token_usage":0.75}]}`))
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Workers = []string{srv.URL}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Loads(context.Background(), srv.URL)
	if err != nil || l != (Load{TokenUsage: 0.75, Running: 7, Waiting: 1, Retracted: 2, UsedTokens: 12500, WaitingTokens: 900}) {
		t.Fatalf("Loads = %+v, %v", l, err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	cfg.Workers = []string{srv.URL, gone.URL}
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	var he *HTTPError
	if _, err := c2.Loads(context.Background(), gone.URL); !errors.As(err, &he) || he.StatusCode != http.StatusNotFound {
		t.Errorf("a worker without /v1/loads: %v, want its 404", err)
	}
	cfg = DefaultConfig()
	cfg.Gateway = srv.URL
	cfg.Adaptive.Enabled = true
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "adaptive.enabled needs workers") {
		t.Errorf("gateway + adaptive: %v", err)
	}
}

// A worker without /v1/loads (older SGLang) gets the fixed bound instead of staying at the initial one.
func TestAdaptiveWithoutLoads(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Workers = []string{srv.URL}
	cfg.MaxInFlightPerWorker = 64
	cfg.Adaptive = AdaptiveConfig{Enabled: true, Initial: 4, Interval: time.Millisecond}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Until(t, "the worker without /v1/loads to get max_in_flight_per_worker", func() bool { return c.Stats().Workers[0].Limit == 64 })
}

// SetShare makes each worker's bound this node's part of max_in_flight_per_worker (the gateway's too); with
// adaptive it is the controller's ceiling, and a limit above it comes down at once. Within tells when the
// requests in flight above a lowered bound have finished.
func TestSetShare(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers = []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}
	cfg.MaxInFlightPerWorker = 10
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetShare(slots.Share{Rank: 0, Nodes: 3})
	for _, w := range c.workers {
		if w.lim.Limit() != 4 {
			t.Fatalf("%s: bound %d, want 4 (rank 0 of 3 of 10)", w.url, w.lim.Limit())
		}
	}
	w := c.workers[0]
	for range 4 {
		w.lim.TryAcquire()
	}
	c.SetShare(slots.Share{Rank: 2, Nodes: 3}) // 3
	if c.Within() {
		t.Fatal("4 in flight above a bound of 3, and Within says so")
	}
	w.lim.Release()
	if !c.Within() {
		t.Fatal("3 in flight under a bound of 3, and Within says no")
	}

	cfg.Adaptive = AdaptiveConfig{Enabled: true, Initial: 8, Min: 3, Interval: 1 << 62}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aw := a.workers[0]
	a.SetShare(slots.Share{Rank: 1, Nodes: 2}) // ceiling 5: the limit of 8 comes down
	if aw.lim.Limit() != 5 {
		t.Fatalf("adaptive limit %d under a ceiling of 5", aw.lim.Limit())
	}
	aw.inFlight.Store(5)
	if got := a.adapt(aw, Load{TokenUsage: 0.1}); got != 5 {
		t.Fatalf("adaptive growth to %d past the node's ceiling of 5", got)
	}
	a.SetShare(slots.Share{})
	if got := a.adapt(aw, Load{TokenUsage: 0.1}); got != 9 {
		t.Fatalf("adaptive growth to %d after the whole bound came back, want 9", got)
	}
}
