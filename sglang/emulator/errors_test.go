package emulator

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
)

// Bad input gets SGLang's status codes and bodies (sglang/testdata/fixtures/error_*), never a crash.

func TestErrorFixtures(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.ContextLength = 64
	_, url := start(t, cfg, m.Tokenizer)
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 100 + i
		}
		return out
	}
	tests := []struct {
		name    string
		fixture string
		body    any
		wantMsg string // exact message, when the fixture's is not illustrative
	}{
		{"no input", "error_no_input.json", map[string]any{"sampling_params": map[string]any{}}, "Either text, input_ids or input_embeds should be provided."},
		{"text and ids", "error_no_input.json", map[string]any{"text": "a", "input_ids": []int{1}}, "Either text, input_ids or input_embeds should be provided."},
		{"empty input_ids", "error_no_input.json", map[string]any{"input_ids": []int{}}, "input_ids cannot be empty."},
		{"top_p 0.0", "error_bad_sampling_param.json", `{"input_ids":[1,2],"sampling_params":{"top_p":0.0}}`, "top_p must be in (0, 1], got 0.0."},
		{"top_k 0", "error_bad_sampling_param.json", `{"input_ids":[1,2],"sampling_params":{"top_k":0}}`, "top_k must be -1 (disable) or at least 1, got 0."},
		{"temperature -1", "error_bad_sampling_param.json", `{"input_ids":[1,2],"sampling_params":{"temperature":-1.5}}`, "temperature must be a non-negative finite number, got -1.5."},
		{"max_new_tokens -1", "error_bad_sampling_param.json", `{"input_ids":[1,2],"sampling_params":{"max_new_tokens":-1}}`, "max_new_tokens must be at least 0, got -1."},
		{"repetition_penalty 3", "error_bad_sampling_param.json", `{"input_ids":[1,2],"sampling_params":{"repetition_penalty":3}}`, "repetition_penalty must be in (0, 2] (1.0 = no penalty), got 3."},
		{"input at context length", "error_context_length.json", map[string]any{"input_ids": ids(64)}, "The input (64 tokens) is longer than the model's context length (64 tokens)."},
		{"input + max_new_tokens", "error_total_tokens.json", map[string]any{"input_ids": ids(33), "sampling_params": map[string]any{"max_new_tokens": 40}}, "Requested token count exceeds the model's maximum context length of 64 tokens. You requested a total of 73 tokens: 33 tokens from the input messages and 40 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit."},
		{"logprob_start_len too large", "error_context_length.json", map[string]any{"rid": "r", "input_ids": ids(5), "return_logprob": true, "logprob_start_len": 9, "sampling_params": map[string]any{"max_new_tokens": 4}}, "req.logprob_start_len=9 is higher than the number of input tokens len(req.origin_input_ids)=5. Please use a smaller logprob_start_len."},
		{"text is a number", "error_request_validation.json", map[string]any{"text": 123}, ""},
		{"input_ids of strings", "error_request_validation.json", map[string]any{"input_ids": []string{"a"}}, ""},
		{"input_ids a float", "error_request_validation.json", `{"input_ids":[1.5]}`, ""},
		{"stream not a bool", "error_request_validation.json", map[string]any{"input_ids": []int{1}, "stream": "yes"}, ""},
		{"invalid JSON", "error_request_validation.json", `{"input_ids": [1,`, ""},
		{"body not an object", "error_request_validation.json", `[1,2,3]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := refFixture(t, tt.fixture)
			r := post(t, url, "/generate", tt.body)
			if want := int(fx["status"].(float64)); r.status != want {
				t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
			}
			checkShape(t, tt.name, fx["body"], r.body)
			if tt.wantMsg != "" {
				var b struct {
					Error struct{ Message string } `json:"error"`
				}
				_ = json.Unmarshal(r.body, &b)
				if b.Error.Message != tt.wantMsg {
					t.Errorf("message\n got %q\nwant %q", b.Error.Message, tt.wantMsg)
				}
			}
		})
	}
}

// TestTotalTokensAtContextLength: input + max_new_tokens equal to the context length is served, as SGLang 0.5.23's
// TokenizerManager._validate_one_request refuses only a total above it (a client that clamps max_new_tokens to the
// room left, as the agent loop does, sends exactly that on its last turn).
func TestTotalTokensAtContextLength(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.ContextLength = 64
	_, url := start(t, cfg, m.Tokenizer)
	ids := make([]int, 33)
	for i := range ids {
		ids[i] = 100 + i
	}
	if r := post(t, url, "/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 31}}); r.status != 200 {
		t.Fatalf("33 + 31 = 64 tokens: status %d: %s", r.status, r.body)
	}
	if r := post(t, url, "/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 32}}); r.status != 400 {
		t.Fatalf("33 + 32 = 65 tokens: status %d, want 400: %s", r.status, r.body)
	}
}

func TestErrorUnknownSamplingKey(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	// SGLang 0.5.23's contract gate: 400 {"error": serde's unknown_field text}, the first unknown key in the
	// body's order (sglang/contract_test.go judges the same body with SGLang's own api_types).
	r := post(t, url, "/generate", map[string]any{"input_ids": []int{1, 2}, "sampling_params": map[string]any{"seed": 1}})
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); r.status != http.StatusBadRequest || err != nil ||
		!strings.HasPrefix(body.Error, "unknown field `seed`, expected one of `max_new_tokens`, `stop`, ") || !strings.HasSuffix(body.Error, "`watermark`, `choice`") {
		t.Errorf("unknown sampling key: %d %q", r.status, r.body)
	}
	r = post(t, url, "/generate", map[string]any{"input_ids": []int{1, 2}, "sampling_params": json.RawMessage(`{"zz": 1, "temperature": 0, "aa": 2}`)})
	if err := json.Unmarshal(r.body, &body); r.status != http.StatusBadRequest || err != nil || !strings.HasPrefix(body.Error, "unknown field `zz`,") {
		t.Errorf("two unknown sampling keys: %d %q; want the first in the body's order", r.status, r.body)
	}
	if r := get(t, url, "/health"); r.status != http.StatusOK {
		t.Errorf("server unhealthy after a bad request: %d", r.status)
	}
}

func TestErrorStream(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.ContextLength = 64
	_, url := start(t, cfg, m.Tokenizer)
	ids := make([]int, 64)

	// a ValueError in a streaming request: HTTP 200, an error event, [DONE]
	r := post(t, url, "/generate", map[string]any{"input_ids": ids, "stream": true})
	want := refSSE(t, "error_stream_valueerror.txt")
	got := sseEvents(t, r.body)
	if r.status != http.StatusOK || len(got) != 2 || got[1] != "[DONE]" {
		t.Fatalf("stream ValueError: %d %q", r.status, r.body)
	}
	var w any
	_ = json.Unmarshal([]byte(want[0]), &w)
	checkShape(t, "stream ValueError", w, []byte(got[0]))
	if got[0] != want[0] {
		// the fixture's numbers are 40960/40960; ours are 64/64
		exp := strings.ReplaceAll(want[0], "40960", "64")
		if got[0] != exp {
			t.Errorf("event\n got %s\nwant %s", got[0], exp)
		}
	}

	// a scheduler-side abort (logprob_start_len) in a stream: a chunk with finish_reason abort 400, [DONE]
	r = post(t, url, "/generate", map[string]any{"rid": "rollout-42-turn-0", "input_ids": []int{1, 2, 3}, "stream": true, "return_logprob": true, "logprob_start_len": 40})
	want = refSSE(t, "error_scheduler_abort_400_stream.txt")
	got = sseEvents(t, r.body)
	if r.status != http.StatusOK || len(got) != 2 || got[1] != "[DONE]" {
		t.Fatalf("stream scheduler abort: %d %q", r.status, r.body)
	}
	_ = json.Unmarshal([]byte(want[0]), &w)
	checkShape(t, "stream scheduler abort", w, []byte(got[0]))
	var g gen
	_ = json.Unmarshal([]byte(got[0]), &g)
	f := g.finish()
	if f["status_code"] != float64(400) || f["err_type"] != "BadRequestError" || g.num("prompt_tokens") != 1 {
		t.Errorf("stream scheduler abort: %s", got[0])
	}
}

func TestErrorFlushCacheBusy(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.Latency.Fixed = 1 << 40 // holds the request in prefill until it is aborted
	srv, url := start(t, cfg, m.Tokenizer)
	if r := post(t, url, "/flush_cache", nil); r.status != http.StatusOK || !strings.HasPrefix(string(r.body), "Cache flushed.\n") || !strings.HasPrefix(r.ctype, "text/plain") {
		t.Fatalf("idle flush: %d %s %q", r.status, r.ctype, r.body)
	}
	done := make(chan httpResult)
	go func() { done <- post(t, url, "/generate", map[string]any{"rid": "busy", "input_ids": []int{1, 2, 3}}) }()
	waitFor(t, `srv.busy() == 1`, func() bool { return srv.busy() == 1 })
	if r := post(t, url, "/flush_cache", nil); r.status != http.StatusBadRequest || string(r.body) != "Flush cache failed.\n" {
		t.Errorf("busy flush: %d %q", r.status, r.body)
	}
	post(t, url, "/abort_request", map[string]any{"rid": "busy"})
	if r, _ := testutil.Recv(t, "the busy request to answer", done); r.status != http.StatusOK {
		t.Errorf("aborted request: %d %s", r.status, r.body)
	}
}

// TestBadInputNeverCrashes throws malformed bodies at every endpoint: each gets a 4xx/5xx or 200, and the
// server stays healthy.
func TestBadInputNeverCrashes(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	bodies := []string{"", "null", "{", "[]", `"x"`, "123", `{"input_ids": null}`, `{"input_ids": [[]]}`, `{"input_ids": [[1],[]]}`,
		`{"input_ids": [1], "sampling_params": []}`, `{"input_ids": [1], "sampling_params": [{"max_new_tokens": 1}, {}]}`,
		`{"input_ids": [[1],[2]], "rid": ["a"]}`, `{"input_ids": [[1],[2]], "rid": ["a", "a"]}`, `{"input_ids": [1], "rid": 5}`,
		`{"input_ids": [1], "logprob_start_len": "x"}`, `{"input_ids": [1], "return_logprob": true, "logprob_start_len": -7}`,
		`{"input_ids": [1], "top_logprobs_num": 3, "return_logprob": true}`, `{"input_ids": [1], "token_ids_logprob": [5, 6], "return_logprob": true, "logprob_start_len": 0}`,
		`{"input_ids": [-5, 2147483647]}`, `{"input_ids": [1], "sampling_params": {"n": 0}}`, `{"input_ids": [1], "sampling_params": {"max_new_tokens": "many"}}`,
		`{"input_ids": [1], "sampling_params": {"stop": 5}}`, `{"input_ids": [1], "sampling_params": {"max_new_tokens": 0}}`,
		`{"input_ids": [1], "sampling_params": {"max_new_tokens": null, "ignore_eos": true}}`, `{"input_ids": [1e400]}`,
		`{"text": ["a", 1]}`, `{"input_embeds": [[0.1]]}`, `{"input_ids": [1], "stream": true, "sampling_params": {"top_p": 2}}`,
	}
	paths := []string{"/generate", "/abort_request", "/pause_generation", "/continue_generation", "/update_weights_from_disk", "/update_weight_version", "/tokenize", "/detokenize", "/flush_cache?timeout=x"}
	for _, p := range paths {
		for i, b := range bodies {
			r := post(t, url, p, b)
			if r.status != http.StatusOK && (r.status < 400 || r.status > 599) {
				t.Errorf("%s body %d %q: status %d", p, i, b, r.status)
			}
			if p == "/generate" && r.status >= 400 && r.status != 500 && !json.Valid(r.body) {
				t.Errorf("%s body %d %q: %d with a non-JSON body %q", p, i, b, r.status, r.body)
			}
		}
		post(t, url, "/continue_generation", nil)
	}
	if r := get(t, url, "/health"); r.status != http.StatusOK {
		t.Fatalf("unhealthy after bad input: %d", r.status)
	}
	if g := generate(t, url, map[string]any{"input_ids": []int{1, 2, 3}, "sampling_params": map[string]any{"max_new_tokens": 3}}); len(g.OutputIDs) != 3 {
		t.Errorf("after bad input: %v", g.OutputIDs)
	}
}

func TestParseLatencyAndFaults(t *testing.T) {
	l, err := ParseLatency("50ms,20us,5ms")
	if err != nil || l.Fixed.String() != "50ms" || l.PerPromptToken.String() != "20µs" || l.PerOutputToken.String() != "5ms" {
		t.Errorf("ParseLatency: %+v %v", l, err)
	}
	if l, err = ParseLatency("output=1ms"); err != nil || l.PerOutputToken.String() != "1ms" || l.Fixed != 0 {
		t.Errorf("ParseLatency keyed: %+v %v", l, err)
	}
	for _, bad := range []string{"x", "1ms,2ms,3ms,4ms", "warp=1ms", "-1ms"} {
		if _, err := ParseLatency(bad); err == nil {
			t.Errorf("ParseLatency(%q): no error", bad)
		}
	}
	f, err := ParseFaults("503=0.1,reset=0.2,stall_for=2s")
	if err != nil || f.HTTP503 != 0.1 || f.Reset != 0.2 || f.StallFor.String() != "2s" {
		t.Errorf("ParseFaults: %+v %v", f, err)
	}
	if f, err = ParseFaults("0.6"); err != nil || math.Abs(f.HTTP500-0.1) > 1e-12 || math.Abs(f.total()-0.6) > 1e-12 {
		t.Errorf("ParseFaults single: %+v %v", f, err)
	}
	for _, bad := range []string{"2", "503", "503=x", "boom=0.1", "503=1.5"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q): no error", bad)
		}
	}
	c := DefaultConfig()
	c.Faults = Faults{HTTP503: 0.7, Reset: 0.7}
	if err := c.Validate(); err == nil {
		t.Error("fault rates summing over 1 validate")
	}
}
