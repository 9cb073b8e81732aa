package tito

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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

// familyBenchTemplate parses a family's template from testdata/families (special tokens and stop tokens as the
// golden tests use them).
func familyBenchTemplate(b *testing.B, family string) *ChatTemplate {
	b.Helper()
	for _, g := range loadFamilyGoldens(b) {
		if g.Family == family {
			return familyChatTemplate(b, g)
		}
	}
	b.Fatalf("no family %s", family)
	return nil
}

var benchFamilies = []string{"qwen3", "llama3.1", "glm-4.6", "deepseek-v3", "gpt-oss", "mistral-small-3.2"}

// benchTools are three tool specs of typical size.
func benchTools() []json.RawMessage {
	spec := func(name, desc string) json.RawMessage {
		return json.RawMessage(`{"type": "function", "function": {"name": "` + name + `", "description": "` + desc + `", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to look for."}, "limit": {"type": "integer", "default": 10}, "exact": {"type": "boolean"}}, "required": ["query"]}}}`)
	}
	return []json.RawMessage{spec("search", "Search the web."), spec("read_file", "Read a file of the workspace."), spec("run_python", "Run Python code and return its output.")}
}

// BenchmarkFirstPrompt renders a first prompt (system + user) with 3 tool specs, per family.
func BenchmarkFirstPrompt(b *testing.B) {
	msgs := []Message{{Role: RoleSystem, Content: "You are a helpful agent."}, {Role: RoleUser, Content: "Find the population of Lyon and compute its square root."}}
	for _, family := range benchFamilies {
		b.Run(family, func(b *testing.B) {
			tpl := familyBenchTemplate(b, family)
			o := RenderOptions{Tools: benchTools(), AddGenerationPrompt: true}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render(msgs, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTypicalTurnDelta renders the delta of a typical later turn: one tool result after the model's second
// tool call (history: system, user, call, result, call), with 3 tool specs, per family. As in an episode, the
// model's last call and its result are new on every turn (the engine has seen the rest of the history). The
// -probe variants find the cut by a second render, as RenderDelta did before the engine watched the content.
func BenchmarkTypicalTurnDelta(b *testing.B) {
	call := func(id, q string) Message {
		return Message{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "search", Arguments: json.RawMessage(`{"query": "` + q + `"}`)}}}}
	}
	history := []Message{
		{Role: RoleSystem, Content: "You are a helpful agent."},
		{Role: RoleUser, Content: "Find the population of Lyon and compute its square root."},
		call("call00001", "population of Lyon"),
		{Role: RoleTool, ToolCallID: "call00001", Name: "search", Content: `{"results": [{"title": "Lyon - Wikipedia", "snippet": "Lyon has a population of 522,250 (2021)."}]}`},
		call("call00002", "square root of 522250"),
	}
	newMsgs := []Message{{Role: RoleTool, ToolCallID: "call00002", Name: "search", Content: `{"results": [{"title": "Calculator", "snippet": "722.67"}]}`}}
	turn := 0
	for _, family := range benchFamilies {
		for _, probe := range []bool{false, true} {
			name := family
			if probe {
				name += "-probe"
			}
			b.Run(name, func(b *testing.B) {
				tpl := familyBenchTemplate(b, family)
				tpl.probeOnly = probe
				o := RenderOptions{Tools: benchTools(), AddGenerationPrompt: true}
				b.ReportAllocs()
				for b.Loop() {
					turn++
					history[4] = call("call00002", "square root of "+strconv.Itoa(turn))
					newMsgs[0].Content = `{"results": [{"title": "Calculator", "snippet": "` + strconv.Itoa(turn) + `"}]}`
					if _, err := tpl.RenderDelta(history, newMsgs, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
