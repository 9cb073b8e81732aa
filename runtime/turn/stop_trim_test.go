package turn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// stopTokenizer decodes the ids of the test's stop tokens.
type stopTokenizer map[int32]string

func (s stopTokenizer) Encode(string, bool) []int32 { return nil }
func (s stopTokenizer) Decode(ids []int32, _ bool) string {
	out := ""
	for _, id := range ids {
		out += s[id]
	}
	return out
}

// TestTrimGeneratedStop: GLM-4.6's model stops on <|observation|>, which its template writes as the start of the
// tool message; the delta appended after the response must not repeat it. A stop token that ends the turn
// (<|endoftext|>) leaves the delta alone.
func TestTrimGeneratedStop(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "tito", "testdata", "families", "glm-4.6", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := tito.NewChatTemplate(string(src), tito.SpecialTokens{"eos_token": "<|endoftext|>"}, tito.WithEndOfTurn("<|user|>", "<|observation|>"))
	if err != nil {
		t.Fatal(err)
	}
	history := []tito.Message{
		{Role: "user", Content: "weather?"},
		{Role: "assistant", Content: "", ToolCalls: []tito.ToolCall{{ID: "c1", Type: "function", Function: tito.FunctionCall{Name: "f", Arguments: json.RawMessage(`{"x": 1}`)}}}},
	}
	newMsgs := []tito.Message{{Role: "tool", ToolCallID: "c1", Content: "sunny"}}
	delta, err := tpl.RenderDelta(history, newMsgs, tito.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := stopTokenizer{1: "<|observation|>", 2: "<|endoftext|>"}
	m := &Model{Template: tpl, Tokenizer: tok}
	got, err := m.DeltaText(history, newMsgs, tito.RenderOptions{AddGenerationPrompt: true}, 1)
	if err != nil || "<|observation|>"+got != delta {
		t.Fatalf("delta after <|observation|> = %q (%v), want %q without its leading stop token", got, err, delta)
	}
	for _, stop := range []int32{2, -1} { // a stop that ends the turn, or none known
		if got, err := m.DeltaText(history, newMsgs, tito.RenderOptions{AddGenerationPrompt: true}, stop); err != nil || got != delta {
			t.Fatalf("delta after stop %d = %q (%v), want it unchanged %q", stop, got, err, delta)
		}
	}
}
