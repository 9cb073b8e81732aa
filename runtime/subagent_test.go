package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// TestSubAgentRefusedCalls: sub-agent calls that cannot run answer with an error result and run no model call of a
// sub-episode (a task that is not a string, a sub-agent on other template kwargs, one that cannot be found), and the
// episode goes on; NewAgent refuses a sub-agent tool without a depth.
func TestSubAgentRefusedCalls(t *testing.T) {
	tmpl, err := qwen3.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) string {
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
	}
	gen := &scripted{replies: []string{call("coder", `{"task": 5}`), call("twin", `{"task": "x"}`), call("ghost", `{"task": "x"}`), "Done."}}
	p, _ := parsers.New("hermes")
	model := func(kwargs map[string]any) *turn.Model {
		return &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl, Parser: nativeParser{p}, StopIDs: qwen3.StopIDs,
			ContextWindow: 1 << 16, Kwargs: kwargs}
	}
	off := map[string]any{"enable_thinking": false}
	sub, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: model(off)})
	if err != nil {
		t.Fatal(err)
	}
	twin, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: model(map[string]any{"enable_thinking": true})})
	if err != nil {
		t.Fatal(err)
	}
	bind := func(fn string, a *runtime.Agent, err error) runtime.ToolBinding {
		return runtime.ToolBinding{Plugin: "agent:" + fn, Tool: &runtime.SubAgent{Agent: fn, Limits: runtime.SubAgentLimits{MaxDepth: 1},
			Resolve: func() (*runtime.Agent, error) { return a, err }}, Specs: []json.RawMessage{runtime.SubAgentSpec(fn, "Runs "+fn+".")}}
	}
	tools := []runtime.ToolBinding{bind("coder", sub, nil), bind("twin", twin, nil), bind("ghost", nil, errors.New("no agent \"ghost\""))}
	a, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: model(off), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Run(context.Background(), runtime.Episode{ID: "rf", Messages: []tito.Message{{Role: "user", Content: "Go."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	var msgs []tito.Message
	if err := json.Unmarshal(tr.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		if m.Role == tito.RoleTool {
			got = append(got, m.Content)
		}
	}
	want := []string{`Error: sub-agent coder needs a "task": a non-empty string`, "must use the caller's", `Error: sub-agent ghost: no agent "ghost"`}
	if len(got) != len(want) {
		t.Fatalf("tool results %q", got)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("tool result %d: %q, want %q in it", i, got[i], want[i])
		}
	}
	if tr.MultiSample() || tr.Metrics["subagent.episodes"] != 0 || len(gen.replies) != 0 {
		t.Errorf("a refused call ran an episode: %d samples, %v sub-episodes, %d replies left", tr.SampleCount(), tr.Metrics["subagent.episodes"], len(gen.replies))
	}
	bad := bind("coder", sub, nil)
	bad.Tool.(*runtime.SubAgent).Limits.MaxDepth = 0
	if _, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: model(off), Tools: []runtime.ToolBinding{bad}}); err == nil || !strings.Contains(err.Error(), "max_depth must be >= 1") {
		t.Errorf("NewAgent with max_depth 0: %v", err)
	}
}
