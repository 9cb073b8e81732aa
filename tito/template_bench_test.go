package tito

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// longConversation is the long-horizon benchmark's fixed-context episode (bench/long_horizon.py, flat2k and
// flat118k) after 20 turns: a system prompt, a user message of notes of about words words, then 20 rounds of a
// thinking assistant turn with one calculator call and its result; and the next result, the delta's new message.
func longConversation(words int) (history, newMsgs []Message) {
	vocab := strings.Fields("the of and a to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their")
	text := func(n, seed int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[(i*7+seed*13+i*i)%len(vocab)])
		}
		return b.String()
	}
	history = []Message{
		{Role: RoleSystem, Content: "You are a careful assistant. Use the tools, then give the final answer."},
		{Role: RoleUser, Content: "Here are my notes:\n\n" + text(words, 1) + "\n\nUse the calculator for each step, then tell me when you are done."},
	}
	result := func(t int) Message {
		return Message{Role: RoleTool, ToolCallID: "call_" + strconv.Itoa(t), Name: "calculator", Content: strconv.Itoa(3*(t+7) + t)}
	}
	for t := range 20 {
		args := `{"expression": "3*` + strconv.Itoa(t+7) + `+` + strconv.Itoa(t) + `"}`
		history = append(history,
			Message{Role: RoleAssistant, Content: "<think>\n" + text(30+t, t) + "\n</think>\n\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": " + args + "}\n</tool_call>",
				ToolCalls: []ToolCall{{ID: "call_" + strconv.Itoa(t), Type: "function", Function: FunctionCall{Name: "calculator", Arguments: json.RawMessage(args)}}}},
			result(t))
	}
	history = append(history, Message{Role: RoleAssistant, Content: "<think>\n" + text(40, 99) + "\n</think>\n\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+1\"}}\n</tool_call>",
		ToolCalls: []ToolCall{{ID: "call_20", Type: "function", Function: FunctionCall{Name: "calculator", Arguments: json.RawMessage(`{"expression": "1+1"}`)}}}})
	return history, []Message{result(20)}
}

// BenchmarkRenderDeltaLongContext is one later turn's delta of the long-horizon benchmark's fixed-context episode
// (Qwen3, thinking on, two tools) at ~2k and ~118k tokens of context: what a turn costs in the template as the
// context grows; whole writes every message's JSON for the engine, cached keeps them in a MessageCache (as the
// agent loop does), so that a turn writes only its last two messages (the model's call and its result: two
// conversations that differ there take turns), windowed also renders through the template's delta window (as the
// agent loop does: the system prompt, the model's call and its result). Compare ctx=2k and ctx=118k in one run
// (and encode-*, the messages' JSON alone).
func BenchmarkRenderDeltaLongContext(b *testing.B) {
	tpl := familyBenchTemplate(b, "qwen3")
	for _, c := range []struct {
		name  string
		words int
	}{{"ctx=2k", 1200}, {"ctx=118k", 113000}} {
		history, newMsgs := longConversation(c.words)
		// the other conversation: the same but for the last call and its result
		other, otherNew := slices.Clone(history), []Message{newMsgs[0]}
		last := other[len(other)-1]
		last.Content = strings.Replace(last.Content, "1+1", "2+2", 1)
		other[len(other)-1] = last
		otherNew[0].Content = "4"
		turns := [2][2][]Message{{history, newMsgs}, {other, otherNew}}
		for _, mode := range []string{"whole", "cached", "windowed"} {
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				o := RenderOptions{Tools: benchTools()[:2], AddGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": true}}
				if mode != "whole" {
					o.Messages = new(MessageCache)
				}
				if mode == "windowed" {
					w, err := tpl.FindDeltaWindow(o)
					if err != nil {
						b.Fatal(err)
					}
					o.Window = w
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					tr := turns[i%2]
					if _, err := tpl.RenderDelta(tr[0], tr[1], o); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
		b.Run("encode-"+c.name, func(b *testing.B) {
			all := slices.Concat(history, newMsgs)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeMessages(all); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
