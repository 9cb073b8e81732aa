package tito

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// familyVariants returns each golden family's kwargs variants (by the cases' name prefix).
func familyVariants(g familyGolden) map[string]map[string]any {
	variants := map[string]map[string]any{}
	for _, c := range g.Cases {
		var kw map[string]any
		if len(c.Kwargs) > 0 {
			kw = map[string]any{}
			for k, v := range c.Kwargs {
				kw[k] = json.RawMessage(v)
			}
		}
		variants[strings.SplitN(c.Name, "/", 2)[0]] = kw
	}
	return variants
}

// The delta window FindDeltaWindow finds for each family (every kwargs variant alike); families not listed
// render whole (the whole render fails on its conversations: gemma3 wants strict alternation, kimi-k2-thinking
// calls list.append, deepseek-v3.1 wants string arguments).
var familyWindows = map[string]DeltaWindow{
	"deepseek-r1":         {Head: 2, LastUser: true, Tail: 4}, // its tool outputs block depends on earlier state
	"deepseek-v3":         {Head: 2, LastUser: true, Tail: 4},
	"devstral-small":      {Head: 1, Tail: 1},
	"glm-4.6":             {Head: 1, Tail: 1},
	"glm-4.7-flash":       {Head: 1, Tail: 1},
	"gpt-oss":             {Head: 1, Tail: 1},
	"granite-3.3":         {Head: 1, Tail: 1},
	"hermes-3":            {Head: 1, Tail: 1},
	"kimi-k2":             {Head: 1, Tail: 1},
	"llama3.1":            {Head: 1, Tail: 2}, // tools_in_user_message=False: {1, 1}
	"llama3.2":            {Head: 1, Tail: 2},
	"minimax-m2":          {Head: 1, Tail: 1},
	"mistral-nemo":        {Head: 1, Tail: 1},
	"mistral-small-3.2":   {Head: 1, Tail: 1},
	"phi-4":               {Head: 1, Tail: 1},
	"qwen2.5":             {Head: 1, Tail: 1},
	"qwen3":               {Head: 1, Tail: 1},
	"qwen3-2507-instruct": {Head: 1, Tail: 1},
	"qwen3-2507-thinking": {Head: 1, Tail: 1},
	"qwen3-coder":         {Head: 1, Tail: 1},
	"qwen3.5":             {Head: 1, LastUser: true, Tail: 1}, // raises "No user query found" without it
	"qwq-32b":             {Head: 1, Tail: 1},
	"seed-oss":            {Head: 1, Tail: 1},
	"smollm3":             {Head: 1, Tail: 1},
}

// TestFamiliesDeltaWindow finds every family's window, and checks it on what FindDeltaWindow did not see: every
// golden delta case of tool results (transformers' own tail of the full render) and, turn by turn, a long
// conversation of 21 tool rounds (the long-horizon benchmark's, at ~30k tokens of context), windowed and whole.
func TestFamiliesDeltaWindow(t *testing.T) {
	t.Parallel()
	history, next := longConversation(6000)
	long := slices.Concat(history, next)
	id9 := func(id string) string { // call ids of 9 letters and digits, which Mistral's templates require
		n := strings.TrimPrefix(id, "call_")
		return "call" + strings.Repeat("0", 5-len(n)) + n
	}
	for i := range long {
		m := &long[i]
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for k := range m.ToolCalls {
			m.ToolCalls[k].ID = id9(m.ToolCalls[k].ID)
		}
		if m.ToolCallID != "" {
			m.ToolCallID = id9(m.ToolCallID)
		}
	}
	for _, g := range loadFamilyGoldens(t) {
		t.Run(g.Family, func(t *testing.T) {
			t.Parallel()
			tpl := familyChatTemplate(t, g)
			for name, kw := range familyVariants(g) {
				w, err := tpl.FindDeltaWindow(RenderOptions{Kwargs: kw})
				want := familyWindows[g.Family]
				if g.Family == "llama3.1" && name == "tools_in_user_message=False" {
					want = DeltaWindow{Head: 1, Tail: 1}
				}
				if w != want || (err == nil) != want.Enabled() {
					t.Fatalf("%s: FindDeltaWindow = %v, %v; want %v", name, w, err, want)
				}
				if !w.Enabled() {
					if !errors.Is(err, ErrNoDeltaWindow) {
						t.Fatalf("%s: %v, want ErrNoDeltaWindow", name, err)
					}
					continue
				}
				o := RenderOptions{Tools: benchTools()[:1], AddGenerationPrompt: true, Kwargs: kw}
				if err := compareWindow(tpl, long, o, w); err != nil {
					t.Fatalf("%s: long conversation: %v", name, err)
				}
			}
			for _, c := range g.Cases {
				if c.Kind != "delta" || c.ExpectedDelta == nil {
					continue
				}
				h, n := mustMessages(t, c.History), mustMessages(t, c.New)
				if !toolResults(n) {
					continue
				}
				o := RenderOptions{AddGenerationPrompt: c.AddGenerationPrompt, Window: familyWindows[g.Family]}
				if len(c.Tools) > 0 && string(c.Tools) != "null" {
					o.Tools, _ = DecodeTools(c.Tools)
				}
				if len(c.Kwargs) > 0 {
					o.Kwargs = map[string]any{}
					for k, v := range c.Kwargs {
						o.Kwargs[k] = v
					}
				}
				if g.Family == "llama3.1" && string(c.Kwargs["tools_in_user_message"]) == "false" {
					o.Window = DeltaWindow{Head: 1, Tail: 1}
				}
				d, err := tpl.RenderDelta(h, n, o)
				if err != nil || d != *c.ExpectedDelta {
					t.Errorf("%s: windowed (%v) delta %q, %v; transformers' %q", c.Name, o.Window, tmplTail(d), err, tmplTail(*c.ExpectedDelta))
				}
			}
		})
	}
}

// compareWindow renders every tool-result turn of conv whole and windowed, up to the first turn whose whole
// render fails (which must fail windowed too), and reports the first difference.
func compareWindow(tpl *ChatTemplate, conv []Message, o RenderOptions, w DeltaWindow) error {
	wo := o
	wo.Window = w
	windowed := 0
	for at := 1; at < len(conv); at++ {
		if conv[at-1].Role != RoleAssistant || conv[at].Role != RoleTool {
			continue
		}
		to := at
		for to < len(conv) && conv[to].Role == RoleTool {
			to++
		}
		whole, err := tpl.RenderDelta(conv[:at], conv[at:to], o)
		d, werr := tpl.RenderDelta(conv[:at], conv[at:to], wo)
		if whole != d || (err == nil) != (werr == nil) {
			return fmt.Errorf("message %d: whole %q (%v), windowed %q (%v)", at, tmplTail(whole), err, tmplTail(d), werr)
		}
		if err != nil {
			break
		}
		if w.LeavesOut(conv[:at]) > 0 {
			windowed++
		}
	}
	if windowed == 0 {
		return errors.New("no turn was windowed")
	}
	return nil
}

// A template whose delta depends on every message (it numbers the assistant's turns) has no window, and a window
// forced on it gives a delta other than the whole render's: what the agent loop's audit compares.
func TestDeltaWindowWrong(t *testing.T) {
	src := `{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant {{ messages|length }}
{% endif %}`
	tpl, err := NewChatTemplate(src, SpecialTokens{"eos_token": "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := tpl.FindDeltaWindow(RenderOptions{}); w.Enabled() || !errors.Is(err, ErrNoDeltaWindow) {
		t.Fatalf("FindDeltaWindow = %v, %v; want no window", w, err)
	}
	history, next := longConversation(50)
	o := RenderOptions{AddGenerationPrompt: true}
	whole, err := tpl.RenderDelta(history, next, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Window = DeltaWindow{Head: 1, Tail: 1}
	windowed, err := tpl.RenderDelta(history, next, o)
	if err != nil {
		t.Fatal(err)
	}
	if whole == windowed || !strings.HasSuffix(whole, fmt.Sprintf("assistant %d\n", len(history)+1)) {
		t.Fatalf("whole %q, windowed %q: want the message count in the whole one only", whole, windowed)
	}
}

// The window keeps the first Head messages, the last user message and the last Tail, in order, and with Parity
// leaves out an even number.
func TestDeltaWindowBounds(t *testing.T) {
	roles := func(s string) []Message {
		var out []Message
		for _, r := range s {
			out = append(out, Message{Role: map[rune]string{'s': RoleSystem, 'u': RoleUser, 'a': RoleAssistant, 't': RoleTool}[r], Content: fmt.Sprint(len(out))})
		}
		return out
	}
	for _, c := range []struct {
		w    DeltaWindow
		conv string
		kept string // indices kept, as content
		out  int
	}{
		{DeltaWindow{}, "suatat", "012345", 0},
		{DeltaWindow{Head: 1, Tail: 1}, "suatat", "05", 4},
		{DeltaWindow{Head: 1, Tail: 1}, "sa", "01", 0},
		{DeltaWindow{Head: 1, LastUser: true, Tail: 1}, "suatata", "016", 4},
		{DeltaWindow{Head: 1, LastUser: true, Tail: 2}, "suatuat", "0456", 3},
		{DeltaWindow{Head: 1, LastUser: true, Tail: 2, Parity: true}, "suatuat", "03456", 2},
		{DeltaWindow{Head: 1, Tail: 2, Parity: true}, "suatata", "056", 4},
		{DeltaWindow{Head: 1, Tail: 2, Parity: true}, "suatat", "0345", 2},
		{DeltaWindow{Head: 2, LastUser: true, Tail: 1}, "suatata", "016", 4},
	} {
		h := roles(c.conv)
		got, out := c.w.apply(h)
		var kept strings.Builder
		for _, m := range got {
			kept.WriteString(m.Content)
		}
		if kept.String() != c.kept || out != c.out || c.w.LeavesOut(h) != c.out {
			t.Errorf("%v on %s: kept %s, left out %d (LeavesOut %d); want %s, %d", c.w, c.conv, kept.String(), out, c.w.LeavesOut(h), c.kept, c.out)
		}
	}
}
