package frontdoor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// These tests check that the front door makes its model calls as the episode loop does (through turn.Model).

// sentSampling returns the sampling_params of every /generate request the emulator logged.
func (h *harness) sentSampling(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range h.records(t, "/generate") {
		var body struct {
			Sampling map[string]any `json:"sampling_params"`
		}
		if err := json.Unmarshal(r.Request, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.Sampling)
	}
	return out
}

// TestAgentSamplingReachesSGLang: every sampling param of the front door's agent reaches SGLang (the agent
// supplies the defaults, docs/frontdoor.md), not only the ones the OpenAI request has fields for; a call's own
// parameters override them. The front door used to copy ten of them: stop_token_ids, min_new_tokens, json_schema,
// logit_bias, ... were lost.
func TestAgentSamplingReachesSGLang(t *testing.T) {
	schema := `{"type": "object"}`
	one, k := 1, 40
	h := newHarnessWith(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false}, func(ac *config.Agent) {
		ac.Sampling.StopTokenIDs = []int32{151643}
		ac.Sampling.MinNewTokens = &one
		ac.Sampling.JSONSchema = &schema
		ac.Sampling.LogitBias = map[string]float64{"11": -0.5}
		ac.Sampling.TopK = &k
	})
	body := chat([]any{map[string]any{"role": "user", "content": "[script:chat] Hi."}})
	body["temperature"] = 0.25
	if code, resp := h.post(t, "/s/samp/v1/chat/completions", body); code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	sent := h.sentSampling(t)
	if len(sent) != 1 {
		t.Fatalf("%d /generate requests, want 1", len(sent))
	}
	want := map[string]any{"min_new_tokens": 1.0, "json_schema": schema, "logit_bias": map[string]any{"11": -0.5}, "top_k": 40.0,
		"temperature": 0.25} // the call's temperature over the agent's
	for key, v := range want {
		if !reflect.DeepEqual(sent[0][key], v) {
			t.Errorf("%s sent as %#v, want %#v", key, sent[0][key], v)
		}
	}
	var ids []float64
	for _, id := range sent[0]["stop_token_ids"].([]any) {
		ids = append(ids, id.(float64))
	}
	if !slices.Contains(ids, 151643) {
		t.Errorf("stop_token_ids sent as %v: the agent's 151643 is missing", ids)
	}
}

// TestCallWaitsWhilePaused: a front-door call holds while serve is paused for a weight update, as an episode's
// turn does, and goes on once it resumes.
func TestCallWaitsWhilePaused(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	h.gate.Close()
	body, _ := json.Marshal(chat([]any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}))
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(h.srv.URL+"/s/paused/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	testutil.Until(t, "the call to wait at the closed gate", func() bool { return h.gate.Waiting() == 1 })
	if n := len(h.sentSampling(t)); n != 0 {
		t.Fatalf("%d /generate requests while paused", n)
	}
	h.gate.Open()
	if code, _ := testutil.Recv(t, "the call to finish after the pause", done); code != 200 {
		t.Fatalf("call after the pause: %d", code)
	}
	if n := len(h.sentSampling(t)); n != 1 {
		t.Fatalf("%d /generate requests after the pause, want 1", n)
	}
}

// TestToolsRenderAlikeAcrossAPIs: one tool, declared through chat completions, the Anthropic Messages API and the
// Responses API, renders the same prompt: each API's tools become OpenAI function specs in one key order (the
// template writes them as JSON, so a different order was a different prompt).
func TestToolsRenderAlikeAcrossAPIs(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	fn := addTool[0].(map[string]any)["function"].(map[string]any)
	const prompt = "[script:chat] Hi."
	params, _ := json.Marshal(fn["parameters"])
	calls := []struct {
		path string
		body map[string]any
	}{
		// As the OpenAI SDKs send it: "type" first, then the function's name, description and parameters.
		{"/s/a1/v1/chat/completions", map[string]any{"model": "qwen3", "messages": []any{map[string]any{"role": "user", "content": prompt}},
			"tools": []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "add", "description": "Add two integers.", "parameters": ` + string(params) + `}}`)}}},
		{"/s/a2/v1/messages", map[string]any{"model": "qwen3", "max_tokens": 64, "messages": []any{map[string]any{"role": "user", "content": prompt}},
			"tools": []any{map[string]any{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}}}},
		{"/s/a3/v1/responses", map[string]any{"model": "qwen3", "input": prompt,
			"tools": []any{map[string]any{"type": "function", "name": fn["name"], "description": fn["description"], "parameters": fn["parameters"]}}}},
	}
	for _, c := range calls {
		if code, resp := h.post(t, c.path, c.body); code != 200 {
			t.Fatalf("%s: %d %v", c.path, code, resp)
		}
	}
	var inputs [][]int32
	for _, r := range h.records(t, "/generate") {
		var req sglang.GenerateRequest
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, req.InputIDs)
	}
	if len(inputs) != 3 {
		t.Fatalf("%d /generate requests, want 3", len(inputs))
	}
	for i, api := range []string{"Anthropic Messages", "Responses"} {
		if !slices.Equal(inputs[i+1], inputs[0]) {
			t.Errorf("the %s API's prompt (%d tokens) differs from chat completions' (%d tokens) for the same tool", api, len(inputs[i+1]), len(inputs[0]))
		}
	}
}

// TestCallIDsOfTheFamilysForm: a tool call the model wrote without an id gets one of the form the family's template
// takes, as the agent loop gives it (Mistral's templates raise unless ids are 9 alphanumerics), so the caller's
// next call, which sends the id back with the tool's result, renders. The front door used to make call_... ids for
// every family: Mistral's template refused the second call.
func TestCallIDsOfTheFamilysForm(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), nil) // its emulator and request log
	src, err := os.ReadFile(filepath.Join("..", "..", "tito", "testdata", "families", "mistral-small-3.2", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	m := *qwen3 // Mistral Small 3.2's template over the Qwen3 vocabulary: the template and parser are what matter
	m.TemplateSource, m.TemplateFile, m.NamedTemplates = string(src), tito.FileChatTemplate, nil
	tmpl, err := m.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := parsers.WasmConfig("mistral")
	mod, err := host.Load(context.Background(), plugin.Spec{Name: "builtin:parser:mistral", Wasm: parsers.Wasm(), Trusted: true, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	parser, _ := mod.Parser()
	scfg := sglang.DefaultConfig()
	scfg.Workers = []string{h.emuURL}
	client, err := sglang.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	fcfg := defaultConfig(frontdoor.DriftReject)
	fcfg.Enabled, fcfg.Agent = true, "mistral"
	fd, err := frontdoor.New(fcfg, frontdoor.Model{Name: "mistral", Sampling: turn.Sampling{MaxNewTokens: 256},
		Turn: &turn.Model{Generator: client, Tokenizer: qwen3.Tokenizer, Template: tmpl, Parser: parser, StopIDs: qwen3.StopIDs,
			ContextWindow: 1 << 15, Reasoning: family.ReasoningNone, CallIDs: family.CallIDAlnum9}},
		func(context.Context, frontdoor.Emitted) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fd.Handler())
	t.Cleanup(srv.Close)
	h.srv = srv // post through h to the Mistral front door
	msgs := []any{map[string]any{"role": "user", "content": "[script:mistral] What is 2 + 3?"}}
	body := chat(msgs)
	body["model"] = "mistral"
	code, resp := h.post(t, "/s/m1/v1/chat/completions", body)
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	msg := reply(t, resp)
	calls, _ := msg["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("want one tool call, got %v", resp)
	}
	id, _ := calls[0].(map[string]any)["id"].(string)
	if !family.CallIDAlnum9.Valid(id) {
		t.Fatalf("call id %q: Mistral's template takes 9 alphanumerics", id)
	}
	body = chat(append(msgs, msg, map[string]any{"role": "tool", "tool_call_id": id, "content": "5"}))
	body["model"] = "mistral"
	if code, resp := h.post(t, "/s/m1/v1/chat/completions", body); code != 200 || reply(t, resp)["content"] != "2 + 3 = 5." {
		t.Fatalf("the call that sends the id back: %d %v", code, resp)
	}
}
