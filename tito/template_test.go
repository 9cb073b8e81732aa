package tito

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustTemplate(t testing.TB, src string, special SpecialTokens, opts ...TemplateOption) *ChatTemplate {
	t.Helper()
	tpl, err := NewChatTemplate(src, special, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func familyTemplate(t testing.TB, family string) *ChatTemplate {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "template", family+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	special := SpecialTokens{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
	if family == "llama31" {
		special = SpecialTokens{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
	}
	return mustTemplate(t, string(src), special)
}

func TestSeparatorDetected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		family, want string
	}{
		{"qwen3", "\n"},
		{"qwen25", "\n"},
		{"llama31", ""},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			tpl := familyTemplate(t, tt.family)
			if got := tpl.Separator(); got != tt.want {
				t.Errorf("Separator() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSeparatorUndetectable(t *testing.T) {
	t.Parallel()
	// No eos_token: the template renders, but RenderDelta says why it cannot work.
	tpl := mustTemplate(t, "{% for m in messages %}{{ m.content }}<END>\n{% endfor %}", nil)
	if got, err := tpl.Render([]Message{{Role: RoleUser, Content: "a"}}, RenderOptions{}); err != nil || got != "a<END>\n" {
		t.Fatalf("Render = %q, %v", got, err)
	}
	_, err := tpl.RenderDelta([]Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Content: "b"}}, []Message{{Role: RoleUser, Content: "a"}}, RenderOptions{})
	if err == nil || !strings.Contains(err.Error(), "WithEndOfTurn") {
		t.Fatalf("RenderDelta error = %v, want one that names WithEndOfTurn", err)
	}
	tpl = mustTemplate(t, "{% for m in messages %}{{ m.content }}<END>\n{% endfor %}", nil, WithEndOfTurn("<END>"))
	if got, err := tpl.RenderDelta([]Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Content: "b"}}, []Message{{Role: RoleUser, Content: "a"}}, RenderOptions{}); err != nil || got != "\na<END>\n" {
		t.Fatalf("RenderDelta with WithEndOfTurn = %q, %v", got, err)
	}
}

func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	user := []Message{{Role: RoleUser, Content: "hi"}}
	tests := []struct {
		name      string
		src       string
		msgs      []Message
		opts      RenderOptions
		wantParse bool
		wantLine  int
		wantRaise string
		wantErr   string
	}{
		{name: "syntax error line", src: "line one\n{% if messages %}\n{{ messages[0].content }\n{% endif %}", wantParse: true, wantLine: 3},
		{name: "unclosed block", src: "{% for m in messages %}\n\n{{ m.content }}", wantParse: true},
		{name: "raise_exception", src: "{% if messages[0].role != 'system' %}{{ raise_exception('Conversation must start with a system message, got ' + messages[0].role) }}{% endif %}", msgs: user, wantRaise: "Conversation must start with a system message, got user"},
		{name: "raise inside loop", src: "{% for m in messages %}{% if m.role == 'user' %}{{ raise_exception('no users') }}{% endif %}{% endfor %}", msgs: user, wantRaise: "no users"},
		{name: "unknown role", src: "{{ messages }}", msgs: []Message{{Role: "robot"}}, wantErr: `tito: message 0: role: unknown role "robot" (want one of system, developer, user, assistant, tool, ipython, function)`},
		{name: "missing role", src: "{{ messages }}", msgs: []Message{{Role: RoleUser}, {Content: "x"}}, wantErr: "tito: message 1: role: missing"},
		{name: "no messages", src: "x", wantErr: "no messages"},
		{name: "bad arguments", src: "x", msgs: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`[1]`)}}}}}, wantErr: "message 0: tool_calls[0].function.arguments: want a JSON object or a string"},
		{name: "missing function name", src: "x", msgs: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{}}}}, wantErr: "message 0: tool_calls[0].function.name: missing"},
		{name: "reserved kwarg", src: "x", msgs: user, opts: RenderOptions{Kwargs: map[string]any{"messages": 1}}, wantErr: `kwarg "messages" is reserved`},
		{name: "bad kwarg type", src: "x", msgs: user, opts: RenderOptions{Kwargs: map[string]any{"x": struct{}{}}}, wantErr: `kwarg "x": unsupported type struct {}`},
		{name: "tool not object", src: "x", msgs: user, opts: RenderOptions{Tools: []json.RawMessage{json.RawMessage(`"f"`)}}, wantErr: "tool 0: want a JSON object"},
		{name: "include blocked", src: "{% include '/etc/hostname' %}", msgs: user, wantErr: "unknown statement include"},
		{name: "runtime error", src: "{{ messages[0].nope.deeper }}", msgs: user, wantErr: "tito: chat template: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := NewChatTemplate(tt.src, nil)
			if tt.wantParse {
				var te *TemplateError
				if !errors.As(err, &te) || te.Raised || (tt.wantLine > 0 && te.Line != tt.wantLine) {
					t.Fatalf("NewChatTemplate error = %v (%#v), want a syntax error at line %d", err, te, tt.wantLine)
				}
				if strings.Contains(err.Error(), tt.src) {
					t.Errorf("error quotes the whole template: %v", err)
				}
				return
			}
			if err != nil {
				// Templates that fail at include time may fail here already; that is fine if the message says so.
				if tt.wantErr != "" && strings.Contains(err.Error(), tt.wantErr) {
					return
				}
				t.Fatal(err)
			}
			_, err = tpl.Render(tt.msgs, tt.opts)
			if tt.wantRaise != "" {
				var te *TemplateError
				if !errors.As(err, &te) || !te.Raised || te.Message != tt.wantRaise {
					t.Fatalf("error = %v (%#v), want raise_exception(%q)", err, te, tt.wantRaise)
				}
				if want := "tito: chat template: line 1: raised an exception: " + tt.wantRaise; err.Error() != want {
					t.Errorf("error text %q, want %q", err, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeMessagesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"not json", `[{"role": "user",}]`, "line 1, column 18"},
		{"not an array", `{"role": "user"}`, "want a JSON array of message objects"},
		{"not an object", `[{"role":"user","content":"a"}, 7]`, "tito: message 1: want a JSON object, got 7"},
		{"content type", `[{"role":"user","content":7}]`, "tito: message 0: content: want a string, got 7"},
		{"tool_calls type", `[{"role":"assistant","tool_calls":{"a":1}}]`, "tito: message 0: tool_calls: want a list of tool calls"},
		{"nested type", `[{"role":"assistant","tool_calls":[{"id":1,"function":{"name":"f"}}]}]`, "tito: message 0: tool_calls[0].id: want a string, got 1"},
		{"function type", `[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":3}}]}]`, "tito: message 0: tool_calls[0].function.arguments: want a JSON object or a string"},
		{"unknown role", "[\n{\"role\":\"user\",\"content\":\"a\"},\n{\"role\":\"bot\",\"content\":\"b\"}]", `tito: message 1: role: unknown role "bot"`},
		{"empty", `[]`, "no messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeMessages([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeMessages error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestMessageJSONRoundTrip checks that decoding then encoding keeps key order, unknown keys, string vs object
// arguments and content parts, and drops null values as transformers does.
func TestMessageJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := `[{"content":"c","role":"user","x_meta":{"b":1,"a":[true,null]}},` +
		`{"role":"assistant","content":"","tool_calls":[{"type":"function","id":"c0","function":{"arguments":{"z":1,"a":"ü"},"name":"f"}},` +
		`{"id":"c1","function":{"name":"g","arguments":"{\"raw\":  1}"},"x":2}],"reasoning_content":"r","name":null},` +
		`{"role":"tool","tool_call_id":"c0","content":[{"type":"text","text":"t"}]}]`
	msgs, err := DecodeMessages([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, `,"name":null`, "", 1) // null keys are dropped
	if string(out) != want {
		t.Fatalf("round trip\n got: %s\nwant: %s", out, want)
	}
	var again []Message
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, msgs) {
		t.Fatalf("decode(encode(m)) != m")
	}
	// The template sees the same keys in the same order.
	tpl := mustTemplate(t, "{% for m in messages %}{% for k, v in m|items %}{{ k }}={{ v|tojson }};{% endfor %}\n{% endfor %}", nil)
	got, err := tpl.Render(msgs, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRender := `content="c";role="user";x_meta={"b": 1, "a": [true, null]};` + // trim_blocks eats the template's newlines
		`thinking="r";role="assistant";content="";tool_calls=[{"type": "function", "id": "c0", "function": {"arguments": {"z": 1, "a": "ü"}, "name": "f"}}, {"id": "c1", "function": {"name": "g", "arguments": "{\"raw\":  1}"}, "x": 2}];reasoning_content="r";` +
		`role="tool";tool_call_id="c0";content=[{"type": "text", "text": "t"}];`
	if got != wantRender {
		t.Fatalf("template view\n got: %s\nwant: %s", got, wantRender)
	}
}

// TestMessageBuiltInGo checks the keys a message built in Go shows the template.
func TestMessageBuiltInGo(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Role: RoleUser},
		{Role: RoleAssistant, Content: "x", ToolCalls: []ToolCall{{ID: "1", Type: "function", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`{"a": 1}`)}}},
			Extra: []Field{{Key: "weight", Value: json.RawMessage(`0.5`)}}},
		{Role: RoleTool, Content: "r", ToolCallID: "1", Name: "f"},
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":""},{"role":"assistant","content":"x","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{"a":1}}}],"weight":0.5},{"role":"tool","content":"r","tool_call_id":"1","name":"f"}]`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}

// TestRenderDoesNotMutate checks that rendering leaves the caller's messages and options untouched.
func TestRenderDoesNotMutate(t *testing.T) {
	t.Parallel()
	tpl := familyTemplate(t, "qwen3")
	msgs, err := DecodeMessages([]byte(`[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_content":"r","tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(msgs)
	opts := RenderOptions{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}, Kwargs: map[string]any{"enable_thinking": false}}
	if _, err := tpl.Render(msgs, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := tpl.RenderDelta(msgs, []Message{{Role: RoleUser, Content: "c"}}, opts); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(msgs)
	if string(before) != string(after) || len(opts.Kwargs) != 1 || len(opts.Tools) != 1 {
		t.Fatalf("inputs changed:\n%s\n%s", before, after)
	}
}

func TestStrftimeNow(t *testing.T) {
	t.Parallel()
	clock := func() time.Time { return time.Date(2025, 3, 7, 14, 5, 9, 0, time.UTC) }
	tpl := mustTemplate(t, `{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %B %e %H:%M:%S %p %I %j %y %%") }}`, nil, WithClock(clock))
	got, err := tpl.Render([]Message{{Role: RoleUser}}, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "07 Mar 2025|Friday March  7 14:05:09 PM 02 066 25 %"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestRenderConcurrent renders one template from many goroutines (run with -race) and checks every result.
func TestRenderConcurrent(t *testing.T) {
	t.Parallel()
	var c goldenCase
	for _, gc := range loadGoldenCases(t) {
		if gc.Family == "qwen3" && gc.Kind == "render" && gc.Name == "tool_rounds" {
			c = gc
		}
	}
	tpl := familyTemplate(t, "qwen3")
	msgs := mustMessages(t, c.Messages)
	o := c.options(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				got, err := tpl.Render(msgs, o)
				if err == nil && got != c.Expected {
					err = fmt.Errorf("goroutine %d render %d differs", g, i)
				}
				if err == nil {
					_, err = tpl.RenderDelta(msgs[:len(msgs)-1], msgs[len(msgs)-1:], o)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzRenderDelta checks invariant 4 on arbitrary text: for each family, the delta of new user or tool messages
// is exactly what the full render of history + new adds after the history's last end-of-turn token (for Qwen3,
// whose template re-renders the last assistant turn, it is at least a suffix that starts right after one).
func FuzzRenderDelta(f *testing.F) {
	for _, s := range []string{"hi", "<|im_end|>\n<|im_start|>user", "{{ x }}{% if %}", "  \n\n\t", "😀中文", "<tool_response>x</tool_response>"} {
		f.Add(s, s, true)
	}
	tpls := map[string]*ChatTemplate{}
	for _, fam := range []string{"qwen3", "qwen25", "llama31"} {
		tpls[fam] = familyTemplate(f, fam)
	}
	eot := map[string]string{"qwen3": "<|im_end|>", "qwen25": "<|im_end|>", "llama31": "<|eot_id|>"}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}`)}
	f.Fuzz(func(t *testing.T, a, b string, asTool bool) {
		history := []Message{
			{Role: RoleSystem, Content: "sys"},
			{Role: RoleUser, Content: a},
			{Role: RoleAssistant, Content: b, ReasoningContent: "r", ToolCalls: []ToolCall{{ID: "c", Type: "function", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`{"q": 1}`)}}}},
		}
		newMsgs := []Message{{Role: RoleUser, Content: b}}
		if asTool {
			newMsgs = []Message{{Role: RoleTool, ToolCallID: "c", Content: b}}
		}
		for fam, tpl := range tpls {
			o := RenderOptions{Tools: tools, AddGenerationPrompt: true}
			delta, err := tpl.RenderDelta(history, newMsgs, o)
			// Qwen3 reads a user message wrapped in <tool_response> tags as a tool result when it decides which
			// turns keep their reasoning: the history can then render differently, which RenderDelta must say.
			// No other input may make the history depend on the new message.
			if errors.Is(err, ErrHistoryDependsOnNew) {
				if fam != "qwen3" || asTool || !strings.HasPrefix(b, "<tool_response>") || !strings.HasSuffix(b, "</tool_response>") {
					t.Fatalf("%s: %v", fam, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", fam, err)
			}
			full, err1 := tpl.Render(slices.Concat(history, newMsgs), o)
			hist, err2 := tpl.Render(history, RenderOptions{Tools: tools})
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v %v", fam, err1, err2)
			}
			generated := strings.TrimSuffix(hist, tpl.Separator())
			if fam != "qwen3" || asTool {
				if generated+delta != full {
					t.Fatalf("%s: history + delta != full render\n%s", fam, textDiff(generated+delta, full))
				}
				continue
			}
			if !strings.HasSuffix(full, delta) || !strings.HasSuffix(full[:len(full)-len(delta)], eot[fam]) {
				t.Fatalf("%s: delta %q is not the suffix of %q after an end-of-turn", fam, delta, full)
			}
		}
	})
}
