package system_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// replyScript answers an episode's k-th model call with replies[k] (then a plain answer), each ending with
// <|im_end|> (Qwen3). Safe for concurrent use.
type replyScript struct {
	replies []string
	mu      sync.Mutex
	turns   map[string]int
}

func (g *replyScript) Generate(_ context.Context, episodeID string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.mu.Lock()
	k := g.turns[episodeID]
	g.turns[episodeID]++
	g.mu.Unlock()
	reply := "The answer is 5."
	if k < len(g.replies) {
		reply = g.replies[k]
	}
	out := append(qwen3.Tokenizer.Encode(reply, false), qwen3.Tokenizer.Encode("<|im_end|>", false)...)
	var in []sglang.LogprobEntry
	if req.LogprobStartLen >= 0 {
		in = make([]sglang.LogprobEntry, len(req.InputIDs)-req.LogprobStartLen)
		for i := range in {
			in[i] = sglang.LogprobEntry{Logprob: -1, Null: i == 0}
		}
	}
	lp := make([]sglang.LogprobEntry, len(out))
	for i := range lp {
		lp[i] = sglang.LogprobEntry{Logprob: -0.5}
	}
	return &sglang.GenerateResponse{OutputIDs: out, MetaInfo: sglang.MetaInfo{ID: req.RID, PromptTokens: len(req.InputIDs),
		FinishReason: &sglang.FinishReason{Type: sglang.FinishStop, MatchedTokenID: out[len(out)-1]}, InputTokenLogprobs: in, OutputTokenLogprobs: lp}}, nil
}

// TestParseErrorResultWording: a malformed call reaches the model with the parser's exact reason (which
// parameter, what was wanted, what was got) and the call as written, in the wording plugins/ABI.md 5.1 documents:
// as the named tool's result beside a well-formed call (its id of the family's form), and as one user message
// when the turn has no well-formed call to answer.
func TestParseErrorResultWording(t *testing.T) {
	const (
		bad  = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": 5}}\n</tool_call>"
		good = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2+3\"}}\n</tool_call>"
		want = "Error: the tool call could not be parsed (bad_arguments): arguments of \"calculator\": parameter \"expression\": want string, got integer 5\nThe call was: " + bad
	)
	tests := []struct {
		name  string
		reply string
		want  []tito.Message // the messages after the model's tool-calling turn
	}{
		{"beside a well-formed call", good + "\n" + bad, []tito.Message{
			{Role: "tool", Content: "5", ToolCallID: "call_0000", Name: "calculator"},
			{Role: "tool", Content: want, ToolCallID: "call_0001", Name: "calculator"},
		}},
		{"alone", bad, []tito.Message{{Role: "user", Content: want}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ac := config.DefaultAgent()
			ac.Name, ac.Family, ac.ContextWindow = "parse-errors", "qwen3", 1<<15
			ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
			ac.Tools = []config.Plugin{{Plugin: "builtin:calculator"}}
			agent, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Model: qwen3,
				Generator: &replyScript{replies: []string{tt.reply}, turns: map[string]int{}}})
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Close(context.Background())
			tr := agent.Run(context.Background(), runtime.Episode{ID: "pe", Messages: []tito.Message{{Role: "user", Content: "2+3?"}}})
			wantStatus(t, tr, runtime.StatusCompleted, "")
			if tr.Metrics["parse_errors.bad_arguments"] != 1 {
				t.Errorf("metrics %v, want parse_errors.bad_arguments 1", tr.Metrics)
			}
			msgs := messages(t, tr)
			var got []tito.Message
			for i, m := range msgs {
				if m.Role == "assistant" && i > 0 && len(got) == 0 {
					for _, r := range msgs[i+1:] {
						if r.Role == "assistant" {
							break
						}
						got = append(got, tito.Message{Role: r.Role, Content: r.Content, ToolCallID: r.ToolCallID, Name: r.Name})
					}
				}
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("after the calls the model read\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
