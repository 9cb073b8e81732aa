package tito

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPTOSSDelta pins gpt-oss's continuation (docs/families.md): after a tool call the delta is exact, the
// model's own tokens (analysis, then the call up to its <|call|> stop) being the history; after a final answer the
// template rewrites that answer (<|end|> for the model's <|return|>) and drops the analysis of earlier turns once
// any message follows, so the delta is found after the rewritten end (WithRewrittenEnd).
func TestGPTOSSDelta(t *testing.T) {
	t.Parallel()
	var tpl *ChatTemplate
	for _, g := range loadFamilyGoldens(t) {
		if g.Family == "gpt-oss" {
			tpl = familyChatTemplate(t, g)
		}
	}
	if tpl == nil {
		t.Fatal("no gpt-oss golden corpus in testdata/families/golden")
	}
	o := RenderOptions{AddGenerationPrompt: true, Tools: []json.RawMessage{json.RawMessage(
		`{"type": "function", "function": {"name": "lookup", "description": "Look a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}`)}}
	conv := []Message{
		{Role: RoleUser, Content: "What does 'agent' mean?"},
		{Role: RoleAssistant, ReasoningContent: "Need to look it up.", ToolCalls: []ToolCall{{ID: "c1", Type: "function",
			Function: FunctionCall{Name: "lookup", Arguments: json.RawMessage(`{"word": "agent"}`)}}}},
		{Role: RoleTool, ToolCallID: "c1", Name: "lookup", Content: `{"meaning": "one who acts"}`},
		{Role: RoleAssistant, ReasoningContent: "Got it.", Content: "One who acts."},
		{Role: RoleUser, Content: "Thanks."},
	}
	prompt, err := tpl.Render(conv[:1], o)
	if err != nil {
		t.Fatal(err)
	}
	// What the model generates after the generation prompt "<|start|>assistant", up to its stop token.
	generatedCall := "<|channel|>analysis<|message|>Need to look it up.<|end|><|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{\"word\": \"agent\"}<|call|>"

	full, err := tpl.Render(conv[:3], o)
	if err != nil {
		t.Fatal(err)
	}
	delta, err := tpl.RenderDelta(conv[:2], conv[2:3], o)
	if err != nil {
		t.Fatal(err)
	}
	if want := prompt + generatedCall + delta; full != want {
		t.Errorf("after a tool call: full render\n%q\nis not prompt + generated call + delta\n%q", full, want)
	}
	if !strings.HasPrefix(delta, "<|start|>functions.lookup to=assistant<|channel|>commentary<|message|>") {
		t.Errorf("tool result delta %q", delta)
	}

	// After the final answer: the model stopped on <|return|>, the template writes <|end|> and drops analysis.
	full, err = tpl.Render(conv, o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(full, "Need to look it up.") || strings.Contains(full, "Got it.") {
		t.Errorf("the template kept earlier analysis once a user message follows: %q", full)
	}
	if !strings.Contains(full, "<|channel|>final<|message|>One who acts.<|end|>") {
		t.Errorf("the answer is not rewritten with <|end|>: %q", full)
	}
	if _, err := tpl.RenderDelta(conv[:4], conv[4:], o); err == nil {
		t.Error("RenderDelta continues after a gpt-oss final answer without WithRewrittenEnd; the history is not what the template renders")
	}

	// With the rewrite named (the gpt-oss profile's WithRewrittenEnd("<|end|>")), the delta is exactly what the
	// template writes for the new user message, after the rewritten answer: the trajectory keeps the model's
	// <|return|> and analysis, as it keeps Qwen3's dropped reasoning.
	var g familyGolden
	for _, fg := range loadFamilyGoldens(t) {
		if fg.Family == "gpt-oss" {
			g = fg
		}
	}
	src, err := os.ReadFile(filepath.Join("testdata", "families", "gpt-oss", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	rw, err := NewChatTemplate(string(src), g.SpecialTokens, WithEndOfTurn(g.Stops...), WithRewrittenEnd("<|end|>"))
	if err != nil {
		t.Fatal(err)
	}
	delta, err = rw.RenderDelta(conv[:4], conv[4:], o)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|start|>user<|message|>Thanks.<|end|><|start|>assistant"; delta != want || !strings.HasSuffix(full, want) {
		t.Errorf("after the final answer: delta %q, want %q (the full render's tail)", delta, want)
	}
	if err := rw.DeltaCheck(RenderOptions{}); err != nil {
		t.Errorf("DeltaCheck with the rewrite named: %v", err)
	}
	// Tool rounds are unchanged by it.
	if d2, err := rw.RenderDelta(conv[:2], conv[2:3], o); err != nil || !strings.HasPrefix(d2, "<|start|>functions.lookup to=assistant") {
		t.Errorf("tool result delta with the rewrite named: %q, %v", d2, err)
	}
}
