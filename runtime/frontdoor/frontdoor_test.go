package frontdoor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testmodel"
	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// These tests serve the real Qwen3 tokenizer and chat template, the built-in hermes Wasm parser and the SGLang
// emulator (over HTTP, scripted replies) behind the front door, and check every emitted trajectory against the
// emulator's request log: each reply is a logged /generate output verbatim (ids and logprobs), each request's
// input_ids are the trajectory up to that reply, and a session's requests extend each other.

var (
	qwen3 *tito.Model
	host  *plugin.Host
)

func TestMain(m *testing.M) { testmodel.Main(m, "frontdoor", &qwen3, &host) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.b.Bytes())
}

type harness struct {
	fd      *frontdoor.Server
	srv     *httptest.Server
	emuURL  string
	log     *syncBuffer
	mu      sync.Mutex
	emitted []frontdoor.Emitted
	// emits gets every emitted trajectory too, for tests that wait on one.
	emits chan frontdoor.Emitted
	// generating gets a value when the emulator receives a /generate request.
	generating chan struct{}
	// gate is the pause gate of the agent's model calls (open unless a test closes it).
	gate *turn.Gate
}

// script is the emulator's scripted replies, keyed by the [script:KEY] marker of a conversation's task.
const script = `{"key": "calc", "replies": ["<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>", "2 + 3 = 5.", "Anything else?"]}
{"key": "think", "replies": ["<think>\nI should add them.\n</think>\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>", "<think>\nThe tool said 5.\n</think>\n\nThe sum is 5.", "<think>\nDone.\n</think>\n\nBye."]}
{"key": "boxed", "replies": ["The answer is \\\\boxed{5}."]}
{"key": "chat", "replies": ["Hello! How can I help?", "Paris is the capital of France.", "You are welcome."]}
{"key": "mistral", "replies": ["[TOOL_CALLS]add[ARGS]{\"a\": 2, \"b\": 3}", "2 + 3 = 5."]}
{"key": "json", "replies": ["{\"answer\": 5}"]}
`

func newHarness(t testing.TB, cfg frontdoor.Config, kwargs map[string]any) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, kwargs, nil)
}

// newHarnessWith is newHarness with changes to the agent's config (nil: none).
func newHarnessWith(t testing.TB, cfg frontdoor.Config, kwargs map[string]any, edit func(*config.Agent), emuEdits ...func(*emulator.Config)) *harness {
	t.Helper()
	return newModelHarness(t, cfg, kwargs, edit, qwen3, script, emuEdits...)
}

// newModelHarness is newHarnessWith for another model and script (the agent's model folder is the model's).
func newModelHarness(t testing.TB, cfg frontdoor.Config, kwargs map[string]any, edit func(*config.Agent), model *tito.Model, script string,
	emuEdits ...func(*emulator.Config)) *harness {
	t.Helper()
	h := &harness{log: &syncBuffer{}, emits: make(chan frontdoor.Emitted, 100), gate: &turn.Gate{}}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ec.StopIDs, ec.VocabSize = model.StopIDs, model.Tokenizer.VocabSize()
	for _, e := range emuEdits {
		e(&ec)
	}
	sc, err := emulator.ParseScript(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.New(ec, model.Tokenizer, emulator.WithLog(h.log), emulator.WithScript(sc))
	if err != nil {
		t.Fatal(err)
	}
	h.generating = make(chan struct{}, 100)
	esrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/generate" {
			select {
			case h.generating <- struct{}{}:
			default:
			}
		}
		emu.ServeHTTP(w, r)
	}))
	t.Cleanup(esrv.Close)
	h.emuURL = esrv.URL
	scfg := sglang.DefaultConfig()
	scfg.Workers = []string{esrv.URL}
	client, err := sglang.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ac := config.DefaultAgent()
	ac.Name, ac.Model, ac.ChatTemplateKwargs = "qwen3", model.Dir, kwargs
	if edit != nil {
		edit(&ac)
	}
	a, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: client, Model: model,
		MaxModelLen: func(ctx context.Context) (int, error) { return client.MaxModelLen(ctx, "") }, Server: esrv.URL, Gate: h.gate})
	if err != nil {
		t.Fatal(err)
	}
	m, err := system.FrontdoorModel(a)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Enabled, cfg.Agent = true, "qwen3"
	h.fd, err = frontdoor.New(cfg, m, func(ctx context.Context, e frontdoor.Emitted) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.emitted = append(h.emitted, e)
		select {
		case h.emits <- e:
		default: // a benchmark's thousands of sessions: nobody waits on them
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.fd.Handler())
	t.Cleanup(h.srv.Close)
	return h
}

func defaultConfig(policy string) frontdoor.Config {
	c := frontdoor.DefaultConfig()
	c.Drift = policy
	return c
}

// post sends body as JSON and decodes the answer.
func (h *harness) post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	session := ""
	if m, ok := body.(map[string]any); ok {
		session, _ = m["_session"].(string)
		delete(m, "_session")
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", h.srv.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(frontdoor.SessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %d %s: not JSON: %v", path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

var addTool = []any{map[string]any{"type": "function", "function": map[string]any{"name": "add", "description": "Add two integers.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"}},
		"required": []string{"a", "b"}}}}}

func chat(msgs []any) map[string]any {
	return map[string]any{"model": "qwen3", "messages": msgs, "tools": addTool}
}

// reply returns the assistant message of a chat.completion, as a caller appends it to its history.
func reply(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	choices, _ := resp["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("want one choice, got %v", resp)
	}
	return choices[0].(map[string]any)["message"].(map[string]any)
}

func (h *harness) end(t *testing.T, session string) []frontdoor.Emitted {
	t.Helper()
	code, out := h.post(t, "/s/"+session+"/end", map[string]any{"reward": 1.0, "group_id": "g-" + session})
	if code != 200 {
		t.Fatalf("end %s: %d %v", session, code, out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []frontdoor.Emitted
	for _, e := range h.emitted {
		if e.Session == session {
			got = append(got, e)
		}
	}
	return got
}

// logged is one /generate call of the emulator's request log.
type logged struct {
	input, output []int32
	logprobs      []float64
}

// records returns the emulator's log records of one path.
func (h *harness) records(t *testing.T, path string) []emulator.LogRecord {
	t.Helper()
	var out []emulator.LogRecord
	for _, line := range bytes.Split(h.log.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r emulator.LogRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (h *harness) generates(t *testing.T) []logged {
	t.Helper()
	var out []logged
	for _, r := range h.records(t, "/generate") {
		if r.Status != 200 {
			continue
		}
		var req sglang.GenerateRequest
		var resp sglang.GenerateResponse
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Response, &resp); err != nil {
			t.Fatal(err)
		}
		l := logged{input: req.InputIDs, output: resp.OutputIDs}
		for _, e := range resp.MetaInfo.OutputTokenLogprobs {
			l.logprobs = append(l.logprobs, e.Logprob)
		}
		out = append(out, l)
	}
	return out
}

// check verifies a trajectory against the request log: aligned arrays, every response segment a logged call's
// output verbatim after exactly the trajectory before it, logprobs bit for bit; it returns how many calls matched.
func (h *harness) check(t *testing.T, tr *tito.Trajectory) {
	t.Helper()
	if err := tr.Validate(); err != nil {
		t.Fatalf("%s: %v", tr.ID, err)
	}
	calls := h.generates(t)
	for _, seg := range tr.Segments {
		if seg.Kind != tito.KindResponse {
			continue
		}
		before, out := tr.TokenIDs[:seg.Offset], tr.TokenIDs[seg.Offset:seg.Offset+seg.Length]
		found := false
		for _, c := range calls {
			if slices.Equal(c.input, before) && slices.Equal(c.output, out) {
				found = true
				for i, lp := range c.logprobs {
					if math.Float64bits(lp) != math.Float64bits(tr.Logprobs[seg.Offset+i]) {
						t.Errorf("%s turn %d: logprob %d is %v, the server sent %v", tr.ID, seg.Turn, i, tr.Logprobs[seg.Offset+i], lp)
					}
				}
				break
			}
		}
		if !found {
			t.Errorf("%s turn %d: no logged /generate call sent the trajectory's %d tokens before it and returned its %d tokens",
				tr.ID, seg.Turn, len(before), len(out))
		}
	}
}

func decodeTraj(t *testing.T, e frontdoor.Emitted) *tito.Trajectory {
	t.Helper()
	var tr tito.Trajectory
	if err := json.Unmarshal(e.Trajectory, &tr); err != nil {
		t.Fatal(err)
	}
	return &tr
}

func TestToolLoopExtendsTheTrajectory(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), map[string]any{"enable_thinking": false})
	msgs := []any{
		map[string]any{"role": "system", "content": "You are a careful assistant."},
		map[string]any{"role": "user", "content": "[script:calc] What is 2 + 3?"},
	}
	code, resp := h.post(t, "/s/s1/v1/chat/completions", chat(msgs))
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	msg := reply(t, resp)
	calls, _ := msg["tool_calls"].([]any)
	if len(calls) != 1 || resp["choices"].([]any)[0].(map[string]any)["finish_reason"] != "tool_calls" {
		t.Fatalf("want one tool call and finish_reason tool_calls, got %v", resp)
	}
	call := calls[0].(map[string]any)
	fn := call["function"].(map[string]any)
	if fn["name"] != "add" || fn["arguments"] != `{"a":2,"b":3}` {
		t.Fatalf("tool call %v", call)
	}
	// The caller appends the reply as the SDK serializes it (content null, refusal null) and the tool's result.
	msg["refusal"] = nil
	msgs = append(msgs, msg, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "5"})
	code, resp = h.post(t, "/s/s1/v1/chat/completions", chat(msgs))
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	if got := reply(t, resp)["content"]; got != "2 + 3 = 5." {
		t.Fatalf("content %q", got)
	}
	usage := resp["usage"].(map[string]any)
	if usage["prompt_tokens"].(float64) <= 0 || usage["completion_tokens"].(float64) <= 0 {
		t.Fatalf("usage %v", usage)
	}
	em := h.end(t, "s1")
	if len(em) != 1 {
		t.Fatalf("want 1 trajectory, got %d", len(em))
	}
	tr := decodeTraj(t, em[0])
	if tr.GroupID != "g-s1" || em[0].GroupID != "g-s1" {
		t.Fatalf("group id %q, emitted with %q", tr.GroupID, em[0].GroupID)
	}
	if tr.Status != "completed" || tr.Turns() != 2 || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("status %q reason %q turns %d reward %v", tr.Status, tr.StatusReason, tr.Turns(), tr.Reward)
	}
	h.check(t, tr)
	// The second request extends the first (history never re-tokenized).
	calls2 := h.generates(t)
	if len(calls2) != 2 || !slices.Equal(calls2[1].input[:len(calls2[0].input)+len(calls2[0].output)], slices.Concat(calls2[0].input, calls2[0].output)) {
		t.Fatalf("the second request does not extend the first")
	}
	// A later call to the ended session is refused.
	code, resp = h.post(t, "/s/s1/v1/chat/completions", chat(msgs))
	if code != 404 || errCode(resp) != "session_not_found" {
		t.Fatalf("call after end: %d %v", code, resp)
	}
}

func errCode(resp map[string]any) string {
	e, _ := resp["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// A caller that drops the reasoning of earlier replies (as Qwen3's own template would) still extends the
// session: history keeps the reasoning as generated, and the call is counted.
func TestDroppedReasoningExtends(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), nil)
	msgs := []any{map[string]any{"role": "user", "content": "[script:think] Add 2 and 3."}}
	code, resp := h.post(t, "/v1/chat/completions", withSession(chat(msgs)))
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	msg := reply(t, resp)
	if msg["reasoning_content"] != "I should add them." {
		t.Fatalf("reasoning %v", msg)
	}
	delete(msg, "reasoning_content")
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	msgs = append(msgs, msg, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "5"})
	code, resp = h.post(t, "/v1/chat/completions", withSession(chat(msgs)))
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	if got := reply(t, resp)["content"]; got != "The sum is 5." {
		t.Fatalf("content %q", got)
	}
	em := h.end(t, "hdr")
	if len(em) != 1 {
		t.Fatalf("want 1 trajectory, got %d", len(em))
	}
	tr := decodeTraj(t, em[0])
	if tr.Turns() != 2 || tr.Metrics["reasoning_dropped_calls"] != 1 {
		t.Fatalf("turns %d metrics %v", tr.Turns(), tr.Metrics)
	}
	if !strings.Contains(qwen3.Tokenizer.Decode(tr.TokenIDs, false), "I should add them.") {
		t.Fatal("the first reply's reasoning is not in the trajectory as generated")
	}
	h.check(t, tr)
}

func withSession(req map[string]any) map[string]any { req["_session"] = "hdr"; return req }

// summarised is a conversation whose caller replaced its first exchange with a summary.
func summarised(t *testing.T, h *harness, session string) (first map[string]any, code int, resp map[string]any) {
	msgs := []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "[script:chat] Hi there."},
	}
	c, r := h.post(t, "/s/"+session+"/v1/chat/completions", chat(msgs))
	if c != 200 {
		t.Fatalf("%d %v", c, r)
	}
	msgs = append(msgs, reply(t, r), map[string]any{"role": "user", "content": "What is the capital of France?"})
	c, r = h.post(t, "/s/"+session+"/v1/chat/completions", chat(msgs))
	if c != 200 {
		t.Fatalf("%d %v", c, r)
	}
	// The summary: the first exchange becomes one user message.
	summary := []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "[script:chat] (Summary: we greeted each other and I asked for France's capital: Paris.) Thanks!"},
	}
	code, resp = h.post(t, "/s/"+session+"/v1/chat/completions", chat(summary))
	return r, code, resp
}

func TestDriftReject(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), map[string]any{"enable_thinking": false})
	_, code, resp := summarised(t, h, "rj")
	if code != 400 || errCode(resp) != "history_drift" {
		t.Fatalf("want 400 history_drift, got %d %v", code, resp)
	}
	em := h.end(t, "rj")
	if len(em) != 1 {
		t.Fatalf("want 1 trajectory, got %d", len(em))
	}
	tr := decodeTraj(t, em[0])
	if tr.Turns() != 2 || tr.Metrics["drift.reject.user_edited"] != 1 {
		t.Fatalf("turns %d metrics %v", tr.Turns(), tr.Metrics)
	}
	h.check(t, tr)
}

func TestDriftFork(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	_, code, resp := summarised(t, h, "fk")
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	ag := resp["agentrt"].(map[string]any)
	// frontdoor/SESSION/RUN/BRANCH: the fork is branch 1 of the same run as branch 0.
	id, _ := ag["trajectory_id"].(string)
	run := strings.TrimSuffix(strings.TrimPrefix(id, "frontdoor/fk/"), "/1")
	if len(run) != 16 || id != "frontdoor/fk/"+run+"/1" || ag["drift"].(map[string]any)["from"] != "frontdoor/fk/"+run+"/0" ||
		ag["drift"].(map[string]any)["reason"] != "user_edited" {
		t.Fatalf("agentrt %v", ag)
	}
	em := h.end(t, "fk")
	if len(em) != 2 {
		t.Fatalf("want 2 trajectories (the branch before the summary and the one after), got %d", len(em))
	}
	a, b := decodeTraj(t, em[0]), decodeTraj(t, em[1])
	if a.StatusReason != frontdoor.ReasonForked || a.Turns() != 2 || b.Turns() != 1 {
		t.Fatalf("branches: %q %d turns, %q %d turns", a.StatusReason, a.Turns(), b.StatusReason, b.Turns())
	}
	fd := b.Provenance["frontdoor"].(map[string]any)["forked_from"].(map[string]any)
	p := int(fd["token"].(float64))
	if p <= 0 || !slices.Equal(a.TokenIDs[:p], b.TokenIDs[:p]) || a.TokenIDs[p] == b.TokenIDs[p] {
		t.Fatalf("the branches do not share exactly their first %d tokens", p)
	}
	if b.Metrics["drift.fork.user_edited"] != 1 {
		t.Fatalf("metrics %v", b.Metrics)
	}
	h.check(t, a)
	h.check(t, b)
}

func TestDriftRealign(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftRealign), map[string]any{"enable_thinking": false})
	_, code, resp := summarised(t, h, "ra")
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	em := h.end(t, "ra")
	if len(em) != 1 {
		t.Fatalf("want 1 trajectory, got %d", len(em))
	}
	tr := decodeTraj(t, em[0])
	ra := tr.Provenance["frontdoor"].(map[string]any)["realigns"].([]any)
	if len(ra) != 1 || tr.Turns() != 1 || len(tr.Warnings) == 0 || tr.Metrics["drift.realign.user_edited"] != 1 {
		t.Fatalf("realigns %v turns %d warnings %v metrics %v", ra, tr.Turns(), tr.Warnings, tr.Metrics)
	}
	if d := ra[0].(map[string]any); d["dropped_tokens"].(float64) <= 0 {
		t.Fatalf("realign %v", d)
	}
	h.check(t, tr)
}

// A caller that sends the same messages again (a second sample of a turn) forks: both replies are trajectories
// that share the prompt.
func TestRegenerateForks(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	msgs := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	for range 2 {
		if code, resp := h.post(t, "/s/rg/v1/chat/completions", chat(msgs)); code != 200 {
			t.Fatalf("%d %v", code, resp)
		}
	}
	em := h.end(t, "rg")
	if len(em) != 2 {
		t.Fatalf("want 2 trajectories, got %d", len(em))
	}
	for _, e := range em {
		tr := decodeTraj(t, e)
		h.check(t, tr)
	}
	if decodeTraj(t, em[1]).Metrics["drift.fork.regenerate"] != 1 {
		t.Fatalf("metrics %v", decodeTraj(t, em[1]).Metrics)
	}
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	user := map[string]any{"role": "user", "content": "[script:chat] Hi."}
	cases := []struct {
		name string
		body any
		code int
		want string
	}{
		{"unknown model", map[string]any{"model": "gpt-9", "messages": []any{user}}, 404, "model_not_found"},
		{"no messages", map[string]any{"model": "qwen3", "messages": []any{}}, 400, "invalid_request"},
		{"bad role", map[string]any{"model": "qwen3", "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, 400, "invalid_request"},
		{"unknown tool call id", map[string]any{"model": "qwen3", "messages": []any{user, map[string]any{"role": "tool", "tool_call_id": "nope", "content": "5"}}}, 400, "invalid_request"},
		{"n > 1", map[string]any{"model": "qwen3", "messages": []any{user}, "n": 2}, 400, "invalid_request"},
		{"max_tokens over the limit", map[string]any{"model": "qwen3", "messages": []any{user}, "max_tokens": 1 << 20}, 400, "invalid_request"},
		{"image part", map[string]any{"model": "qwen3", "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}}}, 400, "invalid_request"},
	}
	for _, c := range cases {
		code, resp := h.post(t, "/s/bad/v1/chat/completions", c.body)
		if code != c.code || errCode(resp) != c.want {
			t.Errorf("%s: got %d %v, want %d %s", c.name, code, resp, c.code, c.want)
		}
		if e, _ := resp["error"].(map[string]any); e == nil || e["message"] == "" || e["type"] == nil {
			t.Errorf("%s: not OpenAI's error shape: %v", c.name, resp)
		}
	}
	// Nothing was written: the session has no trajectory, and no request reached the server.
	if n := len(h.generates(t)); n != 0 {
		t.Fatalf("%d /generate calls for bad input", n)
	}
	big := strings.Repeat("x", frontdoor.DefaultConfig().MaxRequestBytes)
	code, resp := h.post(t, "/s/bad/v1/chat/completions", map[string]any{"model": "qwen3", "messages": []any{map[string]any{"role": "user", "content": big}}})
	if code != 413 || errCode(resp) != "request_too_large" {
		t.Fatalf("oversize: %d %v", code, resp)
	}
	code, resp = h.post(t, "/s/never/end", nil)
	if code != 404 || errCode(resp) != "session_not_found" {
		t.Fatalf("end of an unknown session: %d %v", code, resp)
	}
}

// Bad input to the Messages API gets Anthropic's error shape.
func TestAnthropicBadInput(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	user := map[string]any{"role": "user", "content": "[script:chat] Hi."}
	cases := []struct {
		name string
		body any
		code int
		typ  string
	}{
		{"unknown model", map[string]any{"model": "claude-9", "max_tokens": 10, "messages": []any{user}}, 404, "not_found_error"},
		{"no max_tokens", map[string]any{"model": "qwen3", "messages": []any{user}}, 400, "invalid_request_error"},
		{"system role in messages", map[string]any{"model": "qwen3", "max_tokens": 10, "messages": []any{map[string]any{"role": "system", "content": "x"}}}, 400, "invalid_request_error"},
		{"image block", map[string]any{"model": "qwen3", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}}}}, 400, "invalid_request_error"},
		{"unknown tool_use_id", map[string]any{"model": "qwen3", "max_tokens": 10, "messages": []any{user,
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_x", "content": "5"}}}}}, 400, "invalid_request_error"},
	}
	for _, c := range cases {
		code, resp := h.post(t, "/s/bad/v1/messages", c.body)
		e, _ := resp["error"].(map[string]any)
		if code != c.code || resp["type"] != "error" || e == nil || e["type"] != c.typ || e["message"] == "" {
			t.Errorf("%s: got %d %v, want %d %s", c.name, code, resp, c.code, c.typ)
		}
	}
	if n := len(h.generates(t)); n != 0 {
		t.Fatalf("%d /generate calls for bad input", n)
	}
}

// A session without calls for idle_timeout ends by itself: its trajectory is emitted with status reason
// idle_timeout, and a later call to it gets session_not_found.
func TestIdleTimeoutEndsSession(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.IdleTimeout = time.Millisecond
	h := newHarness(t, cfg, map[string]any{"enable_thinking": false})
	msgs := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	if code, resp := h.post(t, "/s/idle/v1/chat/completions", chat(msgs)); code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	e, _ := testutil.Recv(t, "the idle session's trajectory", h.emits)
	tr := decodeTraj(t, e)
	if e.Session != "idle" || tr.Status != "completed" || tr.StatusReason != frontdoor.ReasonIdle {
		t.Fatalf("session %s status %q reason %q", e.Session, tr.Status, tr.StatusReason)
	}
	h.check(t, tr)
	testutil.Until(t, "the idle session to be closed", func() bool { return h.fd.Sessions() == 0 })
	if code, resp := h.post(t, "/s/idle/v1/chat/completions", chat(msgs)); code != 404 || errCode(resp) != "session_not_found" {
		t.Fatalf("call after the idle end: %d %v", code, resp)
	}
}

// Close (agentrt serve's shutdown) ends the open sessions and emits their trajectories.
func TestCloseEmitsOpenSessions(t *testing.T) {
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	for _, id := range []string{"a", "b"} {
		msgs := []any{map[string]any{"role": "user", "content": "[script:chat] Hi from " + id}}
		if code, resp := h.post(t, "/s/"+id+"/v1/chat/completions", chat(msgs)); code != 200 {
			t.Fatalf("%d %v", code, resp)
		}
	}
	if err := h.fd.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.emitted) != 2 {
		t.Fatalf("%d trajectories emitted, want 2", len(h.emitted))
	}
	for _, e := range h.emitted {
		if tr := decodeTraj(t, e); tr.StatusReason != frontdoor.ReasonShutdown {
			t.Fatalf("%s: reason %q", e.Session, tr.StatusReason)
		}
	}
}

// The agent's reward hook scores a session whose end call brings a label and no reward, as it scores a native
// episode (here the built-in math_reward: the reply's \boxed{} answer against the label).
func TestRewardHookScoresSession(t *testing.T) {
	h := newHarnessWith(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false},
		func(ac *config.Agent) { ac.Reward = &config.Plugin{Plugin: "builtin:math_reward"} })
	for _, c := range []struct {
		session, label string
		want           float64
	}{{"right", "5", 1}, {"wrong", "6", 0}} {
		msgs := []any{map[string]any{"role": "user", "content": "[script:boxed] What is 2 + 3?"}}
		if code, resp := h.post(t, "/s/"+c.session+"/v1/chat/completions", chat(msgs)); code != 200 {
			t.Fatalf("%d %v", code, resp)
		}
		if code, resp := h.post(t, "/s/"+c.session+"/end", map[string]any{"label": c.label}); code != 200 {
			t.Fatalf("end: %d %v", code, resp)
		}
		e, _ := testutil.Recv(t, "the session's trajectory", h.emits)
		tr := decodeTraj(t, e)
		if tr.Reward == nil || *tr.Reward != c.want {
			t.Fatalf("%s: reward %v, want %v (warnings %v)", c.session, tr.Reward, c.want, tr.Warnings)
		}
	}
}

// Limits: more open sessions than max_sessions get a 429; a conversation past the context window gets a 400
// context_length_exceeded; neither writes anything.
func TestLimits(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.MaxSessions = 1
	h := newHarnessWith(t, cfg, map[string]any{"enable_thinking": false}, func(ac *config.Agent) { ac.ContextWindow = 64 })
	short := []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
	if code, resp := h.post(t, "/s/one/v1/chat/completions", map[string]any{"model": "qwen3", "messages": short, "max_tokens": 16}); code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	code, resp := h.post(t, "/s/two/v1/chat/completions", map[string]any{"model": "qwen3", "messages": short})
	if code != 429 || errCode(resp) != "too_many_sessions" {
		t.Fatalf("a second session over max_sessions: %d %v", code, resp)
	}
	long := append(short, reply(t, map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "Hello! How can I help?"}}}}),
		map[string]any{"role": "user", "content": strings.Repeat("Tell me more about that. ", 20)})
	code, resp = h.post(t, "/s/one/v1/chat/completions", map[string]any{"model": "qwen3", "messages": long})
	if code != 400 || errCode(resp) != "context_length_exceeded" {
		t.Fatalf("past the context window: %d %v", code, resp)
	}
	if n := len(h.generates(t)); n != 1 {
		t.Fatalf("%d /generate calls, want 1", n)
	}
	em := h.end(t, "one")
	if len(em) != 1 || decodeTraj(t, em[0]).Turns() != 1 {
		t.Fatalf("the session's trajectory changed: %d trajectories", len(em))
	}
	h.check(t, decodeTraj(t, em[0]))
}

// With a token (server.token), every call must present it as its API key, in each API's way.
func TestToken(t *testing.T) {
	cfg := defaultConfig(frontdoor.DriftFork)
	cfg.Token = "s3cret"
	h := newHarness(t, cfg, map[string]any{"enable_thinking": false})
	srv := h.srv
	body := `{"model": "qwen3", "messages": [{"role": "user", "content": "[script:chat] Hi."}], "max_tokens": 16}`
	call := func(path string, hdr map[string]string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, out := call("/s/t/v1/chat/completions", nil); code != 401 || errCode(out) != "invalid_api_key" {
		t.Fatalf("no key: %d %v", code, out)
	}
	if code, out := call("/s/t/v1/messages", map[string]string{"x-api-key": "wrong"}); code != 401 || out["error"].(map[string]any)["type"] != "authentication_error" {
		t.Fatalf("wrong Anthropic key: %d %v", code, out)
	}
	if code, out := call("/s/t/v1/chat/completions", map[string]string{"Authorization": "Bearer s3cret"}); code != 200 {
		t.Fatalf("right key: %d %v", code, out)
	}
	if code, out := call("/s/t/v1/messages", map[string]string{"x-api-key": "s3cret"}); code != 200 {
		t.Fatalf("right Anthropic key: %d %v", code, out)
	}
}

// A caller that goes away mid-generation gets its request aborted on the server, and its session is unchanged.
func TestCallerGoneAbortsGeneration(t *testing.T) {
	h := newHarnessWith(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false}, nil,
		func(ec *emulator.Config) { ec.Latency.Fixed = 10 * time.Minute })
	body, _ := json.Marshal(chat([]any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/s/gone/v1/chat/completions", bytes.NewReader(body))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testutil.Recv(t, "the /generate request to reach the emulator", h.generating)
	cancel()
	testutil.Recv(t, "the caller's request to end", done)
	testutil.Until(t, "an /abort_request in the emulator's log", func() bool {
		return bytes.Contains(h.log.Bytes(), []byte(`"path":"/abort_request"`))
	})
	// The emulator logs the abort before the call that sent it returns and drops its session: wait for that.
	testutil.Until(t, "the failed call's session to be dropped", func() bool { return h.fd.Sessions() == 0 })
	// The session's only call failed: it was not kept (issue 27), and nothing was emitted.
	code, out := h.post(t, "/s/gone/end", nil)
	h.mu.Lock()
	emitted := len(h.emitted)
	h.mu.Unlock()
	if code != 404 || errCode(out) != "session_not_found" || h.fd.Sessions() != 0 || emitted != 0 {
		t.Fatalf("end: %d %v, %d sessions, %d emitted (the aborted call must leave nothing)", code, out, h.fd.Sessions(), emitted)
	}
}
