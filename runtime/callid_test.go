package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// scripted answers each call of an episode with the next reply of a fixed script (each ends with <|im_end|>).
type scripted struct{ replies []string }

func (g *scripted) Generate(_ context.Context, _ string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	reply := g.replies[0]
	g.replies = g.replies[1:]
	out := append(qwen3.Tokenizer.Encode(reply, false), qwen3.Tokenizer.Encode("<|im_end|>", false)...)
	var in []sglang.LogprobEntry // none on a first prompt (logprob_start_len -1), as SGLang
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

// Mistral's templates take only 9-alphanumeric tool call ids: the agent keeps the id the model wrote
// ([CALL_ID]) and makes a deterministic one where it wrote none; the tool result names the same id, and the
// template renders the episode without raising.
func TestAgentMistralCallIDs(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "tito", "testdata", "families", "mistral-small-3.2", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	m := *qwen3
	m.TemplateSource, m.TemplateFile, m.NamedTemplates = string(src), tito.FileChatTemplate, nil
	tmpl, err := m.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := parsers.WasmConfig("mistral")
	mod, err := host.Load(context.Background(), plugin.Spec{Name: "builtin:parser:mistral", Wasm: parsers.Wasm(), Trusted: true, Config: cfg,
		Tools: []abi.ToolSpec{{Name: "calculator", Description: "Evaluate.", Parameters: abi.RawJSON(`{"type":"object"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(context.Background()) })
	parser, _ := mod.Parser()
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object"}}}`)
	gen := &scripted{replies: []string{
		`[TOOL_CALLS]calculator[ARGS]{"expression": "2+3"}`,                   // no id: the agent makes one
		`[TOOL_CALLS]calculator[CALL_ID]Ab3De6Gh9[ARGS]{"expression": "5*4"}`, // the model's own id: kept
		"The answer is 20.",
	}}
	agent, err := runtime.NewAgent(defaultSettings(), runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl,
		Parser: parser, StopIDs: qwen3.StopIDs, ContextWindow: 1 << 15, CallIDs: family.CallIDAlnum9},
		Tools: []runtime.ToolBinding{{Plugin: "good", Tool: goodTool{}, Specs: []json.RawMessage{spec}}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := agent.Run(context.Background(), runtime.Episode{ID: "ep", Messages: []tito.Message{{Role: "user", Content: "2+3, times 4?"}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	var msgs []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(tr.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	want := []string{family.CallIDAlnum9.ID("ep/1", 0, "calculator", 0), "Ab3De6Gh9"}
	var calls, results []string
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			calls = append(calls, c.ID)
		}
		if msg.Role == "tool" {
			results = append(results, msg.ToolCallID)
		}
	}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] || len(results) != 2 || results[0] != want[0] || results[1] != want[1] {
		t.Fatalf("call ids %v, tool results for %v; want %v for both", calls, results, want)
	}
}
