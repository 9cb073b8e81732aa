package frontdoor

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// FuzzConvert feeds arbitrary JSON to the three APIs' message converters: each returns messages or an error,
// never panics, and what it returns is valid for the chat template.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{
		`[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"1"}]}]`,
		`[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},{"type":"tool_use","id":"x","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"1"}]},{"type":"text","text":"go on"}]}]`,
		`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"},{"role":"developer","content":[{"type":"input_text","text":"x"}]}]`,
		`[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"\"[1]\""}}]}]`,
		`[{"role":"user","content":[{"type":"image"}]}]`,
		`[{"type":"function_call","arguments":"nope"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if msgs, err := tito.DecodeMessages(data); err == nil {
			for _, m := range msgs {
				if out, err := normalize(m); err == nil {
					if err := tito.ValidateMessages([]tito.Message{out}); err != nil {
						t.Fatalf("normalize returned an invalid message: %v", err)
					}
				}
			}
		}
		var am []anthMessage
		if json.Unmarshal(data, &am) == nil {
			for _, m := range am {
				if out, err := anthToChat(m); err == nil {
					if err := tito.ValidateMessages(out); err != nil {
						t.Fatalf("anthToChat returned invalid messages: %v", err)
					}
				}
			}
		}
		var items []respItem
		if json.Unmarshal(data, &items) == nil {
			if out, err := itemsToChat(items); err == nil && len(out) > 0 {
				if err := tito.ValidateMessages(out); err != nil {
					t.Fatalf("itemsToChat returned invalid messages: %v", err)
				}
			}
		}
	})
}
