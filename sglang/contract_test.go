package sglang_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// TestSGLangContract holds the client and the emulator to SGLang's own contract. It records every HTTP exchange
// the client makes with the emulator (every endpoint agentrt calls) plus raw requests that SGLang refuses, and
// pipes them to testdata/contract/validate.py, which judges them with SGLang 0.5.23's generated API types
// (sglang/api/v1/api_types.py), its io_struct request types and its http_server handlers' status codes and
// bodies. A drift between agentrt and SGLang fails here.
//
// The validator runs in $AGENTRT_SGLANG_PYTHON (scripts/setup.d/35-sglang-types.sh); without it the test skips,
// except under CI=true, where it fails.
func TestSGLangContract(t *testing.T) {
	py := os.Getenv("AGENTRT_SGLANG_PYTHON")
	if _, err := os.Stat(py); py == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AGENTRT_SGLANG_PYTHON=%q is missing: run make setup (scripts/setup.d/35-sglang-types.sh)", py)
		}
		t.Skipf("AGENTRT_SGLANG_PYTHON=%q is missing: run make setup and source ~/.cache/agentrt/env.sh", py)
	}
	tok := qwenTokenizer(t)
	srv, err := emulator.New(emulator.DefaultConfig(), tok)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: srv}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	c := newClient(t, nil, hs.URL)
	ctx := t.Context()
	prompt := qwenPrompt(tok, "Say hello.")

	// The client's calls, as agentrt makes them.
	rec.step("generate: first turn (no prompt logprobs)")
	mustGen(t, c, &sglang.GenerateRequest{InputIDs: prompt, SamplingParams: sglang.SamplingParams{MaxNewTokens: 64},
		ReturnLogprob: true, LogprobStartLen: -1, RID: "contract.0"})
	rec.step("generate: later turn (logprobs from logprob_start_len)")
	resp := mustGen(t, c, &sglang.GenerateRequest{InputIDs: prompt, SamplingParams: sglang.SamplingParams{MaxNewTokens: 64},
		ReturnLogprob: true, LogprobStartLen: len(prompt) - 3, RID: "contract.1"})
	if resp.MetaInfo.CachedTokens == 0 {
		t.Errorf("the second identical prompt found nothing in the radix cache")
	}
	rec.step("generate: every sampling param")
	mustGen(t, c, &sglang.GenerateRequest{InputIDs: prompt, SamplingParams: allSamplingParams(), ReturnLogprob: true,
		LogprobStartLen: -1, TopLogprobsNum: 2, ReturnTextInLogprobs: true, RID: "contract.2"})
	rec.step("generate: text, no logprobs")
	mustGen(t, c, &sglang.GenerateRequest{Text: "Hello", SamplingParams: sglang.SamplingParams{MaxNewTokens: 8}})
	for _, step := range []struct {
		name string
		call func() error
	}{
		{"health", func() error { return c.Health(ctx, "") }},
		{"health_generate", func() error { return c.HealthGenerate(ctx, "") }},
		{"model_info", func() error { _, err := c.ModelInfo(ctx, hs.URL); return err }},
		{"server_info", func() error { _, err := c.ServerInfo(ctx, hs.URL); return err }},
		{"v1/models", func() error { _, err := c.Models(ctx, hs.URL); return err }},
		{"abort_request: one rid", func() error { return c.AbortRequest(ctx, "contract.none") }},
		{"abort_request: all", func() error { return c.AbortAll(ctx, "") }},
		{"pause_generation: default mode", func() error { return c.PauseGeneration(ctx, "", "") }},
		{"continue_generation", func() error { return c.ContinueGeneration(ctx, "") }},
		{"pause_generation: retract", func() error { return c.PauseGeneration(ctx, "", sglang.PauseRetract) }},
		{"continue_generation", func() error { return c.ContinueGeneration(ctx, "") }},
		{"pause_generation: in_place", func() error { return c.PauseGeneration(ctx, "", sglang.PauseInPlace) }},
		{"continue_generation", func() error { return c.ContinueGeneration(ctx, "") }},
		{"flush_cache", func() error { return c.FlushCache(ctx, "") }},
		{"v1/loads (the adaptive limit's signal)", func() error { _, err := c.Loads(ctx, hs.URL); return err }},
		{"update_weights_from_disk", func() error {
			v := "step-2"
			_, err := c.UpdateWeightsFromDisk(ctx, "", &sglang.UpdateWeightsFromDiskRequest{ModelPath: "/models/step-2", WeightVersion: &v})
			return err
		}},
	} {
		rec.step(step.name)
		if err := step.call(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}

	// Requests SGLang refuses: the emulator must answer with SGLang's status and body. (A sampling param of the
	// wrong type, which only SGLang 0.5.23's contract gate refuses, still gets the older TypeError's 500.)
	good := func(mut func(m map[string]any)) string {
		m := map[string]any{"input_ids": prompt, "sampling_params": map[string]any{"max_new_tokens": 8}}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, bad := range []struct{ name, body string }{
		{"refused: input_ids not integers", good(func(m map[string]any) { m["input_ids"] = []any{"a", "b"} })},
		{"refused: return_logprob not a boolean", good(func(m map[string]any) { m["return_logprob"] = "yes" })},
		{"refused: unknown sampling param", good(func(m map[string]any) { m["sampling_params"] = map[string]any{"max_new_tokens": 8, "seed": 1} })},
		{"refused: logprob_start_len past the prompt", good(func(m map[string]any) {
			m["return_logprob"] = true
			m["logprob_start_len"] = len(prompt) + 5
		})},
	} {
		rec.step(bad.name)
		r, err := http.Post(hs.URL+"/generate", "application/json", strings.NewReader(bad.body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}

	// Endpoints a gateway or an operator reads, which agentrt's emulator serves as SGLang does.
	for _, g := range []struct{ name, path string }{
		{"ready", "/ready"},
		{"v1/loads: every section", "/v1/loads"},
		{"refused: v1/loads with an unknown section", "/v1/loads?include=core,bogus"},
	} {
		rec.step(g.name)
		r, err := http.Get(hs.URL + g.path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}

	path := filepath.Join(t.TempDir(), "exchanges.jsonl")
	rec.write(t, path)
	// Our list of SGLang's sampling params, for the validator to compare with api_types.SamplingParams.
	names, _ := json.Marshal(map[string]any{"sampling_param_names": sglang.SamplingParamNames})
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(names, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command(py, filepath.Join("testdata", "contract", "validate.py"), path)
	out, err := cmd.CombinedOutput()
	t.Logf("validate.py:\n%s", out)
	if err != nil {
		t.Fatalf("SGLang's contract refused some exchanges (%d recorded in %s): %v", len(rec.ex), path, err)
	}
}

// allSamplingParams sets every sampling parameter agentrt can send, so the contract judges each one.
func allSamplingParams() sglang.SamplingParams {
	return sglang.SamplingParams{
		MaxNewTokens: 16, Temperature: new(0.7), TopP: new(0.9), TopK: new(20), MinP: new(0.05),
		FrequencyPenalty: new(0.1), PresencePenalty: new(0.1), RepetitionPenalty: new(1.05), MinNewTokens: new(1),
		Stop: []string{"\n\n"}, StopTokenIDs: []int32{151643}, IgnoreEOS: false, SkipSpecialTokens: new(false),
		SpacesBetweenSpecialTokens: new(true), NoStopTrim: true, SamplingSeed: new(int64(7)),
		Extra: map[string]any{"stop_regex": []string{"^$"}, "logit_bias": map[string]float64{"9707": 0.5},
			"stream_interval": 4, "custom_params": map[string]any{"k": 1}, "n": 1, "watermark": map[string]any{"enabled": false},
			"choice": []string{}},
	}
}

func mustGen(t *testing.T, c *sglang.Client, req *sglang.GenerateRequest) *sglang.GenerateResponse {
	t.Helper()
	resp, err := c.Generate(t.Context(), "contract", req)
	if err != nil {
		t.Fatalf("generate %s: %v", req.RID, err)
	}
	return resp
}

// exchange is one recorded HTTP request and its response, as validate.py reads them.
type exchange struct {
	Name        string `json:"name"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	Query       string `json:"query"`
	Request     string `json:"request"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Response    string `json:"response"`
}

// recorder passes requests to next and records each exchange under the current step's name.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	name string
	ex   []exchange
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	rw := httptest.NewRecorder()
	r.next.ServeHTTP(rw, req)
	for k, v := range rw.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.Code)
	_, _ = w.Write(rw.Body.Bytes())
	r.mu.Lock()
	r.ex = append(r.ex, exchange{Name: r.name, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Request: string(body),
		Status: rw.Code, ContentType: rw.Header().Get("Content-Type"), Response: rw.Body.String()})
	r.mu.Unlock()
}

// step names the exchanges that follow.
func (r *recorder) step(name string) {
	r.mu.Lock()
	r.name = name
	r.mu.Unlock()
}

func (r *recorder) write(t *testing.T, path string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range r.ex {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
