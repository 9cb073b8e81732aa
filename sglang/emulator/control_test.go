package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// running reports whether a request with rid is generating (not waiting).
func (s *Server) running(rid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs[rid] {
		if j.running.Load() {
			return true
		}
	}
	return false
}

func (s *Server) waiting(rid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs[rid] {
		if !j.running.Load() {
			return true
		}
	}
	return false
}

func TestAbortRunningStream(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.Latency.PerOutputToken = time.Hour // one step: the first chunk comes out, then it waits
	srv, url := start(t, cfg, m.Tokenizer)
	ids := qwenIDs(m, "Tell me a long story.")
	body, _ := json.Marshal(map[string]any{"rid": "rollout-42-turn-0", "input_ids": ids, "stream": true, "sampling_params": map[string]any{"stream_interval": 1}})
	req, _ := http.NewRequest(http.MethodPost, url+"/generate", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var events []string
	readEvent := func() string {
		for {
			l, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok {
				events = append(events, d)
				return d
			}
		}
	}
	// the first token would take an hour: abort while decoding
	waitFor(t, `srv.running("rollout-42-turn-0")`, func() bool { return srv.running("rollout-42-turn-0") })
	// only the exact rid reaches the scheduler; "rollout-42" is not in flight, so it is a no-op
	if r := post(t, url, "/abort_request", map[string]any{"rid": "rollout-42"}); r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("abort prefix: %d %q", r.status, r.body)
	}
	if !srv.running("rollout-42-turn-0") {
		t.Fatal("abort of a rid that is not in flight aborted another")
	}
	post(t, url, "/abort_request", map[string]any{"rid": "rollout-42-turn-0"})
	last := readEvent()
	if readEvent() != "[DONE]" {
		t.Fatalf("no [DONE] after the abort chunk: %v", events)
	}
	var g gen
	_ = json.Unmarshal([]byte(last), &g)
	fx := refFixture(t, "abort_responses.json")["abort_running_response"]
	checkShape(t, "abort running (stream)", fx, []byte(last))
	if f := g.finish(); f["type"] != "abort" || f["message"] != "Aborted" || f["status_code"] != nil || f["err_type"] != nil {
		t.Errorf("finish_reason %v", f)
	}
}

func TestAbortRunningAndWaiting(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.Latency.PerOutputToken = 20 * time.Millisecond
	cfg.MaxRunningRequests = 1
	srv, url := start(t, cfg, m.Tokenizer)
	ids := qwenIDs(m, "Tell me a long story.")
	full := len(generate(t, url, map[string]any{"input_ids": ids}).OutputIDs)
	post(t, url, "/flush_cache", nil) // so that the aborted request has no cache hit, like the fixture

	run := make(chan gen, 1)
	wait := make(chan gen, 1)
	go func() { run <- generate(t, url, map[string]any{"rid": "run", "input_ids": ids}) }()
	waitFor(t, `srv.running("run")`, func() bool { return srv.running("run") })
	go func() { wait <- generate(t, url, map[string]any{"rid": "wait", "input_ids": ids}) }()
	waitFor(t, `srv.waiting("wait")`, func() bool { return srv.waiting("wait") })

	post(t, url, "/abort_request", map[string]any{"rid": "wait"})
	w, _ := testutil.Recv(t, "the queued generate to answer", wait)
	fx := refFixture(t, "abort_responses.json")
	checkShape(t, "abort waiting", fx["abort_waiting_response"], w.Raw)
	checkKeyOrder(t, "abort waiting meta_info", fixtureKeyOrder(t, "abort_responses.json", "abort_waiting_response", "meta_info"), rawField(t, w.Raw, "meta_info"))
	if w.finish()["message"] != "Abort in waiting queue" || len(w.OutputIDs) != 0 {
		t.Errorf("waiting abort: %s", w.Raw)
	}

	post(t, url, "/abort_request", map[string]any{"rid": "run"})
	r, _ := testutil.Recv(t, "the running generate to answer", run)
	checkShape(t, "abort running", fx["abort_running_response"], r.Raw)
	checkKeyOrder(t, "abort running meta_info", fixtureKeyOrder(t, "abort_responses.json", "abort_running_response", "meta_info"), rawField(t, r.Raw, "meta_info"))
	if r.finish()["message"] != "Aborted" || len(r.OutputIDs) >= full {
		t.Errorf("running abort: %d of %d ids, %v", len(r.OutputIDs), full, r.finish())
	}
	if r.num("completion_tokens") != len(r.OutputIDs) {
		t.Errorf("completion_tokens %d for %d ids", r.num("completion_tokens"), len(r.OutputIDs))
	}

	// abort_all reaches everything, batch children included
	batch := make(chan httpResult, 1)
	go func() {
		batch <- post(t, url, "/generate", map[string]any{"rid": "b", "input_ids": [][]int32{ids, ids}})
	}()
	waitFor(t, `srv.running("b_0") && srv.waiting("b_1")`, func() bool { return srv.running("b_0") && srv.waiting("b_1") })
	post(t, url, "/abort_request", map[string]any{"abort_all": true})
	var arr []gen
	b, _ := testutil.Recv(t, "the batch to answer", batch)
	if err := json.Unmarshal(b.body, &arr); err != nil || len(arr) != 2 {
		t.Fatalf("batch after abort_all: %v", err)
	}
	if arr[0].finish()["message"] != "Aborted" || arr[1].finish()["message"] != "Abort in waiting queue" {
		t.Errorf("abort_all: %v / %v", arr[0].finish(), arr[1].finish())
	}
}

func TestPauseContinue(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	srv, url := start(t, cfg, m.Tokenizer)
	ids := qwenIDs(m, "Hello?")
	if r := post(t, url, "/pause_generation", map[string]any{"mode": "in_place"}); r.status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	done := make(chan gen, 1)
	go func() { done <- generate(t, url, map[string]any{"rid": "p", "input_ids": ids}) }()
	waitFor(t, `srv.waiting("p")`, func() bool { return srv.waiting("p") })
	select {
	case g := <-done:
		t.Fatalf("a request finished while paused: %s", g.Raw)
	default:
	}
	if r := post(t, url, "/continue_generation", map[string]any{}); r.status != http.StatusOK {
		t.Fatalf("continue: %d", r.status)
	}
	if g, _ := testutil.Recv(t, "the generate to answer", done); g.finish()["type"] != "stop" {
		t.Errorf("after continue: %v", g.finish())
	}

	// mode abort (the default) aborts what is in flight, then blocks new requests until continue
	cfg.Latency.PerOutputToken = time.Hour
	srv2, url2 := start(t, cfg, m.Tokenizer)
	go func() { done <- generate(t, url2, map[string]any{"rid": "q", "input_ids": ids}) }()
	waitFor(t, `srv2.running("q")`, func() bool { return srv2.running("q") })
	post(t, url2, "/pause_generation", nil)
	if g, _ := testutil.Recv(t, "the generate to answer", done); g.finish()["type"] != "abort" {
		t.Errorf("pause abort: %v", g.finish())
	}
	post(t, url2, "/continue_generation", nil)
}

func TestWeightVersion(t *testing.T) {
	m := qwen(t)
	srv, url := start(t, testConfig(m), m.Tokenizer)
	ids := qwenIDs(m, "Hi")
	g := generate(t, url, map[string]any{"input_ids": ids})
	if g.MetaInfo["weight_version"] != "default" {
		t.Errorf("weight_version %v", g.MetaInfo["weight_version"])
	}
	r := post(t, url, "/update_weights_from_disk", map[string]any{"model_path": "/ckpt/step_100", "weight_version": "step_100"})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"success":true`) {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	g = generate(t, url, map[string]any{"input_ids": ids})
	if g.MetaInfo["weight_version"] != "step_100" || g.num("cached_tokens") != 0 {
		t.Errorf("after update: weight_version %v, cached_tokens %d (the update flushes the cache)", g.MetaInfo["weight_version"], g.num("cached_tokens"))
	}
	var mi map[string]any
	_ = json.Unmarshal(get(t, url, "/model_info").body, &mi)
	if mi["weight_version"] != "step_100" || srv.WeightVersion() != "step_100" {
		t.Errorf("/model_info weight_version %v", mi["weight_version"])
	}
	if r := post(t, url, "/update_weights_from_distributed", map[string]any{"names": []string{"w"}, "weight_version": "step_101"}); r.status != http.StatusOK || srv.WeightVersion() != "step_101" {
		t.Errorf("update_weights_from_distributed: %d %s, version %s", r.status, r.body, srv.WeightVersion())
	}
	if r := post(t, url, "/update_weights_from_disk", map[string]any{}); r.status != http.StatusBadRequest {
		t.Errorf("update without model_path: %d", r.status)
	}
}

func TestFaults(t *testing.T) {
	m := qwen(t)
	ids := qwenIDs(m, "Hi")
	body := map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 64}}
	serve := func(f Faults) string {
		cfg := testConfig(m)
		cfg.Faults = f
		_, url := start(t, cfg, m.Tokenizer, WithLog(&syncBuffer{})) // the log path sees every fault too
		return url
	}
	t.Run("503", func(t *testing.T) {
		url := serve(Faults{HTTP503: 1})
		r := post(t, url, "/generate", body)
		fx := refFixture(t, "error_queue_full_503.json")
		if r.status != http.StatusServiceUnavailable || !jsonEqualRaw(fx["body"], r.body) {
			t.Errorf("%d %s", r.status, r.body)
		}
		// streaming: HTTP 200, an abort chunk with status_code 503, [DONE]
		sb := map[string]any{"input_ids": ids, "stream": true}
		r = post(t, url, "/generate", sb)
		evs := sseEvents(t, r.body)
		if r.status != http.StatusOK || len(evs) != 2 || !strings.Contains(evs[0], `"status_code":503`) {
			t.Errorf("stream 503: %d %q", r.status, r.body)
		}
	})
	t.Run("500", func(t *testing.T) {
		r := post(t, serve(Faults{HTTP500: 1}), "/generate", body)
		var b map[string]any
		_ = json.Unmarshal(r.body, &b)
		if r.status != http.StatusInternalServerError || b["code"] != float64(500) || b["type"] != "500" || b["object"] != "error" {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
	t.Run("context", func(t *testing.T) {
		r := post(t, serve(Faults{ContextLength: 1}), "/generate", body)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "is longer than the model's context length") {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
	t.Run("reset", func(t *testing.T) {
		b, _ := json.Marshal(body)
		_, err := http.Post(serve(Faults{Reset: 1})+"/generate", "application/json", bytes.NewReader(b))
		if err == nil {
			t.Fatal("no error from a reset connection")
		}
	})
	t.Run("truncate", func(t *testing.T) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(serve(Faults{Truncate: 1})+"/generate", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || json.Valid(got) {
			t.Errorf("truncated body: err %v, %d bytes, valid JSON %v", err, len(got), json.Valid(got))
		}
	})
	t.Run("stall", func(t *testing.T) {
		url := serve(Faults{Stall: 1, StallFor: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/generate", bytes.NewReader(b))
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		select {
		case err := <-errc:
			t.Fatalf("a stalled request answered: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		if err, _ := testutil.Recv(t, "the cancelled request to return", errc); !errors.Is(err, context.Canceled) {
			t.Errorf("stall: %v", err)
		}
	})
	t.Run("rates are deterministic for a seed", func(t *testing.T) {
		seq := func() []int {
			url := serve(Faults{HTTP503: 0.5})
			var out []int
			for i := 0; i < 20; i++ {
				out = append(out, post(t, url, "/generate", body).status)
			}
			return out
		}
		a, b := seq(), seq()
		if !slices.Equal(a, b) || !slices.Contains(a, 200) || !slices.Contains(a, 503) {
			t.Errorf("statuses %v / %v", a, b)
		}
	})
}

func jsonEqualRaw(want any, got []byte) bool {
	var g any
	if json.Unmarshal(got, &g) != nil {
		return false
	}
	return jsonEqual(want, g)
}

func TestQueueFull(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.MaxRunningRequests, cfg.MaxQueuedRequests = 1, 1
	cfg.Latency.Fixed = time.Hour
	srv, url := start(t, cfg, m.Tokenizer)
	ids := qwenIDs(m, "Hi")
	done := make(chan httpResult, 2)
	go func() { done <- post(t, url, "/generate", map[string]any{"rid": "a", "input_ids": ids}) }()
	waitFor(t, `srv.running("a")`, func() bool { return srv.running("a") })
	go func() { done <- post(t, url, "/generate", map[string]any{"rid": "b", "input_ids": ids}) }()
	waitFor(t, `srv.waiting("b")`, func() bool { return srv.waiting("b") })
	r := post(t, url, "/generate", map[string]any{"rid": "c", "input_ids": ids})
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "The request queue is full.") {
		t.Errorf("third request: %d %s", r.status, r.body)
	}
	post(t, url, "/abort_request", map[string]any{"abort_all": true})
	testutil.Wait(t, "the first generate to answer", done)
	testutil.Wait(t, "the second generate to answer", done)
}

// A drain that cannot end (a stall of an hour) is cut at drain_timeout: what is left is aborted.
func TestRunShutdown(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.Faults = Faults{Stall: 1, StallFor: time.Hour}
	cfg.DrainTimeout = time.Millisecond
	srv, err := New(cfg, m.Tokenizer)
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
	if r := get(t, url, "/health"); r.status != http.StatusOK {
		t.Fatalf("health: %d", r.status)
	}
	stalled := make(chan httpResult, 1)
	go func() { stalled <- post(t, url, "/generate", map[string]any{"input_ids": []int{1, 2}}) }()
	waitFor(t, "the stalled request to be running", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.inflightCount() > 0
	})
	cancel()
	if err, _ := testutil.Recv(t, "Run to return after the cancel", ran); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r, _ := testutil.Recv(t, "the stalled request to be answered", stalled); r.status != http.StatusServiceUnavailable {
		t.Errorf("stalled request at shutdown: %d %s", r.status, r.body)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.Len() != 0 {
		t.Errorf("health after shutdown: %d %q", rec.Code, rec.Body)
	}
}
