package tito

import (
	"encoding/json"
	"slices"
	"testing"
)

// typicalTurn is a later turn of a tool-using episode: the history ends with the model's second tool call, and
// the new message is its result.
func typicalTurn() (history, newMsgs []Message) {
	call := func(id, q string) Message {
		return Message{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "search", Arguments: json.RawMessage(`{"query": "` + q + `"}`)}}}}
	}
	history = []Message{
		{Role: RoleSystem, Content: "You are a helpful agent."},
		{Role: RoleUser, Content: "Find the population of Lyon and compute its square root."},
		call("call00001", "population of Lyon"),
		{Role: RoleTool, ToolCallID: "call00001", Name: "search", Content: `{"results": [{"title": "Lyon - Wikipedia", "snippet": "Lyon has a population of 522,250 (2021)."}]}`},
		call("call00002", "square root of 522250"),
	}
	newMsgs = []Message{{Role: RoleTool, ToolCallID: "call00002", Name: "search", Content: `{"results": [{"title": "Calculator", "snippet": "722.67"}]}`}}
	return history, newMsgs
}

// TestRenderDeltaOneRender pins which families' typical tool-result delta takes one render (the engine sees
// where the template writes the tool result) rather than two, and that both ways cut the same delta.
func TestRenderDeltaOneRender(t *testing.T) {
	oneRender := map[string]bool{}
	for _, f := range []string{"qwen3", "qwen3-2507-instruct", "qwen3-2507-thinking", "qwen2.5", "qwq-32b", "qwen3-coder",
		"hermes-3", "llama3.1", "llama3.2", "glm-4.6", "glm-4.7-flash", "kimi-k2", "minimax-m2"} {
		oneRender[f] = true
	}
	history, newMsgs := typicalTurn()
	for _, g := range loadFamilyGoldens(t) {
		t.Run(g.Family, func(t *testing.T) {
			tpl := familyChatTemplate(t, g)
			o := RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "search", "description": "Search the web.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}`)}, AddGenerationPrompt: true}
			delta, err := tpl.RenderDelta(history, newMsgs, o)
			if err != nil {
				t.Skipf("no delta for this family: %v", err) // refused families; TestFamiliesGolden pins why
			}
			p, err := tpl.prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := encodeMessages(slices.Concat(history, newMsgs))
			if err != nil {
				t.Fatal(err)
			}
			_, at, _, free, terr := tpl.engine.renderDelta(p.vars, msgs, len(history), "probe", false, true, tpl.now())
			if terr != nil {
				t.Fatal(terr)
			}
			free()
			if got := at >= 0; got != oneRender[g.Family] {
				t.Errorf("one render: %v, want %v", got, oneRender[g.Family])
			}
			tpl.probeOnly = true
			if d2, err := tpl.RenderDelta(history, newMsgs, o); err != nil || d2 != delta {
				t.Errorf("with the probe: %q, %v; in one render: %q", d2, err, delta)
			}
		})
	}
}
