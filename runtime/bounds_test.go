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
	"github.com/agentrt/agentrt/tito"
)

type bigTool struct{ n int }

func (b bigTool) Call(context.Context, string, json.RawMessage) (abi.ToolResult, error) {
	s := strings.Repeat("x", b.n)
	return abi.ToolResult{Text: &s}, nil
}

// A tool result past max_tool_result_bytes reaches the model as an error result saying so, never whole.
func TestToolResultIsCapped(t *testing.T) {
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
	gen := &scriptGen{tok: tok, replies: []string{call, "\n<think></think>\nDone."}, stops: []string{"<|observation|>", "<|user|>"}}
	p, _ := parsers.New(prof.Parser)
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}`)
	ac := defaultSettings()
	ac.Name, ac.MaxToolResultBytes = "big", 1000
	a, err := runtime.NewAgent(ac, runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: tok, Template: tmpl, Parser: nativeParser{p},
		StopIDs: []int32{tok.id("<|endoftext|>"), tok.id("<|observation|>"), tok.id("<|user|>")}, ContextWindow: 1 << 20},
		Tools: []runtime.ToolBinding{{Plugin: "big", Tool: bigTool{900_000}, Specs: []json.RawMessage{spec}}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := a.Run(context.Background(), runtime.Episode{ID: "big-1", Messages: []tito.Message{{Role: "user", Content: "What is 2 + 3?"}}})
	if tr.Status != runtime.StatusCompleted || len(gen.reqs) != 2 {
		t.Fatalf("status %s/%s (%s) after %d requests, want completed after 2", tr.Status, tr.StatusReason, tr.Error, len(gen.reqs))
	}
	const want = "Error: tool calculator returned 900000 bytes, more than max_tool_result_bytes (1000)"
	if got := tok.Decode(gen.reqs[1], false); !strings.Contains(got, want) || len(got) > 10_000 {
		t.Fatalf("second request (%d bytes) does not carry %q:\n%.2000s", len(got), want, got)
	}
}
