package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// The KV pool admits in line, retracts the younger request when it runs out, lets the oldest overfill, and
// hands freed tokens to the waiters in order.
func TestKVPool(t *testing.T) {
	p := newKVPool(100)
	ctx := context.Background()
	a, ok := p.admit(ctx, nil, 40, 0, false)
	if !ok {
		t.Fatal("a not admitted")
	}
	b, ok := p.admit(ctx, nil, 40, 0, false)
	if !ok {
		t.Fatal("b not admitted")
	}
	if !p.grow(&b, 20) { // 100/100
		t.Fatal("b could not take the last 20 tokens")
	}
	if p.grow(&b, 1) {
		t.Fatal("b (younger) grew past the capacity")
	}
	p.retract(b)
	cAdmitted := make(chan kvTicket, 1)
	go func() {
		c, _ := p.admit(ctx, nil, 70, 0, true) // b's prompt and output, prefilled again
		cAdmitted <- c
	}()
	testutil.Until(t, "the retracted request to wait in line", func() bool { return p.stats().retracted == 1 })
	if !p.grow(&a, 30) { // 70/100: fits
		t.Fatal("a could not grow")
	}
	if !p.grow(&a, 40) { // the oldest may overfill
		t.Fatal("the oldest request was refused a token")
	}
	if st := p.stats(); st.used != 110 || st.running != 1 || st.waiting != 1 || st.waitingTokens != 70 || st.retractions != 1 {
		t.Fatalf("stats = %+v", st)
	}
	p.release(a)
	c, _ := testutil.Recv(t, "the retracted request to be admitted again", cAdmitted)
	if st := p.stats(); st.used != 70 || st.running != 1 || st.waiting != 0 || st.waitingTokens != 0 || st.retracted != 0 {
		t.Fatalf("stats after a finished = %+v", st)
	}
	if !p.grow(&c, 30) || p.grow(&c, 1) == false { // c is the oldest now: it may overfill
		t.Fatal("the only running request could not grow")
	}
	p.release(c)
	if st := p.stats(); st.used != 0 || st.running != 0 {
		t.Fatalf("stats at rest = %+v", st)
	}
	// an abandoned wait hands nothing out
	d, _ := p.admit(ctx, nil, 100, 0, false)
	abort := make(chan struct{})
	close(abort)
	if _, ok := p.admit(ctx, abort, 10, 0, false); ok {
		t.Fatal("an aborted waiter was admitted")
	}
	p.release(d)
	if st := p.stats(); st.used != 0 || st.waiting != 0 {
		t.Fatalf("stats after the abandoned wait = %+v", st)
	}

	// Admission reserves new_token_ratio × the output still to come (0.7 at first), and a retraction makes the
	// next admissions conservative (ratio 1).
	p = newKVPool(100)
	a, _ = p.admit(ctx, nil, 10, 50, false) // 10 + 0.7×50 = 45
	b, _ = p.admit(ctx, nil, 10, 50, false) // 20 + 0.7×100 = 90
	p.mu.Lock()
	fits := p.fitsLocked(10, 50) // 30 + 0.7×150 = 135
	p.mu.Unlock()
	if fits {
		t.Fatal("a third request fits past the reservation")
	}
	if !p.grow(&a, 40) || a.remaining != 10 || p.reserved != 60 || p.ratio >= kvInitRatio {
		t.Fatalf("after a grew: remaining %d, reserved %d, ratio %v", a.remaining, p.reserved, p.ratio)
	}
	p.retract(b)
	if p.ratio != 1 || p.reserved != 10 {
		t.Fatalf("after a retraction: ratio %v, reserved %d", p.ratio, p.reserved)
	}
	p.release(a)
}

// Under a KV pool too small for the requests sent at once, replies are the same as without the model (a
// retraction costs time, never tokens) and the pool is empty at the end.
func TestKVModelKeepsReplies(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	_, plain := start(t, cfg, m.Tokenizer)
	ids := m.Tokenizer.Encode(qwenPrompt("You are a helpful assistant.", "What is 1+2*(3-4)/5? Think it through.", calcToolJSON, weatherTool), false)
	cfg.KVTokens = len(ids)*2 + 8
	cfg.Latency = Latency{Fixed: time.Millisecond, PerOutputToken: 50 * time.Microsecond} // decode in steps, so that requests overlap
	srv, url := start(t, cfg, m.Tokenizer)
	const n = 8
	var wg sync.WaitGroup
	got := make([]gen, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = generate(t, url, map[string]any{"rid": fmt.Sprint("r", i), "input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 256}})
		}()
	}
	wg.Wait()
	for i := range n {
		want := generate(t, plain, map[string]any{"rid": fmt.Sprint("r", i), "input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 256}})
		if fmt.Sprint(got[i].OutputIDs) != fmt.Sprint(want.OutputIDs) || got[i].finish()["type"] != want.finish()["type"] {
			t.Errorf("r%d: with the KV model %v (%v), without %v (%v)", i, got[i].OutputIDs, got[i].finish(), want.OutputIDs, want.finish())
		}
	}
	if st := srv.kv.stats(); st.used != 0 || st.running != 0 || st.waiting != 0 {
		t.Errorf("pool after the requests: %+v", st)
	}
	t.Logf("%d retractions", srv.Retractions())
}

// /v1/loads has SGLang's shape (v1_loads.py, LoadSnapshot.to_dict); include filters sections and refuses unknown
// ones with SGLang's 400; format=prometheus answers text. /ready follows pause and continue.
func TestLoadsAndReady(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.KVTokens = 5000
	cfg.MaxRunningRequests = 16
	_, url := start(t, cfg, m.Tokenizer)
	r := get(t, url, "/v1/loads")
	if r.status != http.StatusOK {
		t.Fatalf("/v1/loads: %d %s", r.status, r.body)
	}
	var body struct {
		Version         string           `json:"version"`
		NumAccelerators int              `json:"num_accelerators"`
		Loads           []map[string]any `json:"loads"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || len(body.Loads) != 1 {
		t.Fatalf("/v1/loads: %v: %s", err, r.body)
	}
	l := body.Loads[0]
	for _, k := range []string{"timestamp", "dp_rank", "num_running_reqs", "num_waiting_reqs", "num_used_tokens", "max_total_num_tokens", "max_running_requests", "token_usage", "queues"} {
		if _, ok := l[k]; !ok {
			t.Errorf("/v1/loads: no %q in %s", k, r.body)
		}
	}
	if l["max_total_num_tokens"] != 5000.0 || l["max_running_requests"] != 16.0 || l["token_usage"] != 0.0 {
		t.Errorf("/v1/loads: %s", r.body)
	}
	if q, _ := l["queues"].(map[string]any); q["retracted"] != 0.0 || q["waiting"] != 0.0 {
		t.Errorf("/v1/loads queues: %v", l["queues"])
	}
	if r := get(t, url, "/v1/loads?include=core"); strings.Contains(string(r.body), "queues") {
		t.Errorf("include=core kept the queues: %s", r.body)
	}
	if r := get(t, url, "/v1/loads?include=core,bogus"); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"detail":"Invalid include sections: {'bogus'}`) {
		t.Errorf("include=bogus: %d %s", r.status, r.body)
	}
	if r := get(t, url, "/v1/loads?format=prometheus"); !strings.Contains(string(r.body), "sglang_token_usage{dp_rank=\"0\"} 0\n") || !strings.HasPrefix(r.ctype, "text/plain") {
		t.Errorf("prometheus: %s %s", r.ctype, r.body)
	}
	if r := get(t, url, "/ready"); r.status != http.StatusOK {
		t.Errorf("/ready: %d", r.status)
	}
	post(t, url, "/pause_generation", map[string]any{"mode": "in_place"})
	if r := get(t, url, "/ready"); r.status != http.StatusServiceUnavailable || len(r.body) != 0 {
		t.Errorf("/ready while paused: %d %q", r.status, r.body)
	}
	if r := get(t, url, "/health"); r.status != http.StatusOK {
		t.Errorf("/health while paused: %d", r.status) // SGLang: a paused server is healthy, not ready
	}
	post(t, url, "/continue_generation", map[string]any{})
	if r := get(t, url, "/ready"); r.status != http.StatusOK {
		t.Errorf("/ready after continue: %d", r.status)
	}
}

// On shutdown Run drains as SGLang does after SIGTERM: /health and /ready answer 503 while the request in
// flight runs to its end (here: held by a pause until /continue_generation), then Run returns.
func TestRunDrains(t *testing.T) {
	m := qwen(t)
	srv, err := New(testConfig(m), m.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	post(t, url, "/pause_generation", map[string]any{"mode": "in_place"})
	held := make(chan httpResult, 1)
	go func() { held <- post(t, url, "/generate", map[string]any{"input_ids": []int{1, 2}}) }()
	waitFor(t, "the request to be in flight", func() bool { return srv.busy() == 1 })
	cancel()
	health := func(path string) int {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	waitFor(t, "/health to answer 503 while draining", func() bool { return health("/health") == http.StatusServiceUnavailable })
	if c := health("/ready"); c != http.StatusServiceUnavailable {
		t.Errorf("/ready while draining: %d", c)
	}
	select {
	case err := <-ran:
		t.Fatalf("Run returned while a request was in flight: %v", err)
	default:
	}
	post(t, url, "/continue_generation", map[string]any{})
	if r, _ := testutil.Recv(t, "the drained request's reply", held); r.status != http.StatusOK || !strings.Contains(string(r.body), `"finish_reason":{"type":"`) || strings.Contains(string(r.body), `"abort"`) {
		t.Errorf("the drained request: %d %s", r.status, r.body)
	}
	if err, _ := testutil.Recv(t, "Run to return after the drain", ran); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
