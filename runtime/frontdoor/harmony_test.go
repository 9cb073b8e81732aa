package frontdoor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/tito"
)

// harmonyScript: gpt-oss replies that reason in an analysis message first, then call add (as gpt-oss models write a
// call: the recipient after the channel) or answer in the final channel.
const harmonyScript = `{"key": "harmony", "replies": ["<|channel|>analysis<|message|>I should add them.<|end|><|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>{\"a\":2,\"b\":3}<|call|>", "", "<|channel|>analysis<|message|>The tool said 5.<|end|><|start|>assistant<|channel|>final<|message|>The sum is 5.<|return|>", "", "", ""]}
`

// TestHarmonyToolLoop: a gpt-oss session whose replies reason in an analysis message. The caller gets each reply as
// SGLang's server returns it (the analysis in reasoning_content, the final answer in content, the call in
// tool_calls) and sends it back; the next call extends the session, its delta rendered from the replies as the
// caller got them (the template refuses harmony markup in content), the trajectory keeping the tokens and the
// text as generated.
func TestHarmonyToolLoop(t *testing.T) {
	dir := os.Getenv("AGENTRT_GPTOSS_MODEL")
	if dir == "" {
		t.Fatal("$AGENTRT_GPTOSS_MODEL is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`")
	}
	m, err := tito.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "tito", "testdata", "families", "gpt-oss", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	m.TemplateSource, m.TemplateFile, m.NamedTemplates = string(tmpl), tito.FileChatTemplate, nil
	h := newModelHarness(t, defaultConfig(frontdoor.DriftReject), nil, func(ac *config.Agent) { ac.Family = "gpt-oss" }, m, harmonyScript)
	msgs := []any{map[string]any{"role": "user", "content": "[script:harmony] Add 2 and 3."}}
	code, resp := h.post(t, "/s/h/v1/chat/completions", chat(msgs))
	if code != 200 {
		t.Fatalf("%d %v", code, resp)
	}
	msg := reply(t, resp)
	calls, _ := msg["tool_calls"].([]any)
	if msg["reasoning_content"] != "I should add them." || len(calls) != 1 || (msg["content"] != nil && msg["content"] != "") {
		t.Fatalf("the first reply is not as SGLang returns a gpt-oss turn: %v", msg)
	}
	call := calls[0].(map[string]any)
	msgs = append(msgs, msg, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "5"})
	code, resp = h.post(t, "/s/h/v1/chat/completions", chat(msgs))
	if code != 200 {
		t.Fatalf("the call after a reply with an analysis message: %d %v", code, resp)
	}
	if got := reply(t, resp); got["content"] != "The sum is 5." || got["reasoning_content"] != "The tool said 5." {
		t.Fatalf("the second reply %v", got)
	}
	em := h.end(t, "h")
	if len(em) != 1 {
		t.Fatalf("want 1 trajectory, got %d", len(em))
	}
	tr := decodeTraj(t, em[0])
	if tr.Status != "completed" || tr.Turns() != 2 {
		t.Fatalf("status %q reason %q error %q turns %d", tr.Status, tr.StatusReason, tr.Error, tr.Turns())
	}
	h.check(t, tr)
	var recorded []tito.Message
	if recorded, err = tito.DecodeMessages(tr.Messages); err != nil {
		t.Fatal(err)
	}
	if a := recorded[1]; a.Role != tito.RoleAssistant || !strings.HasPrefix(a.Content, "<|channel|>analysis<|message|>I should add them.") {
		t.Errorf("the trajectory does not keep the first reply's text as generated: %+v", a)
	}
}
