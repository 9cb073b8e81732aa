package tito

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// DeltaCheck renders a canonical agent conversation (a system prompt, a user question, a tool call, its result,
// a second tool round, an answer and a follow-up question, with one tool spec) in full and as later-turn deltas,
// and checks invariant 4 on each turn: the delta is the tail of the full render of the whole conversation, and
// what precedes it is the history as the model generated it up to its stop token. It returns nil when the
// template can drive an agent loop, or an error saying which turn failed and why, so that a model whose template
// cannot be continued exactly is refused at start-up (`agentrt model check`).
//
// opts carries the deployment's tools and kwargs (enable_thinking, ...); its Tools replace the canonical tool
// spec when set.
func (t *ChatTemplate) DeltaCheck(opts RenderOptions) error {
	if t.sepErr != nil {
		return t.sepErr
	}
	if opts.Tools == nil {
		opts.Tools = []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "lookup", "description": "Look a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}`)}
	}
	name := "lookup"
	var spec struct {
		Function struct{ Name string } `json:"function"`
	}
	if json.Unmarshal(opts.Tools[0], &spec) == nil && spec.Function.Name != "" {
		name = spec.Function.Name
	}
	callMsg := func(id, word string) Message {
		return Message{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: json.RawMessage(`{"word": "` + word + `"}`)}}}}
	}
	conv := []Message{
		{Role: RoleSystem, Content: "You are a careful assistant."},
		{Role: RoleUser, Content: "What do 'agent' and 'rollout' mean?"},
		callMsg("call00001", "agent"),
		{Role: RoleTool, ToolCallID: "call00001", Name: name, Content: `{"meaning": "one who acts"}`},
		callMsg("call00002", "rollout"),
		{Role: RoleTool, ToolCallID: "call00002", Name: name, Content: `{"meaning": "a sampled episode"}`},
		{Role: RoleAssistant, Content: "An agent acts; a rollout is a sampled episode."},
		{Role: RoleUser, Content: "Thanks. One more?"},
	}
	turns := []struct {
		what     string
		from, to int // history = conv[:from], new = conv[from:to]
	}{
		{"first tool result", 3, 4},
		{"second tool round (state kept across turns)", 5, 6},
		{"user message after the answer", 7, 8},
	}
	o := opts
	o.AddGenerationPrompt = true
	if _, err := t.Render(conv[:2], o); err != nil {
		return fmt.Errorf("tito: delta check: first prompt: %w", err)
	}
	for _, turn := range turns {
		history, newMsgs := conv[:turn.from], conv[turn.from:turn.to]
		full, err := t.Render(conv[:turn.to], o)
		if err != nil {
			return fmt.Errorf("tito: delta check: %s: full render: %w", turn.what, err)
		}
		delta, err := t.RenderDelta(history, newMsgs, o)
		if err != nil {
			return fmt.Errorf("tito: delta check: %s: %w", turn.what, err)
		}
		before, ok := strings.CutSuffix(full, delta)
		if !ok {
			return fmt.Errorf("tito: delta check: %s: the delta %q is not the tail of the full render", turn.what, tmplTail(delta))
		}
		ended := false
		for _, s := range slices.Concat(t.endMarks, t.rewrittenEnds) {
			ended = ended || strings.HasSuffix(before, s)
		}
		for _, s := range t.startMarks {
			ended = ended || strings.HasPrefix(delta, s)
		}
		if !ended {
			return fmt.Errorf("tito: delta check: %s: the history does not end with a stop token %q before the delta (it ends %q)", turn.what, t.stops, tmplTail(before))
		}
	}
	return nil
}
