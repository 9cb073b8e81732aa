package sglang

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// routed sends one request of episode ep (in group g, if not empty) and returns the server that answered.
func routed(t *testing.T, c *Client, g, ep, rid string) string {
	t.Helper()
	req := testRequest()
	req.RID = rid
	resp, err := c.Generate(WithGroup(t.Context(), g), ep, req)
	if err != nil {
		t.Fatalf("%s: %v", rid, err)
	}
	return resp.Server
}

// TestGroupAffinity: under affinity "group" every request of a group's samples, every turn, goes to one worker,
// and the groups spread over the workers; under "episode" the samples of a group spread.
func TestGroupAffinity(t *testing.T) {
	var urls []string
	for range 3 {
		urls = append(urls, newFakeServer(t, okReplay(t)).URL)
	}
	for _, aff := range []string{AffinityGroup, AffinityEpisode} {
		t.Run(aff, func(t *testing.T) {
			c := testClient(t, func(c *Config) { c.Affinity = aff }, urls...)
			groupsOn := map[string]bool{}
			split := 0
			for g := range 8 {
				group := fmt.Sprintf("req-1/item-%d", g)
				servers := map[string]bool{}
				for turn := range 2 {
					for k := range 4 {
						ep := fmt.Sprintf("%s#%d", group, k)
						s := routed(t, c, group, ep, fmt.Sprintf("%s.%d", ep, turn))
						servers[s] = true
						groupsOn[s] = true
					}
				}
				if len(servers) > 1 {
					split++
				}
			}
			switch {
			case aff == AffinityGroup && split > 0:
				t.Errorf("%d of 8 groups were served by more than one worker", split)
			case aff == AffinityEpisode && split == 0:
				t.Error("under episode affinity no group's samples spread over the workers")
			case len(groupsOn) < 2:
				t.Errorf("8 groups used only %v", groupsOn)
			}
		})
	}
}

// TestLeastLoadedPlacement: a new group goes to the worker with fewer requests in flight, even when rendezvous
// hashing would put it on the busy one (which placement "rendezvous" does).
func TestLeastLoadedPlacement(t *testing.T) {
	for _, placement := range []string{PlacementLeastLoaded, PlacementRendezvous} {
		t.Run(placement, func(t *testing.T) {
			a, b := newFakeServer(t, okReplay(t)), newFakeServer(t, okReplay(t))
			c := testClient(t, func(c *Config) { c.Placement = placement }, a.URL, b.URL)
			// two groups whose rendezvous home is a
			var onA []string
			for i := 0; len(onA) < 2; i++ {
				if g := fmt.Sprint("group-", i); c.Rank(g)[0] == a.URL {
					onA = append(onA, g)
				}
			}
			a.block, a.entered = make(chan struct{}), make(chan struct{}, 4)
			done := make(chan error, 1)
			go func() {
				_, err := c.Generate(WithGroup(t.Context(), onA[0]), onA[0]+"#0", testRequest())
				done <- err
			}()
			testutil.Wait(t, "the first group's request to reach a", a.entered)
			if placement == PlacementRendezvous {
				close(a.block) // the second group would wait on a: let it through
			}
			got := routed(t, c, onA[1], onA[1]+"#0", "second")
			want := b.URL
			if placement == PlacementRendezvous {
				want = a.URL
			}
			if got != want {
				t.Errorf("the second group went to %s, want %s (a has a request in flight)", got, want)
			}
			if placement == PlacementLeastLoaded {
				close(a.block)
			}
			if err, _ := testutil.Recv(t, "the first request to return", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEpisodeStaysAfterSpill: a sample whose group's worker is full spills to the other worker and stays there
// for its later turns (its history is cached there now); the group's other samples keep the group's worker.
func TestEpisodeStaysAfterSpill(t *testing.T) {
	a, b := newFakeServer(t, okReplay(t)), newFakeServer(t, okReplay(t))
	c := testClient(t, func(c *Config) { c.MaxInFlightPerWorker = 1 }, a.URL, b.URL)
	g := ""
	for i := 0; g == ""; i++ {
		if x := fmt.Sprint("group-", i); c.Rank(x)[0] == a.URL {
			g = x
		}
	}
	a.block, a.entered = make(chan struct{}), make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(WithGroup(t.Context(), g), g+"#0", testRequest())
		done <- err
	}()
	testutil.Wait(t, "sample 0 to reach the group's worker", a.entered)
	if s := routed(t, c, g, g+"#1", "s1.0"); s != b.URL {
		t.Fatalf("sample 1 went to %s while the group's worker was full, want %s", s, b.URL)
	}
	close(a.block)
	if err, _ := testutil.Recv(t, "sample 0 to return", done); err != nil {
		t.Fatal(err)
	}
	a.entered = nil
	if s := routed(t, c, g, g+"#1", "s1.1"); s != b.URL {
		t.Errorf("sample 1's second turn went to %s, want %s where it spilled", s, b.URL)
	}
	if s := routed(t, c, g, g+"#0", "s0.1"); s != a.URL {
		t.Errorf("sample 0's second turn went to %s, want the group's %s", s, a.URL)
	}
	if s := routed(t, c, g, g+"#2", "s2.0"); s != a.URL {
		t.Errorf("sample 2 went to %s, want the group's %s", s, a.URL)
	}
}

// TestStickyEpisodeStaysAfterRecovery: under least_loaded an episode that moved off a dead worker stays on its new
// one when the old one recovers (its history is cached there); a new group may use the recovered worker again.
func TestStickyEpisodeStaysAfterRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		down := true
		ok := string(fixture(t, "generate_response.json", "response"))
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			d := down
			mu.Unlock()
			if d && r.URL.Host == "w1:30000" {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
			}
			return respond(r, 200, ok), nil
		}, func(c *Config) {
			c.Workers = []string{"http://w1:30000", "http://w2:30000"}
			c.UnhealthyFor = 10 * time.Second
		})
		g := ""
		for i := 0; g == ""; i++ {
			if x := fmt.Sprint("group-", i); c.Rank(x)[0] == "http://w1:30000" {
				g = x
			}
		}
		if s := routed(t, c, g, g+"#0", "t0"); s != "http://w2:30000" {
			t.Fatalf("while w1 is down: served by %s", s)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		time.Sleep(11 * time.Second)
		if s := routed(t, c, g, g+"#0", "t1"); s != "http://w2:30000" {
			t.Errorf("after w1 recovered the episode moved to %s", s)
		}
		if s := routed(t, c, g, g+"#1", "t2"); s != "http://w2:30000" {
			t.Errorf("the group's next sample went to %s, want the group's worker w2", s)
		}
		servers := map[string]bool{}
		for i := range 8 {
			x := fmt.Sprint("new-group-", i)
			servers[routed(t, c, x, x+"#0", x)] = true
		}
		if !servers["http://w1:30000"] {
			t.Errorf("no new group went to the recovered w1: %v", servers)
		}
	})
}

// TestPlacementTTL: a group's and an episode's placement is forgotten after placement_ttl without a request.
func TestPlacementTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := string(fixture(t, "generate_response.json", "response"))
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) { return respond(r, 200, ok), nil },
			func(c *Config) {
				c.Workers = []string{"http://w1:30000", "http://w2:30000"}
				c.PlacementTTL = time.Minute
			})
		routed(t, c, "g1", "g1#0", "a")
		routed(t, c, "g1", "g1#1", "b")
		if n := c.places.len(); n != 3 {
			t.Fatalf("%d placements after one group of two samples, want 3", n)
		}
		time.Sleep(30 * time.Second)
		routed(t, c, "g1", "g1#0", "c") // keeps g1 and g1#0
		time.Sleep(40 * time.Second)
		routed(t, c, "g2", "g2#0", "d") // g1#1 is 70 s idle: swept
		if n := c.places.len(); n != 4 {
			t.Errorf("%d placements, want 4 (g1, g1#0, g2, g2#0)", n)
		}
	})
}

// TestGatewayRoutingKey: through a gateway the group is X-SMG-Routing-Key under affinity "group", the episode
// under "episode" or when there is no group.
func TestGatewayRoutingKey(t *testing.T) {
	for _, aff := range []string{AffinityGroup, AffinityEpisode} {
		gw := newFakeServer(t, okReplay(t))
		cfg := DefaultConfig()
		cfg.Gateway = gw.URL
		cfg.Affinity = aff
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Generate(WithGroup(t.Context(), "req-1/item-3"), "req-1/item-3#2", testRequest()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Generate(t.Context(), "session-9", testRequest()); err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := "req-1/item-3"
		if aff == AffinityEpisode {
			want = "req-1/item-3#2"
		}
		if a, b := gw.headers[0].Get(RoutingKeyHeader), gw.headers[1].Get(RoutingKeyHeader); a != want || b != "session-9" {
			t.Errorf("affinity %s: %s = %q, %q; want %q, %q", aff, RoutingKeyHeader, a, b, want, "session-9")
		}
	}
}

func TestRoutingConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Affinity = "item" }, `affinity must be "group" or "episode", got "item"`},
		{func(c *Config) { c.Placement = "random" }, `placement must be "least_loaded" or "rendezvous", got "random"`},
		{func(c *Config) { c.PlacementTTL = 0 }, "placement_ttl must be > 0"},
	} {
		cfg := DefaultConfig()
		cfg.Workers = []string{"http://w1:30000"}
		tt.mut(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
}

// TestLoadUsesServerReading: placement compares tokens: this client's in flight and queued, or with
// [sglang.adaptive] the worker's last /v1/loads reading (used + waiting tokens) when it is higher, and only while it
// is fresh (two intervals).
func TestLoadUsesServerReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newBubbleClient(t, func(r *http.Request) (*http.Response, error) { return nil, errors.New("unused") },
			func(c *Config) {
				c.Workers = []string{"http://w1:30000", "http://w2:30000"}
				c.Adaptive = AdaptiveConfig{Enabled: true, Interval: time.Hour} // no reading during the test
			})
		defer c.Close() // stops the adaptive controllers
		w1, w2 := c.workers[0], c.workers[1]
		w1.inFlight.Store(1)
		w1.inFlightTokens.Store(3000) // one long request
		w2.inFlight.Store(2)
		w2.inFlightTokens.Store(1000) // two short ones
		now := time.Now()
		if got := c.leastLoaded("k", now); got != w2 {
			t.Fatalf("w1 holds 3,000 tokens, w2 1,000: picked %s", got.url)
		}
		w2.queuedTokens.Store(2500)
		if got := c.leastLoaded("k", now); got != w1 {
			t.Fatalf("w2 has 2,500 more tokens queued: picked %s", got.url)
		}
		w2.queuedTokens.Store(0)
		w2.serverLoad.Store(5000) // other clients keep w2 busier
		w2.loadAt.Store(now.UnixNano())
		if got, l := c.leastLoaded("k", now), c.load(w2, now); got != w1 || l != 5000 {
			t.Errorf("w2 reports 5,000 used and waiting tokens: picked %s, load(w2) = %d", got.url, l)
		}
		time.Sleep(2*time.Hour + time.Second)
		if l := c.load(w2, time.Now()); l != 1000 {
			t.Errorf("a reading two intervals old still counts: load(w2) = %d", l)
		}
	})
}
