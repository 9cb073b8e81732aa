package tito

import (
	"os"
	"path/filepath"
	"testing"
)

// benchConversation is a 10-message tool-calling conversation from the golden cases (system, user, two tool-call
// rounds with three tool results, a final answer, a stress-text user turn, and one more assistant turn), with
// two tool specs.
func benchConversation(b *testing.B, family string) (*ChatTemplate, []Message, RenderOptions) {
	b.Helper()
	var c goldenCase
	for _, gc := range loadGoldenCases(b) {
		if gc.Family == family && gc.Kind == "render" && gc.Name == "tool_rounds" {
			c = gc
		}
	}
	src, err := os.ReadFile(filepath.Join("testdata", "template", c.Template))
	if err != nil {
		b.Fatal(err)
	}
	tpl, err := NewChatTemplate(string(src), c.SpecialTokens)
	if err != nil {
		b.Fatal(err)
	}
	msgs := mustMessages(b, c.Messages)
	for len(msgs) < 10 {
		msgs = append(msgs, Message{Role: RoleAssistant, Content: "Done."}, Message{Role: RoleUser, Content: "Thanks!"})
	}
	return tpl, msgs[:10], c.options(b)
}

// BenchmarkRender renders a pre-parsed template for a 10-message conversation with two tools.
func BenchmarkRender(b *testing.B) {
	for _, family := range []string{"qwen3", "llama31"} {
		b.Run(family, func(b *testing.B) {
			tpl, msgs, o := benchConversation(b, family)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render(msgs, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderDelta renders one tool result as a delta (what the agent loop does on every turn).
func BenchmarkRenderDelta(b *testing.B) {
	for _, family := range []string{"qwen3", "llama31"} {
		b.Run(family, func(b *testing.B) {
			tpl, history, o := benchConversation(b, family)
			newMsgs := []Message{{Role: RoleTool, ToolCallID: "call_0", Content: `{"temp": 21.5, "sky": "clear"}`}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.RenderDelta(history, newMsgs, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseTemplate parses the Qwen3 template and detects its separator (once per model in practice).
func BenchmarkParseTemplate(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "template", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewChatTemplate(string(src), SpecialTokens{"eos_token": "<|im_end|>"}); err != nil {
			b.Fatal(err)
		}
	}
}
