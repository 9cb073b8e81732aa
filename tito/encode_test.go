package tito

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestWriteBuiltMessage: the shortcut for messages a program built writes exactly what the general encoder
// writes from their fields, errors included.
func TestWriteBuiltMessage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "x", "héllo \"q\" \\ \n\t\x01", "<|im_end|>", "\xff\xfe bad utf8", "😀"}
	raws := []json.RawMessage{nil, json.RawMessage(`{"q": 1}`), json.RawMessage(`"s"`), json.RawMessage(`null`), json.RawMessage(`{bad`), json.RawMessage(` [1, 2] `)}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	for i := 0; i < 5000; i++ {
		m := Message{Role: pick(), Content: pick(), ReasoningContent: pick(), ToolCallID: pick(), Name: pick()}
		if rng.IntN(4) == 0 {
			m.Parts = []json.RawMessage{}
			for range rng.IntN(3) {
				m.Parts = append(m.Parts, raws[1+rng.IntN(len(raws)-1)])
			}
		}
		if n := rng.IntN(4); n > 0 {
			m.ToolCalls = []ToolCall{}
			for range n - 1 {
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: pick(), Type: pick(), Function: FunctionCall{Name: pick(), Arguments: raws[rng.IntN(len(raws))]}})
			}
		}
		var fast, general bytes.Buffer
		if !built(&m) {
			t.Fatalf("built(%+v) = false", m)
		}
		err1 := writeBuiltMessage(&fast, &m)
		err2 := writeMessageFields(&general, &m)
		if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Fatalf("%+v: errors %v and %v", m, err1, err2)
		}
		if err1 == nil && fast.String() != general.String() {
			t.Fatalf("%+v:\nbuilt   %s\ngeneral %s", m, fast.String(), general.String())
		}
	}
	var decoded Message
	if err := json.Unmarshal([]byte(`{"content": "c", "role": "user"}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if built(&decoded) {
		t.Error("a decoded message counts as built: its key order would be lost")
	}
}
