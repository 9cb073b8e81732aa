package frontdoor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// The adversarial probes of issue 27 against the front door: bad sampling params, sessions whose first call
// fails, reused and guessed session ids, structured output, hostile bodies.

func errParam(resp map[string]any) string {
	e, _ := resp["error"].(map[string]any)
	p, _ := e["param"].(string)
	return p
}

// loggedSampling returns the sampling_params of every /generate request the emulator logged.
func (h *harness) loggedSampling(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(h.log.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r emulator.LogRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Path != "/generate" {
			continue
		}
		var req struct {
			SamplingParams map[string]any `json:"sampling_params"`
		}
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatal(err)
		}
		out = append(out, req.SamplingParams)
	}
	return out
}

// Sampling params SGLang would refuse get a 400 naming the parameter (SGLang's own message), before any session
// is opened and without a request to SGLang: 50 calls with temperature -1 leave max_sessions free.
func TestBadSamplingIsRefusedLocally(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.MaxSessions = 2
	h := newHarness(t, cfg, map[string]any{"enable_thinking": false})
	user := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	for i := range 50 {
		code, resp := h.post(t, fmt.Sprintf("/s/bad-%d/v1/chat/completions", i), map[string]any{"model": "qwen3", "messages": user, "temperature": -1})
		if code != 400 || errCode(resp) != "invalid_request" || errParam(resp) != "temperature" ||
			resp["error"].(map[string]any)["message"] != "temperature must be a non-negative finite number, got -1." {
			t.Fatalf("call %d: %d %v", i, code, resp)
		}
	}
	for _, c := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"top_p": 0}, "top_p"},
		{map[string]any{"top_k": 0}, "top_k"},
		{map[string]any{"min_p": 2}, "min_p"},
		{map[string]any{"presence_penalty": 3}, "presence_penalty"},
		{map[string]any{"frequency_penalty": -2.5}, "frequency_penalty"},
		{map[string]any{"repetition_penalty": 0}, "repetition_penalty"},
		{map[string]any{"stop": strings.Split(strings.Repeat("x,", 33), ",")}, "stop"},
	} {
		body := map[string]any{"model": "qwen3", "messages": user}
		for k, v := range c.body {
			body[k] = v
		}
		if code, resp := h.post(t, "/s/bad/v1/chat/completions", body); code != 400 || errParam(resp) != c.param {
			t.Errorf("%v: %d %v, want a 400 naming %s", c.body, code, resp, c.param)
		}
	}
	// The same through the Messages and Responses APIs.
	if code, resp := h.post(t, "/s/bad/v1/messages", map[string]any{"model": "qwen3", "max_tokens": 16, "temperature": -1, "messages": user}); code != 400 ||
		resp["error"].(map[string]any)["type"] != "invalid_request_error" || !strings.Contains(resp["error"].(map[string]any)["message"].(string), "temperature") {
		t.Errorf("messages: %d %v", code, resp)
	}
	if code, resp := h.post(t, "/s/bad/v1/responses", map[string]any{"model": "qwen3", "top_p": 1.5, "input": "[script:chat] Hi."}); code != 400 || errParam(resp) != "top_p" {
		t.Errorf("responses: %d %v", code, resp)
	}
	if n := len(h.generates(t)) + len(h.loggedSampling(t)); n != 0 {
		t.Fatalf("%d requests reached SGLang", n)
	}
	if n := h.fd.Sessions(); n != 0 {
		t.Fatalf("%d sessions open after refused calls", n)
	}
	for _, id := range []string{"a", "b"} { // max_sessions is free for real sessions
		if code, resp := h.post(t, "/s/"+id+"/v1/chat/completions", chat(user)); code != 200 {
			t.Fatalf("a valid session after the refusals: %d %v", code, resp)
		}
	}
}

// A session whose first call fails after reaching SGLang is not kept: it does not hold a place of max_sessions
// until its idle timeout, and its id can be used again.
func TestFailedFirstCallKeepsNoSession(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.MaxSessions = 2
	h := newHarnessWith(t, cfg, map[string]any{"enable_thinking": false}, nil,
		func(ec *emulator.Config) { ec.Faults.ContextLength = 1 }) // SGLang refuses every request
	user := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	for i := range 10 {
		code, resp := h.post(t, fmt.Sprintf("/s/f-%d/v1/chat/completions", i), chat(user))
		if code != 400 || errCode(resp) != "context_length_exceeded" {
			t.Fatalf("call %d: %d %v, want SGLang's refusal", i, code, resp)
		}
	}
	if n := len(h.loggedSampling(t)); n != 10 {
		t.Fatalf("%d requests reached SGLang, want 10", n)
	}
	if n := h.fd.Sessions(); n != 0 {
		t.Fatalf("%d failed sessions kept open, want none", n)
	}
	if code, resp := h.post(t, "/s/f-0/end", nil); code != 404 || errCode(resp) != "session_not_found" {
		t.Fatalf("end of a session that was never kept: %d %v", code, resp)
	}
}

// With frontdoor.session_ids = "minted", only ids the server minted are served: a caller that guesses or reuses
// another's name gets a 404 and cannot call into or end it.
func TestMintedSessionIDs(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.SessionIDs = frontdoor.SessionIDsMinted
	h := newHarness(t, cfg, map[string]any{"enable_thinking": false})
	code, resp := h.post(t, "/v1/sessions", nil)
	id, _ := resp["session"].(string)
	if code != 200 || !strings.HasPrefix(id, "s-") || len(id) != 34 {
		t.Fatalf("mint: %d %v", code, resp)
	}
	if code, resp := h.post(t, "/v1/sessions", nil); code != 200 || resp["session"] == id {
		t.Fatalf("a second mint: %d %v (want another id)", code, resp)
	}
	user := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	if code, resp := h.post(t, "/s/"+id+"/v1/chat/completions", chat(user)); code != 200 {
		t.Fatalf("a call on the minted id: %d %v", code, resp)
	}
	if code, resp := h.post(t, "/v1/chat/completions", withSessionID(chat(user), id)); code != 200 {
		t.Fatalf("a call on the minted id in the header: %d %v", code, resp)
	}
	for _, path := range []string{"/s/ep-42/v1/chat/completions", "/s/" + id[:len(id)-1] + "x/v1/chat/completions"} {
		code, resp := h.post(t, path, chat(user))
		if code != 404 || errCode(resp) != "session_not_found" || !strings.Contains(resp["error"].(map[string]any)["message"].(string), "POST /v1/sessions") {
			t.Fatalf("%s: %d %v", path, code, resp)
		}
	}
	if code, resp := h.post(t, "/s/ep-42/end", nil); code != 404 {
		t.Fatalf("end of an unminted id: %d %v", code, resp)
	}
	em := h.end(t, id)
	if len(em) != 2 { // the header call forked (a second sample of the first turn)
		t.Fatalf("%d trajectories, want 2", len(em))
	}
	// An anonymous call is its own one-call session, minted or not.
	if code, resp := h.post(t, "/v1/chat/completions", chat(user)); code != 200 {
		t.Fatalf("an anonymous call: %d %v", code, resp)
	}
}

func withSessionID(req map[string]any, id string) map[string]any { req["_session"] = id; return req }

// A reused session id (the same name after the first session ended and was forgotten, as after a restart) never
// names a trajectory already emitted: each session run has its own trajectory ids and default group.
func TestReusedSessionIDGetsNewTrajectoryIDs(t *testing.T) {
	user := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	var ids, groups []string
	for range 2 { // two servers: a restart forgets which sessions ended
		h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
		if code, resp := h.post(t, "/s/dup/v1/chat/completions", chat(user)); code != 200 {
			t.Fatalf("%d %v", code, resp)
		}
		code, out := h.post(t, "/s/dup/end", map[string]any{"reward": 1.0})
		if code != 200 || len(out["trajectories"].([]any)) != 1 {
			t.Fatalf("end: %d %v", code, out)
		}
		h.mu.Lock()
		ids = append(ids, h.emitted[0].TrajectoryID)
		groups = append(groups, h.emitted[0].GroupID)
		h.mu.Unlock()
		if id := out["trajectories"].([]any)[0]; id != ids[len(ids)-1] {
			t.Fatalf("end answered %v, the sink got %s", id, ids[len(ids)-1])
		}
	}
	if ids[0] == ids[1] || groups[0] == groups[1] || !strings.HasPrefix(ids[0], "frontdoor/dup/") || !strings.HasPrefix(ids[1], "frontdoor/dup/") {
		t.Fatalf("trajectory ids %v, groups %v: want two of session dup, distinct", ids, groups)
	}
}

// Structured output: response_format (Chat Completions), text.format (Responses) and output_format (Messages)
// become SGLang's json_schema constraint on the /generate request, as SGLang's own OpenAI server maps them;
// an unsupported format is a 400 naming it.
func TestResponseFormat(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	schema := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "integer"}}, "required": []string{"answer"}}
	const compact = `{"properties":{"answer":{"type":"integer"}},"required":["answer"],"type":"object"}`
	user := []any{map[string]any{"role": "user", "content": "[script:json] What is 2 + 3? Answer in JSON."}}
	for i, c := range []struct {
		path string
		body map[string]any
		want any // the json_schema sent (nil: none)
	}{
		{"/v1/chat/completions", map[string]any{"model": "qwen3", "messages": user,
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "sum", "schema": schema, "strict": true}}}, compact},
		{"/v1/chat/completions", map[string]any{"model": "qwen3", "messages": user, "response_format": map[string]any{"type": "json_object"}}, `{"type": "object"}`},
		{"/v1/chat/completions", map[string]any{"model": "qwen3", "messages": user, "response_format": map[string]any{"type": "text"}}, nil},
		{"/v1/responses", map[string]any{"model": "qwen3", "input": "[script:json] Sum, in JSON.",
			"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "sum", "schema": schema}}}, compact},
		{"/v1/messages", map[string]any{"model": "qwen3", "max_tokens": 64, "messages": user,
			"output_format": map[string]any{"type": "json_schema", "schema": schema}}, compact},
	} {
		code, resp := h.post(t, c.path, c.body)
		if code != 200 {
			t.Fatalf("%d %s: %d %v", i, c.path, code, resp)
		}
		logged := h.loggedSampling(t)
		if got := logged[len(logged)-1]["json_schema"]; got != c.want {
			t.Errorf("%d %s: json_schema %v, want %v", i, c.path, got, c.want)
		}
	}
	code, resp := h.post(t, "/v1/chat/completions", map[string]any{"model": "qwen3", "messages": user, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}})
	if code != 400 || errParam(resp) != "response_format.json_schema.schema" {
		t.Errorf("json_schema without a schema: %d %v", code, resp)
	}
	code, resp = h.post(t, "/v1/chat/completions", map[string]any{"model": "qwen3", "messages": user, "response_format": map[string]any{"type": "grammar"}})
	if code != 400 || errParam(resp) != "response_format.type" {
		t.Errorf("an unknown format: %d %v", code, resp)
	}
	code, resp = h.post(t, "/v1/responses", map[string]any{"model": "qwen3", "input": "x", "text": map[string]any{"format": map[string]any{"type": "json_schema"}}})
	if code != 400 || errParam(resp) != "text.format.schema" {
		t.Errorf("text.format without a schema: %d %v", code, resp)
	}
}

// Held before issue 27, kept: a body nested 100,000 levels deep is a 400, not a crash or a stack overflow, in each
// API; an oversize one is a 413 (TestBadInput).
func TestDeeplyNestedBodies(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), nil)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for _, path := range []string{"/s/n/v1/chat/completions", "/s/n/v1/messages", "/s/n/v1/responses", "/s/n/end"} {
		body := `{"model": "qwen3", "max_tokens": 8, "messages": ` + deep + `, "input": ` + deep + `}`
		resp, err := http.Post(h.srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 && !(path == "/s/n/end" && resp.StatusCode == 404) {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	if code, resp := h.post(t, "/s/after/v1/chat/completions", chat([]any{map[string]any{"role": "user", "content": "[script:chat] Hi."}})); code != 200 {
		t.Fatalf("the server after the nested bodies: %d %v", code, resp)
	}
}
