package sglang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// fixtureError is one error_*.json fixture: SGLang's exact status and body.
type fixtureError struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func loadErrorFixture(t testing.TB, name string) fixtureError {
	t.Helper()
	var f fixtureError
	if err := json.Unmarshal(fixture(t, name, ""), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// replay is one canned HTTP answer.
type replay struct {
	status int
	body   []byte
	header map[string]string
	hangup bool // close the connection without answering
}

// fakeServer serves /generate from a script of answers (the last one repeats) and records requests.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	script  []replay
	hits    int
	bodies  []map[string]any
	headers []http.Header
	block   chan struct{} // if set, /generate waits on it before answering
	entered chan struct{} // if set, receives once per /generate on entry
}

func newFakeServer(t testing.TB, script ...replay) *fakeServer {
	t.Helper()
	f := &fakeServer{script: script}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	f.mu.Lock()
	i := min(f.hits, len(f.script)-1)
	f.hits++
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	rp := f.script[i]
	block, entered := f.block, f.entered
	f.mu.Unlock()
	if r.URL.Path != "/generate" {
		block, entered = nil, nil
	}
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-r.Context().Done():
			return
		}
	}
	if rp.hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

func okReplay(t testing.TB) replay {
	return replay{status: 200, body: fixture(t, "generate_response.json", "response")}
}

// testClient builds a Client with fast deterministic retries.
func testClient(t testing.TB, mut func(*Config), urls ...string) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workers = urls
	cfg.Retry.MaxAttempts = 4
	if mut != nil {
		mut(&cfg)
	}
	c, err := New(cfg, WithBackoff(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testRequest() *GenerateRequest {
	return &GenerateRequest{
		InputIDs:        []int32{151644, 872, 198, 151645, 198, 151644, 77091, 198},
		SamplingParams:  SamplingParams{MaxNewTokens: 64},
		ReturnLogprob:   true,
		LogprobStartLen: 7,
		RID:             "rollout-42-turn-0",
	}
}

func TestGenerateSuccess(t *testing.T) {
	srv := newFakeServer(t, okReplay(t))
	c := testClient(t, func(c *Config) { c.APIKey = "sk-test" }, srv.URL+"/")
	req := testRequest()
	before := *req
	resp, err := c.Generate(t.Context(), "ep-1", req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Server != srv.URL || resp.Attempts != 1 || len(resp.OutputIDs) != 14 || resp.MetaInfo.ID != "rollout-42-turn-0" {
		t.Errorf("resp = server %q attempts %d ids %v", resp.Server, resp.Attempts, resp.OutputIDs)
	}
	if !reflect.DeepEqual(*req, before) {
		t.Error("Generate modified the request")
	}
	body := srv.bodies[0]
	want := map[string]any{
		"input_ids":         []any{151644.0, 872.0, 198.0, 151645.0, 198.0, 151644.0, 77091.0, 198.0},
		"sampling_params":   map[string]any{"max_new_tokens": 64.0},
		"return_logprob":    true,
		"logprob_start_len": 7.0,
		"rid":               "rollout-42-turn-0",
		"stream":            false,
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("sent %v\nwant %v", body, want)
	}
	h := srv.headers[0]
	if h.Get("Content-Type") != "application/json" || h.Get("Authorization") != "Bearer sk-test" || h.Get(RoutingKeyHeader) != "" {
		t.Errorf("headers = %v", h)
	}
}

func TestGenerateGeneratesRID(t *testing.T) {
	srv := newFakeServer(t, okReplay(t))
	c := testClient(t, nil, srv.URL)
	req := testRequest()
	req.RID = ""
	if _, err := c.Generate(t.Context(), "", req); err != nil {
		t.Fatal(err)
	}
	rid, _ := srv.bodies[0]["rid"].(string)
	if len(rid) != 32 || strings.Trim(rid, "0123456789abcdef") != "" {
		t.Errorf("generated rid %q, want 32 hex digits", rid)
	}
}

// TestGenerateErrorClasses replays every SGLang error fixture and checks class, retry and attempts.
func TestGenerateErrorClasses(t *testing.T) {
	fx := func(name string) replay {
		f := loadErrorFixture(t, name)
		return replay{status: f.Status, body: f.Body}
	}
	plain := func(status int, body string) replay {
		return replay{status: status, body: []byte(body), header: map[string]string{"Content-Type": "text/plain"}}
	}
	abortRunning := replay{status: 200, body: fixture(t, "abort_responses.json", "abort_running_response")}
	tests := []struct {
		name     string
		replay   replay
		want     []error // errors.Is must hold for each
		notWant  []error
		attempts int // 4 = retried to MaxAttempts
		msg      string
	}{
		{"context length", fx("error_context_length.json"), []error{ErrContextLength, ErrBadRequest}, nil, 1, "longer than the model's context length"},
		{"total tokens", fx("error_total_tokens.json"), []error{ErrContextLength, ErrBadRequest}, nil, 1, "exceeds the model's maximum context length"},
		{"bad sampling param", fx("error_bad_sampling_param.json"), []error{ErrBadRequest}, []error{ErrContextLength}, 1, "top_p must be in (0, 1]"},
		{"no input", fx("error_no_input.json"), []error{ErrBadRequest}, []error{ErrContextLength}, 1, "Either text, input_ids"},
		{"validation", fx("error_request_validation.json"), []error{ErrBadRequest}, nil, 1, "RequestValidationError"},
		// SGLang 0.5.23's contract gate (api_contract.generate_contract_error): a 400 never retried.
		{"unknown field", replay{status: 400, body: []byte("{\"error\":\"unknown field `seed`, expected one of `max_new_tokens`, `stop`\"}")}, []error{ErrBadRequest}, []error{ErrUnavailable}, 1, "unknown field `seed`"},
		{"unauthorized", fx("error_unauthorized.json"), []error{ErrUnauthorized}, []error{ErrUnavailable}, 1, "Unauthorized"},
		{"forbidden", replay{status: 403, body: []byte(`{"error":"Forbidden"}`)}, []error{ErrUnauthorized}, nil, 1, "Forbidden"},
		{"not found", replay{status: 404, body: []byte(`{"detail":"Not Found"}`)}, []error{ErrNotFound}, nil, 1, "Not Found"},
		{"queue full", fx("error_queue_full_503.json"), []error{ErrUnavailable}, []error{ErrBadRequest}, 4, "The request queue is full."},
		{"internal 500", plain(500, "Internal Server Error"), []error{ErrUnavailable}, nil, 4, "Internal Server Error"},
		{"request timeout 408", plain(408, "timeout"), []error{ErrUnavailable}, nil, 4, "timeout"},
		{"too many 429", plain(429, "slow down"), []error{ErrUnavailable}, nil, 4, "slow down"},
		{"bad gateway 502", plain(502, "<html>Bad Gateway</html>"), []error{ErrUnavailable}, nil, 4, "Bad Gateway"},
		{"truncated body", replay{status: 200, body: okReplay(t).body[:300]}, []error{ErrBadResponse}, nil, 4, "undecodable"},
		{"hang up", replay{hangup: true}, []error{ErrConnection}, nil, 4, "connection failed"},
		{"missing field", replay{status: 200, body: []byte(`{"text":"x","meta_info":{"id":"r","finish_reason":{"type":"length","length":1}}}`)}, []error{ErrBadResponse}, nil, 1, `"output_ids"`},
		{"aborted", abortRunning, []error{ErrAborted}, []error{ErrUnavailable}, 1, "Aborted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, tt.replay)
			c := testClient(t, func(c *Config) { c.UnhealthyAfter = 100 }, srv.URL)
			resp, err := c.Generate(t.Context(), "ep", testRequest())
			if err == nil {
				t.Fatalf("no error; resp %+v", resp)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = false", err, w)
				}
			}
			for _, w := range tt.notWant {
				if errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = true", err, w)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "generate" || e.Server != srv.URL || e.Attempts != tt.attempts {
				t.Errorf("error %#v: want *Error on %s after %d attempts", e, srv.URL, tt.attempts)
			}
			if srv.count() != tt.attempts {
				t.Errorf("server saw %d attempts, want %d", srv.count(), tt.attempts)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "rollout-42-turn-0") || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("message %q should name %q, the rid and the server", err, tt.msg)
			}
			var he *HTTPError
			if tt.replay.status >= 400 {
				if !errors.As(err, &he) || he.StatusCode != tt.replay.status || he.Body != string(tt.replay.body) || he.Server != srv.URL || !strings.HasPrefix(he.RID, "rollout-42-turn-0") {
					t.Errorf("HTTPError = %+v", he)
				}
			}
			if errors.Is(err, ErrAborted) {
				var ae *AbortError
				if !errors.As(err, &ae) || ae.Response == nil || len(ae.Response.OutputIDs) != 4 || ae.Message != "Aborted" || ae.Response.Server != srv.URL {
					t.Errorf("AbortError = %+v", ae)
				}
			}
		})
	}
}

func TestGenerateRetryThenSuccess(t *testing.T) {
	q := loadErrorFixture(t, "error_queue_full_503.json")
	srv := newFakeServer(t, replay{status: q.Status, body: q.Body}, replay{hangup: true}, okReplay(t))
	c := testClient(t, func(c *Config) { c.UnhealthyAfter = 100 }, srv.URL)
	resp, err := c.Generate(t.Context(), "ep", testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || c.Stats().Retries != 2 {
		t.Errorf("attempts %d, retries %d; want 3, 2", resp.Attempts, c.Stats().Retries)
	}
	// Retries carry a fresh rid: SGLang rejects a rid that may still be in flight.
	var rids []string
	for _, b := range srv.bodies {
		rids = append(rids, b["rid"].(string))
	}
	if want := []string{"rollout-42-turn-0", "rollout-42-turn-0-retry2", "rollout-42-turn-0-retry3"}; !reflect.DeepEqual(rids, want) {
		t.Errorf("rids %v, want %v", rids, want)
	}
	if s := c.Stats().Workers[0]; s.Requests != 3 || s.Failures != 2 || s.InFlight != 0 || !s.Healthy {
		t.Errorf("stats %+v", s)
	}
}

func TestGenerateConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	c := testClient(t, nil, url)
	_, err = c.Generate(t.Context(), "ep", testRequest())
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("err = %v, want ErrConnection", err)
	}
	var e *Error
	if errors.As(err, &e); e.Attempts != 4 {
		t.Errorf("attempts = %d, want 4", e.Attempts)
	}
}

func TestGenerateContextCanceled(t *testing.T) {
	srv := newFakeServer(t, okReplay(t))
	srv.block = make(chan struct{})
	srv.entered = make(chan struct{}, 1)
	c := testClient(t, nil, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := c.Generate(ctx, "ep", testRequest())
		done <- err
	}()
	testutil.Wait(t, "the request to reach the fake server", srv.entered)
	cancel()
	err, _ := testutil.Recv(t, "Generate to return", done)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrConnection) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
	if srv.count() != 1 {
		t.Errorf("%d attempts after cancel, want 1 (no retry)", srv.count())
	}
	close(srv.block)
}

func TestGenerateRejectsBadInput(t *testing.T) {
	c := testClient(t, nil, "http://127.0.0.1:1")
	for _, req := range []*GenerateRequest{nil, {}, {InputIDs: []int32{1}, SamplingParams: SamplingParams{MaxNewTokens: -1}}} {
		if _, err := c.Generate(t.Context(), "", req); err == nil {
			t.Errorf("%+v: no error", req)
		}
	}
}

func TestGenerateDuplicateRIDInFlight(t *testing.T) {
	srv := newFakeServer(t, okReplay(t))
	srv.block = make(chan struct{})
	srv.entered = make(chan struct{}, 1)
	c := testClient(t, nil, srv.URL)
	done := make(chan error)
	go func() {
		_, err := c.Generate(t.Context(), "ep", testRequest())
		done <- err
	}()
	testutil.Wait(t, "the request to reach the fake server", srv.entered)
	if _, err := c.Generate(t.Context(), "ep", testRequest()); err == nil || !strings.Contains(err.Error(), "already in flight") {
		t.Errorf("second Generate with the same rid: %v", err)
	}
	close(srv.block)
	if err, _ := testutil.Recv(t, "Generate to return", done); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateGatewayHeader(t *testing.T) {
	gw := newFakeServer(t, okReplay(t))
	cfg := DefaultConfig()
	cfg.Gateway = gw.URL
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ep := range []string{"episode-7", "episode-8"} {
		if _, err := c.Generate(t.Context(), ep, testRequest()); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := gw.headers[0].Get(RoutingKeyHeader), gw.headers[1].Get(RoutingKeyHeader); a != "episode-7" || b != "episode-8" {
		t.Errorf("%s = %q, %q", RoutingKeyHeader, a, b)
	}
	if got := c.Rank("x"); !reflect.DeepEqual(got, []string{gw.URL}) {
		t.Errorf("Rank = %v", got)
	}
	// The gateway has no admin endpoints.
	if err := c.AbortAll(t.Context(), ""); !errors.Is(err, ErrNotSupported) {
		t.Errorf("AbortAll via gateway: %v", err)
	}
}

func TestAffinity(t *testing.T) {
	var srvs []*fakeServer
	var urls []string
	for range 3 {
		s := newFakeServer(t, okReplay(t))
		srvs = append(srvs, s)
		urls = append(urls, s.URL)
	}
	c := testClient(t, nil, urls...)
	used := map[string]int{}
	for i := range 30 {
		ep := fmt.Sprintf("episode-%d", i)
		home := c.Rank(ep)[0]
		for turn := range 3 {
			req := testRequest()
			req.RID = fmt.Sprintf("%s.%d", ep, turn)
			resp, err := c.Generate(t.Context(), ep, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Server != home {
				t.Fatalf("%s turn %d went to %s, home is %s", ep, turn, resp.Server, home)
			}
			used[resp.Server]++
		}
	}
	if len(used) != 3 {
		t.Errorf("30 episodes used %d of 3 workers: %v", len(used), used)
	}
	// Rendezvous ranking is stable: removing a worker moves only its own episodes.
	c2 := testClient(t, nil, urls[0], urls[1])
	for i := range 30 {
		ep := fmt.Sprintf("episode-%d", i)
		if h := c.Rank(ep)[0]; h != urls[2] && c2.Rank(ep)[0] != h {
			t.Errorf("%s moved from %s when an unrelated worker left", ep, h)
		}
	}
}

func TestSpillWhenOverloaded(t *testing.T) {
	a, b := newFakeServer(t, okReplay(t)), newFakeServer(t, okReplay(t))
	c := testClient(t, func(c *Config) { c.MaxInFlightPerWorker = 1 }, a.URL, b.URL)
	ep := "episode-spill"
	rank := c.Rank(ep)
	home, next := a, b
	if rank[0] == b.URL {
		home, next = b, a
	}
	home.block = make(chan struct{})
	home.entered = make(chan struct{}, 1)
	done := make(chan error)
	go func() {
		_, err := c.Generate(t.Context(), ep, testRequest())
		done <- err
	}()
	<-home.entered // the home worker's only slot is taken
	req := testRequest()
	req.RID = "second"
	resp, err := c.Generate(t.Context(), ep, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Server != next.URL {
		t.Errorf("second request went to %s, want the next-ranked %s", resp.Server, next.URL)
	}
	close(home.block)
	if err, _ := testutil.Recv(t, "Generate to return", done); err != nil {
		t.Fatal(err)
	}
}

func TestQueueWhenAllBusy(t *testing.T) {
	srv := newFakeServer(t, okReplay(t))
	srv.block = make(chan struct{})
	srv.entered = make(chan struct{}, 2)
	c := testClient(t, func(c *Config) { c.MaxInFlightPerWorker = 1 }, srv.URL)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			req := testRequest()
			req.RID = fmt.Sprint("q", i)
			_, err := c.Generate(t.Context(), "ep", req)
			errs <- err
		}()
	}
	testutil.Wait(t, "the first request to reach the server", srv.entered)
	testutil.Until(t, "the second request to queue", func() bool { return c.Stats().Workers[0].Queued == 1 })
	if s := c.Stats().Workers[0]; s.InFlight != 1 {
		t.Errorf("stats %+v, want 1 in flight and 1 queued", s)
	}
	close(srv.block)
	for range 2 {
		if err, _ := testutil.Recv(t, "a queued Generate to return", errs); err != nil {
			t.Fatal(err)
		}
	}
	if s := c.Stats().Workers[0]; s.InFlight != 0 || s.Queued != 0 || s.Requests != 2 {
		t.Errorf("after: %+v", s)
	}
}

func TestSpillWhenUnhealthy(t *testing.T) {
	live := newFakeServer(t, okReplay(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	c := testClient(t, func(c *Config) { c.UnhealthyFor = time.Hour }, dead, live.URL)
	// find an episode whose home is the dead worker
	ep := ""
	for i := 0; ep == ""; i++ {
		if e := fmt.Sprint("ep-", i); c.Rank(e)[0] == dead {
			ep = e
		}
	}
	resp, err := c.Generate(t.Context(), ep, testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Server != live.URL || resp.Attempts != 2 {
		t.Errorf("served by %s after %d attempts; want %s after 2", resp.Server, resp.Attempts, live.URL)
	}
	// While the dead worker is marked unhealthy, its episodes go straight to the next one.
	req := testRequest()
	req.RID = "next-turn"
	resp, err = c.Generate(t.Context(), ep, req)
	if err != nil || resp.Attempts != 1 || resp.Server != live.URL {
		t.Errorf("next turn: %v, attempts %d, server %s", err, resp.Attempts, resp.Server)
	}
	if s := c.Stats().Workers[0]; s.Healthy || s.URL != dead {
		t.Errorf("dead worker stats %+v", s)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"no endpoints", func(c *Config) { c.Workers = nil }, "set workers"},
		{"bad scheme", func(c *Config) { c.Workers = []string{"localhost:30000"} }, "workers[0]"},
		{"duplicate", func(c *Config) { c.Workers = []string{"http://a:1", "http://a:1/"} }, "listed twice"},
		{"bad gateway", func(c *Config) { c.Gateway = "ftp://x" }, "gateway"},
		{"in flight", func(c *Config) { c.MaxInFlightPerWorker = 0 }, "max_in_flight_per_worker"},
		{"attempts", func(c *Config) { c.Retry.MaxAttempts = 0 }, "retry.max_attempts"},
		{"backoff order", func(c *Config) { c.Retry.MaxBackoff = time.Millisecond }, "retry.max_backoff"},
		{"jitter", func(c *Config) { c.Retry.Jitter = 2 }, "retry.jitter"},
		{"multiplier", func(c *Config) { c.Retry.Multiplier = 0.5 }, "retry.multiplier"},
		{"unhealthy", func(c *Config) { c.UnhealthyAfter = 0 }, "unhealthy_after"},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.Workers = []string{"http://127.0.0.1:30000"}
		tt.mut(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
	cfg := DefaultConfig()
	cfg.Workers = []string{"http://127.0.0.1:30000"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config with a worker: %v", err)
	}
}

func TestClosed(t *testing.T) {
	c := testClient(t, nil, "http://127.0.0.1:1")
	c.Close()
	if _, err := c.Generate(t.Context(), "", testRequest()); !errors.Is(err, ErrClosed) {
		t.Errorf("Generate after Close: %v", err)
	}
	if err := c.Health(t.Context(), ""); !errors.Is(err, ErrClosed) {
		t.Errorf("Health after Close: %v", err)
	}
}

// TestHammer runs many concurrent episodes over three flaky workers with tight in-flight bounds: every
// request succeeds, each episode stays on one worker unless that worker was marked unhealthy, and the
// counters return to zero.
func TestHammer(t *testing.T) {
	ok := okReplay(t).body
	q := loadErrorFixture(t, "error_queue_full_503.json")
	var urls []string
	var inFlightMax atomic.Int64
	for range 3 {
		var hits, cur atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			n := cur.Add(1)
			defer cur.Add(-1)
			for {
				m := inFlightMax.Load()
				if n <= m || inFlightMax.CompareAndSwap(m, n) {
					break
				}
			}
			if hits.Add(1)%5 == 0 {
				w.WriteHeader(q.Status)
				_, _ = w.Write(q.Body)
				return
			}
			_, _ = w.Write(ok)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	c := testClient(t, func(c *Config) { c.MaxInFlightPerWorker = 4; c.Retry.MaxAttempts = 10 }, urls...)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for e := range 50 {
		wg.Go(func() {
			ep := fmt.Sprint("hammer-", e)
			for turn := range 4 {
				req := testRequest()
				req.RID = fmt.Sprintf("%s.%d", ep, turn)
				if _, err := c.Generate(t.Context(), ep, req); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := inFlightMax.Load(); m > 4 {
		t.Errorf("a worker saw %d concurrent requests; the bound is 4", m)
	}
	s := c.Stats()
	var reqs uint64
	for _, w := range s.Workers {
		if w.InFlight != 0 || w.Queued != 0 {
			t.Errorf("after the run: %+v", w)
		}
		reqs += w.Requests
	}
	if reqs != 200+s.Retries {
		t.Errorf("%d attempts for 200 requests and %d retries", reqs, s.Retries)
	}
}
