package sglang

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
)

// adminServer answers the admin endpoints with the examples of testdata/fixtures/endpoints.json and
// records each call as "METHOD /path body".
type adminServer struct {
	*httptest.Server
	mu       sync.Mutex
	calls    []string
	status   map[string]int    // per path override
	override map[string]string // per path body override
}

func endpointExamples(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	var doc struct {
		Endpoints []struct {
			Path            string          `json:"path"`
			ResponseExample json.RawMessage `json:"response_example"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(fixture(t, "endpoints.json", ""), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, e := range doc.Endpoints {
		if len(e.ResponseExample) > 0 {
			out[e.Path] = e.ResponseExample
		}
	}
	return out
}

func newAdminServer(t testing.TB) *adminServer {
	t.Helper()
	ex := endpointExamples(t)
	flushOK := "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"
	s := &adminServer{status: map[string]int{}, override: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(b)))
		status, hasStatus := s.status[r.URL.Path]
		body, hasBody := s.override[r.URL.Path]
		s.mu.Unlock()
		if !hasStatus {
			status = 200
		}
		if !hasBody {
			switch r.URL.Path {
			case "/health", "/health_generate", "/abort_request":
				body = "" // SGLang: empty body
			case "/flush_cache":
				body = flushOK
			default:
				body = string(ex[r.URL.Path])
			}
		}
		if r.URL.Path == "/flush_cache" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *adminServer) takeCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func TestAdminQueries(t *testing.T) {
	a := newAdminServer(t)
	c := testClient(t, nil, a.URL)
	ctx := t.Context()

	mi, err := c.ModelInfo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if mi.ModelPath != "Qwen/Qwen3-8B" || mi.WeightVersion != "default" || !mi.IsGeneration || !reflect.DeepEqual(mi.Architectures, []string{"Qwen3ForCausalLM"}) {
		t.Errorf("model info %+v", mi)
	}
	n, err := c.MaxModelLen(ctx, a.URL)
	if err != nil || n != 40960 {
		t.Errorf("MaxModelLen = %d, %v; want 40960", n, err)
	}
	a.override["/server_info"] = `{"model_path":"Qwen/Qwen3-8B","page_size":1,"max_total_num_tokens":400000,"context_length":40960,"version":"0.5.x","internal_states":[{}],"kv_events":null}`
	si, err := c.ServerInfo(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if si["max_total_num_tokens"] != json.Number("400000") || si["version"] != "0.5.x" {
		t.Errorf("server info %v", si)
	}
	if got := a.takeCalls(); !reflect.DeepEqual(got, []string{"GET /model_info", "GET /v1/models", "GET /server_info"}) {
		t.Errorf("calls %q", got)
	}
}

func TestAdminActionsFanOut(t *testing.T) {
	a, b := newAdminServer(t), newAdminServer(t)
	c := testClient(t, nil, a.URL, b.URL)
	ctx := t.Context()
	steps := []struct {
		name string
		call func() error
		want string
	}{
		{"health", func() error { return c.Health(ctx, "") }, "GET /health"},
		{"health_generate", func() error { return c.HealthGenerate(ctx, "") }, "GET /health_generate"},
		{"abort all", func() error { return c.AbortAll(ctx, "") }, `POST /abort_request {"abort_all":true,"rid":""}`},
		{"abort unknown rid", func() error { return c.AbortRequest(ctx, "r-9") }, `POST /abort_request {"abort_all":false,"rid":"r-9"}`},
		{"pause", func() error { return c.PauseGeneration(ctx, "", PauseRetract) }, `POST /pause_generation {"mode":"retract"}`},
		{"continue", func() error { return c.ContinueGeneration(ctx, "") }, `POST /continue_generation {}`},
		{"flush", func() error { return c.FlushCache(ctx, "") }, "POST /flush_cache"},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, srv := range []*adminServer{a, b} {
			if got := srv.takeCalls(); !reflect.DeepEqual(got, []string{s.want}) {
				t.Errorf("%s: %s saw %q, want %q", s.name, srv.URL, got, s.want)
			}
		}
	}
	// One worker only.
	if err := c.PauseGeneration(ctx, b.URL, PauseInPlace); err != nil {
		t.Fatal(err)
	}
	if len(a.takeCalls()) != 0 || len(b.takeCalls()) != 1 {
		t.Error("a single-server call reached the other worker")
	}
	if err := c.PauseGeneration(ctx, "", "sideways"); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("bad mode: %v", err)
	}
	if err := c.Health(ctx, "http://elsewhere:1"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
}

func TestAdminFailures(t *testing.T) {
	a, b := newAdminServer(t), newAdminServer(t)
	c := testClient(t, nil, a.URL, b.URL)
	ctx := t.Context()

	// /health 503 on one worker: joined error names it and matches ErrUnavailable.
	b.status["/health"] = 503
	err := c.Health(ctx, "")
	var e *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &e) || e.Server != b.URL || strings.Contains(err.Error(), a.URL) {
		t.Errorf("health: %v", err)
	}

	// /flush_cache busy: 400 with SGLang's plain-text message.
	b.status["/flush_cache"] = 400
	b.override["/flush_cache"] = "Flush cache failed.\n"
	if err := c.FlushCache(ctx, b.URL); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "Flush cache failed.") {
		t.Errorf("flush: %v", err)
	}

	// Weight update: success on a, success=false (HTTP 400) on b.
	b.status["/update_weights_from_disk"] = 400
	b.override["/update_weights_from_disk"] = `{"success":false,"message":"Failed to load weights: no such file","num_paused_requests":0}`
	wv := "step_100"
	res, err := c.UpdateWeightsFromDisk(ctx, "", &UpdateWeightsFromDiskRequest{ModelPath: "/ckpt/step_100", WeightVersion: &wv})
	if err == nil || !strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), b.URL) {
		t.Errorf("update weights: %v", err)
	}
	if r := res[a.URL]; !r.Success || r.Message != "Succeeded to update model weights." {
		t.Errorf("worker a: %+v", r)
	}
	if got := a.takeCalls(); len(got) == 0 || got[len(got)-1] != `POST /update_weights_from_disk {"model_path":"/ckpt/step_100","weight_version":"step_100"}` {
		t.Errorf("update body %q", got)
	}
	if _, err := c.UpdateWeightsFromDisk(ctx, "", &UpdateWeightsFromDiskRequest{}); err == nil {
		t.Error("empty model_path accepted")
	}

	// /v1/models with no max_model_len.
	a.override["/v1/models"] = `{"object":"list","data":[]}`
	if _, err := c.MaxModelLen(ctx, a.URL); !errors.Is(err, ErrBadResponse) {
		t.Errorf("MaxModelLen on an empty list: %v", err)
	}

	// Queries fall through to the next server when one fails.
	a.status["/model_info"] = 500
	if mi, err := c.ModelInfo(ctx, ""); err != nil || mi.ModelPath == "" {
		t.Errorf("ModelInfo with the first worker failing: %v", err)
	}
}

// TestAbortRoutesToServingWorker: an in-flight Generate's abort goes only to its worker, with its rid.
func TestAbortRoutesToServingWorker(t *testing.T) {
	a, b := newAdminServer(t), newAdminServer(t)
	gen := newFakeServer(t, replay{status: 200, body: fixture(t, "abort_responses.json", "abort_running_response")})
	gen.block = make(chan struct{})
	gen.entered = make(chan struct{}, 1)
	// One Client whose workers are the generate server and two admin servers; route the episode to gen.
	c := testClient(t, nil, gen.URL, a.URL, b.URL)
	ep := ""
	for i := 0; ep == ""; i++ {
		if e := "ep-" + string(rune('a'+i%26)) + string(rune('a'+i/26)); c.Rank(e)[0] == gen.URL {
			ep = e
		}
	}
	done := make(chan error)
	go func() {
		_, err := c.Generate(t.Context(), ep, testRequest())
		done <- err
	}()
	testutil.Wait(t, "the request to reach the fake server", gen.entered)
	// The fake generate server is not an admin server; the abort must not reach a or b.
	if err := c.AbortRequest(t.Context(), "rollout-42-turn-0"); err != nil {
		t.Fatal(err)
	}
	close(gen.block)
	err, _ := testutil.Recv(t, "Generate to return", done)
	if !errors.Is(err, ErrAborted) {
		t.Errorf("Generate: %v", err)
	}
	if len(a.takeCalls())+len(b.takeCalls()) != 0 {
		t.Error("abort of an in-flight request went to workers not serving it")
	}
	if got := gen.count(); got != 2 {
		t.Errorf("generate server saw %d requests, want the generate and the abort", got)
	}
	if body := gen.bodies[1]; body["rid"] != "rollout-42-turn-0" || body["abort_all"] != false {
		t.Errorf("abort body %v", body)
	}
}

// A Model Gateway lists its models without max_model_len (smg 1.13 answers /v1/models with id, object and
// owned_by only): MaxModelLen then asks a worker the gateway lists, on smg's GET /workers or sglang-router 0.3's
// GET /list_workers, and fails with ErrBadResponse when no worker tells.
func TestMaxModelLenThroughGateway(t *testing.T) {
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":32768}]}`)
	}))
	defer worker.Close()
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"smg", "/workers", `{"workers":[{"id":"x","url":"` + worker.URL + `","is_healthy":true}],"total":1}`, 32768},
		{"sglang-router 0.3", "/list_workers", `{"urls":["` + worker.URL + `"]}`, 32768},
		{"no worker list", "/nothing", `{}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/models":
					io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"local"}]}`)
				case tc.path:
					io.WriteString(w, tc.body)
				default:
					http.NotFound(w, r)
				}
			}))
			defer gw.Close()
			cfg := DefaultConfig()
			cfg.Workers, cfg.Gateway = nil, gw.URL
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n, err := c.MaxModelLen(t.Context(), "")
			if tc.want == 0 {
				if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "max_model_len") {
					t.Fatalf("MaxModelLen = %d, %v; want ErrBadResponse naming max_model_len", n, err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("MaxModelLen = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}
