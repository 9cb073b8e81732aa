package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// byteTok is a test tokenizer: one id per special token (matched first), else one id per byte.
type byteTok struct{ specials []string }

func (b byteTok) id(s string) int32 {
	for i, sp := range b.specials {
		if sp == s {
			return int32(1000 + i)
		}
	}
	panic("no special token " + s)
}

func (b byteTok) Encode(text string, _ bool) []int32 {
	var ids []int32
	for i := 0; i < len(text); {
		matched := false
		for j, sp := range b.specials {
			if strings.HasPrefix(text[i:], sp) {
				ids, i, matched = append(ids, int32(1000+j)), i+len(sp), true
				break
			}
		}
		if !matched {
			ids, i = append(ids, int32(text[i])), i+1
		}
	}
	return ids
}

func (b byteTok) Decode(ids []int32, _ bool) string {
	var sb strings.Builder
	for _, id := range ids {
		if id >= 1000 {
			sb.WriteString(b.specials[id-1000])
		} else {
			sb.WriteByte(byte(id))
		}
	}
	return sb.String()
}

// scriptGen answers each /generate with the next scripted reply, ended by its stop token, and logs the requests.
type scriptGen struct {
	tok     byteTok
	replies []string
	stops   []string
	reqs    [][]int32
}

func (g *scriptGen) Generate(_ context.Context, _ string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	k := len(g.reqs)
	g.reqs = append(g.reqs, append([]int32(nil), req.InputIDs...))
	stop := g.tok.id(g.stops[k])
	out := append(g.tok.Encode(g.replies[k], false), stop)
	var in []sglang.LogprobEntry // none for logprob_start_len -1
	if req.LogprobStartLen >= 0 {
		in = make([]sglang.LogprobEntry, len(req.InputIDs)-req.LogprobStartLen)
	}
	for i := range in {
		in[i] = sglang.LogprobEntry{Logprob: -1, Null: i == 0}
	}
	outLP := make([]sglang.LogprobEntry, len(out))
	for i := range outLP {
		outLP[i] = sglang.LogprobEntry{Logprob: -0.5}
	}
	return &sglang.GenerateResponse{OutputIDs: out, MetaInfo: sglang.MetaInfo{ID: req.RID, PromptTokens: len(req.InputIDs),
		FinishReason: &sglang.FinishReason{Type: sglang.FinishStop, MatchedTokenID: stop}, InputTokenLogprobs: in, OutputTokenLogprobs: outLP}}, nil
}

type nativeParser struct{ p *parsers.Parser }

func (n nativeParser) Parse(_ context.Context, text string) (abi.ParseResult, error) {
	r := n.p.Parse(text, nil)
	var out abi.ParseResult
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, abi.ParsedCall{ID: c.ID, Name: c.Name, Arguments: abi.RawJSON(c.Arguments)})
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, abi.ParseError{Reason: string(e.Reason), Message: e.Message, Raw: e.Raw})
	}
	return out, nil
}

type fiveTool struct{}

func (fiveTool) Call(context.Context, string, json.RawMessage) (abi.ToolResult, error) {
	s := "5"
	return abi.ToolResult{Text: &s}, nil
}

// TestStopThatBeginsNextMessage: GLM ends a tool-calling turn with <|observation|>, which its template writes as
// the start of the tool message. The loop keeps the generated token and appends the rest of the delta, so the
// next request is exactly transformers' render of the conversation: the token is neither lost nor doubled.
func TestStopThatBeginsNextMessage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "tito", "testdata", "families", "glm-4.6", tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := family.Lookup("glm-4.6")
	tmpl, err := tito.NewChatTemplate(string(src), tito.SpecialTokens{"eos_token": "<|endoftext|>"}, prof.TemplateOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	tok := byteTok{specials: []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>"}}
	call := "\n<think></think>\n<tool_call>calculator\n<arg_key>expression</arg_key>\n<arg_value>2 + 3</arg_value>\n</tool_call>"
	gen := &scriptGen{tok: tok, replies: []string{call, "\n<think></think>\nThe answer is 5."}, stops: []string{"<|observation|>", "<|user|>"}}
	p, _ := parsers.New(prof.Parser)
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}`)
	ac := defaultSettings()
	ac.Name, ac.SystemPrompt = "glm", "Use the calculator."
	a, err := runtime.NewAgent(ac, runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: tok, Template: tmpl, Parser: nativeParser{p},
		StopIDs: []int32{tok.id("<|endoftext|>"), tok.id("<|observation|>"), tok.id("<|user|>")}, ContextWindow: 1 << 16},
		Tools: []runtime.ToolBinding{{Plugin: "five", Tool: fiveTool{}, Specs: []json.RawMessage{spec}}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Run(context.Background(), runtime.Episode{ID: "glm-1", Messages: []tito.Message{{Role: "user", Content: "What is 2 + 3?"}}})
	if tr.Status != runtime.StatusCompleted || len(gen.reqs) != 2 {
		t.Fatalf("status %s/%s (%s) after %d requests, want completed after 2", tr.Status, tr.StatusReason, tr.Error, len(gen.reqs))
	}
	msgs, err := tito.DecodeMessages([]byte(`[{"role": "system", "content": "Use the calculator."}, {"role": "user", "content": "What is 2 + 3?"},
		{"role": "assistant", "content": "", "tool_calls": [{"id": "call_0000", "type": "function", "function": {"name": "calculator", "arguments": {"expression": "2 + 3"}}}]},
		{"role": "tool", "tool_call_id": "call_0000", "name": "calculator", "content": "5"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want, err := tmpl.Render(msgs, tito.RenderOptions{Tools: []json.RawMessage{spec}, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode(gen.reqs[1], false); got != want {
		t.Fatalf("second request:\n%q\nwant transformers' render of the conversation:\n%q", got, want)
	}
}
