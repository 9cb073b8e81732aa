package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// recording is scripted, keeping each request's input_ids.
type recording struct {
	scripted
	reqs [][]int32
}

func (g *recording) Generate(ctx context.Context, key string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.reqs = append(g.reqs, req.InputIDs)
	return g.scripted.Generate(ctx, key, req)
}

// The delta window is audited once per episode against the whole render: with a window that is wrong for the
// template (one that numbers the conversation's messages in its generation prompt), the audit finds the first
// windowed delta different, keeps the whole render's (every prompt the model gets equals the template's full
// render of the conversation), warns, and turns the window off, so the next episode is rendered whole without a
// warning. With Qwen3's own template the same window passes the audit.
func TestAgentDeltaWindowAudit(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "tito", "testdata", "families", "qwen3", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	const genPrompt = `{{- '<|im_start|>assistant\n' }}`
	if !strings.Contains(string(src), genPrompt) {
		t.Fatalf("qwen3's template has no %s", genPrompt)
	}
	numbered := strings.Replace(string(src), genPrompt, `{{- '<|im_start|>assistant\nturn ' + (messages|length|string) + '\n' }}`, 1)
	call := func(expr string) string {
		return "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" + expr + "\"}}\n</tool_call>"
	}
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object"}}}`)
	p, err := parsers.New("hermes")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, src string
		drift     bool
	}{{"numbered", numbered, true}, {"qwen3", string(src), false}} {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := tito.NewChatTemplate(c.src, qwen3.SpecialTokens(), tito.WithEndOfTurn("<|im_end|>"))
			if err != nil {
				t.Fatal(err)
			}
			gen := &recording{}
			newAgent := func(w tito.DeltaWindow) *runtime.Agent {
				model := &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl, Parser: nativeParser{p},
					StopIDs: qwen3.StopIDs, ContextWindow: 1 << 15, Window: w}
				agent, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: model,
					Tools: []runtime.ToolBinding{{Plugin: "good", Tool: goodTool{}, Specs: []json.RawMessage{spec}}}})
				if err != nil {
					t.Fatal(err)
				}
				return agent
			}
			run := func(agent *runtime.Agent) *tito.Trajectory {
				gen.replies, gen.reqs = []string{call("2+3"), call("5*4"), call("20-1"), "The answer is 19."}, nil
				tr := agent.Run(context.Background(), runtime.Episode{ID: "ep", Messages: []tito.Message{{Role: "user", Content: "2+3, times 4, minus 1?"}}})
				wantStatus(t, tr, runtime.StatusCompleted, "")
				return tr
			}
			run(newAgent(tito.DeltaWindow{})) // every delta rendered whole: the prompts to match
			whole := gen.reqs
			if len(whole) != 4 {
				t.Fatalf("%d requests, want 4", len(whole))
			}
			agent := newAgent(tito.DeltaWindow{Head: 1, Tail: 1})
			for ep := range 2 {
				tr := run(agent)
				warned := strings.Contains(strings.Join(tr.Warnings, "\n"), "delta window")
				if warned != (c.drift && ep == 0) {
					t.Fatalf("episode %d: warnings %q; want a delta window warning: %v", ep+1, tr.Warnings, c.drift && ep == 0)
				}
				if len(gen.reqs) != len(whole) {
					t.Fatalf("episode %d: %d requests, want %d", ep+1, len(gen.reqs), len(whole))
				}
				for k := range whole {
					if got, want := qwen3.Tokenizer.Decode(gen.reqs[k], false), qwen3.Tokenizer.Decode(whole[k], false); got != want {
						t.Fatalf("episode %d, request %d: prompt\n%s\nwant the whole renders'\n%s", ep+1, k+1, got, want)
					}
				}
			}
		})
	}
}
