package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// compactHook subscribes to before_generate and, once the context passes limit tokens, answers with the first two
// messages and the last keep ones (a compaction written as a hook).
type compactHook struct {
	limit, keep int
	seen        []abi.Event
}

func (h *compactHook) Subscribed(ev string) bool { return ev == abi.EventBeforeGenerate }

func (h *compactHook) Handle(_ context.Context, ev *abi.Event) (abi.HookResponse, error) {
	h.seen = append(h.seen, *ev)
	if ev.ContextTokens <= h.limit || len(ev.Messages) <= 2+h.keep {
		return abi.HookResponse{}, nil
	}
	msgs := append(append([]abi.Message{}, ev.Messages[:2]...), ev.Messages[len(ev.Messages)-h.keep:]...)
	return abi.HookResponse{Messages: msgs}, nil
}

// TestBeforeGenerateHookCompacts: a before_generate hook that replaces the conversation starts a new sample whose
// first prompt is the template's full render of the hook's messages; the episode's samples are valid chains, and the
// hook saw the context's size and the conversation as a full render shows it (calls in tool_calls, not the text).
func TestBeforeGenerateHookCompacts(t *testing.T) {
	tmpl, err := qwen3.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for i := range 8 {
		replies = append(replies, fmt.Sprintf("Step %d of the task, with some words to grow the context.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%d+1\"}}\n</tool_call>", i, i))
	}
	replies = append(replies, "The answer is 5.")
	gen := &scripted{replies: replies}
	p, _ := parsers.New("hermes")
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}`)
	hook := &compactHook{limit: 400, keep: 2}
	ac := defaultSettings()
	ac.Name, ac.SystemPrompt = "hooked", "Use the calculator."
	a, err := runtime.NewAgent(ac, runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl,
		Parser: nativeParser{p}, StopIDs: qwen3.StopIDs, ContextWindow: 1 << 16, Kwargs: map[string]any{"enable_thinking": false}},
		Tools: []runtime.ToolBinding{{Plugin: "five", Tool: fiveTool{}, Specs: []json.RawMessage{spec}}},
		Hooks: []runtime.HookBinding{{Plugin: "compact", Hook: hook}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Run(context.Background(), runtime.Episode{ID: "hk", Messages: []tito.Message{{Role: "user", Content: "Work through the task."}}})
	if tr.Status != runtime.StatusCompleted {
		t.Fatalf("status %s/%s: %s", tr.Status, tr.StatusReason, tr.Error)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.SampleCount() < 2 || tr.Metrics["context.compactions"] != float64(tr.SampleCount()-1) {
		t.Fatalf("%d samples, %v compactions: the hook's replacements must start samples", tr.SampleCount(), tr.Metrics["context.compactions"])
	}
	if len(hook.seen) != 9-1 { // before each call after the first
		t.Errorf("the hook saw %d before_generate events, want 8", len(hook.seen))
	}
	for _, ev := range hook.seen {
		if ev.ContextTokens == 0 || ev.ContextWindow != 1<<16 || len(ev.Messages) < 4 {
			t.Fatalf("before_generate event: context %d of %d, %d messages", ev.ContextTokens, ev.ContextWindow, len(ev.Messages))
		}
		for _, m := range ev.Messages {
			if m.Role == tito.RoleAssistant && (strings.Contains(m.Content, "<tool_call>") || len(m.ToolCalls) != 1) {
				t.Fatalf("the hook saw an assistant message with its call in the text: %+v", m)
			}
		}
	}
	for _, s := range tr.AllSamples()[1:] {
		msgs, err := tito.DecodeMessages(s.Messages)
		if err != nil {
			t.Fatal(err)
		}
		text, err := tmpl.Render(msgs[:s.PromptMessages], tito.RenderOptions{Tools: []json.RawMessage{spec}, AddGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": false}})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.TokenIDs[:s.Segments[0].Length]; !slices32(got, qwen3.Tokenizer.Encode(text, false)) {
			t.Errorf("sample %d: the first prompt is not the full render of the hook's %d messages", s.Index, s.PromptMessages)
		}
		if s.PromptMessages != 4 || msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Errorf("sample %d: %d prompt messages starting %s, %s; want the hook's four", s.Index, s.PromptMessages, msgs[0].Role, msgs[1].Role)
		}
	}
}

// TestBeforeGenerateHookBadMessages: a hook's conversation with an unknown role fails the episode, naming the hook
// event; the trajectory stays valid.
func TestBeforeGenerateHookBadMessages(t *testing.T) {
	tmpl, err := qwen3.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	gen := &scripted{replies: []string{"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+1\"}}\n</tool_call>", "Done."}}
	p, _ := parsers.New("hermes")
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}`)
	bad := hookFunc(func(ev *abi.Event) abi.HookResponse {
		return abi.HookResponse{Messages: []abi.Message{{Role: "narrator", Content: "x"}}}
	})
	a, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl,
		Parser: nativeParser{p}, StopIDs: qwen3.StopIDs, ContextWindow: 1 << 16},
		Tools: []runtime.ToolBinding{{Plugin: "five", Tool: fiveTool{}, Specs: []json.RawMessage{spec}}},
		Hooks: []runtime.HookBinding{{Plugin: "bad", Hook: bad}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Run(context.Background(), runtime.Episode{ID: "bad", Messages: []tito.Message{{Role: "user", Content: "Go."}}})
	if tr.Status != runtime.StatusFailed || tr.StatusReason != runtime.ReasonHookFailure || !strings.Contains(tr.Error, `role "narrator"`) {
		t.Fatalf("status %s/%s (%s), want failed/hook_failure naming the role", tr.Status, tr.StatusReason, tr.Error)
	}
	if err := tr.Validate(); err != nil || tr.MultiSample() {
		t.Fatalf("trajectory: %v, %d samples", err, tr.SampleCount())
	}
}

type hookFunc func(*abi.Event) abi.HookResponse

func (hookFunc) Subscribed(ev string) bool { return ev == abi.EventBeforeGenerate }
func (f hookFunc) Handle(_ context.Context, ev *abi.Event) (abi.HookResponse, error) {
	return f(ev), nil
}

func slices32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMaskSummaryNeedsSummarize: NewAgent refuses mask_summary without policy "summarize" (no other policy makes a
// summary call) and takes it with that policy.
func TestMaskSummaryNeedsSummarize(t *testing.T) {
	tmpl, err := qwen3.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := parsers.New("hermes")
	for _, tc := range []struct {
		policy string
		ok     bool
	}{{"", false}, {runtime.ContextKeepLast, false}, {runtime.ContextSummarize, true}} {
		cfg := defaultSettings()
		cfg.Context = runtime.ContextPolicy{Policy: tc.policy, MaskSummary: true}
		if tc.policy != "" {
			cfg.Context.MaxTokens, cfg.Context.KeepTurns = 1000, 1
		}
		_, err := runtime.NewAgent(cfg, runtime.Deps{Model: &turn.Model{Generator: &scripted{}, Tokenizer: qwen3.Tokenizer, Template: tmpl,
			Parser: nativeParser{p}, StopIDs: qwen3.StopIDs, ContextWindow: 1 << 16}})
		if tc.ok && err != nil {
			t.Errorf("policy %q: %v", tc.policy, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), `mask_summary needs policy "summarize"`)) {
			t.Errorf("policy %q: NewAgent = %v, want mask_summary refused", tc.policy, err)
		}
	}
}
