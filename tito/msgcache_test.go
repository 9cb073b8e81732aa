package tito

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestMessageCacheEncode: a MessageCache's JSON is encodeMessages' whatever the renders give it: a conversation
// that grows (the agent loop), the same messages rebuilt (equal text in new strings), a message changed in
// place (its tool call's arguments, its content), a shorter or another conversation (every golden case's, decoded
// with their own key orders and extra keys, one after the other).
func TestMessageCacheEncode(t *testing.T) {
	var c MessageCache
	check := func(what string, msgs []Message) {
		t.Helper()
		want, werr := encodeMessages(msgs)
		got, gerr := c.encode(msgs)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: error %v, encodeMessages %v", what, gerr, werr)
		}
		if !bytes.Equal(got.json, want.json) || !slices.Equal(got.ends, want.ends) {
			t.Fatalf("%s: the cache's JSON differs from encodeMessages'\ngot  %.300s\nwant %.300s", what, got.json, want.json)
		}
	}
	// the agent loop's conversation, turn by turn
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "notes \"quoted\" \u2028 é"}}
	rng := rand.New(rand.NewPCG(5, 6))
	for turn := range 40 {
		args := json.RawMessage(`{"expression": "` + strconv.Itoa(turn) + `"}`)
		msgs = append(msgs, Message{Role: RoleAssistant, Content: "<think>t" + strconv.Itoa(turn) + "</think>", ReasoningContent: []string{"", "why"}[turn%2],
			ToolCalls: []ToolCall{{ID: "call_" + strconv.Itoa(turn), Type: "function", Function: FunctionCall{Name: "calculator", Arguments: args}}}})
		check("turn "+strconv.Itoa(turn)+" history", msgs)
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: "call_" + strconv.Itoa(turn), Name: "calculator", Content: strconv.Itoa(turn * 3)})
		check("turn "+strconv.Itoa(turn)+" delta", msgs)
		switch rng.IntN(6) {
		case 0: // arguments changed in place (a slice the cache must not share)
			i := 2 + 2*rng.IntN(turn+1)
			msgs[i].ToolCalls[0].Function.Arguments[len(`{"expression": "`)] = 'x'
			check("arguments changed in place", msgs)
		case 1: // content replaced
			i := rng.IntN(len(msgs))
			msgs[i].Content += " (edited)"
			check("content replaced", msgs)
		case 2: // the same messages rebuilt: equal strings in new memory
			rebuilt := make([]Message, len(msgs))
			for i, m := range msgs {
				m.Content = string([]byte(m.Content))
				rebuilt[i] = cloneMessage(&m)
			}
			check("rebuilt", rebuilt)
		case 3: // shorter
			check("shorter", msgs[:rng.IntN(len(msgs))])
		}
	}
	// other conversations, decoded (key orders, extra keys, parts), one after the other through the same cache
	for _, gc := range loadGoldenCases(t) {
		for _, raw := range []json.RawMessage{gc.Messages, gc.History, gc.New} {
			if len(raw) == 0 || string(raw) == "null" {
				continue
			}
			m, err := DecodeMessages(raw)
			if err != nil {
				continue // the error cases' invalid messages
			}
			check(gc.file, m)
			check(gc.file+" again", m)
		}
	}
}

// TestSameMessage: every field tells two messages apart, nil apart from empty where the JSON differs.
func TestSameMessage(t *testing.T) {
	base := func() Message {
		return Message{Role: RoleAssistant, Content: "c", ReasoningContent: "r", ToolCallID: "i", Name: "n",
			ToolCalls: []ToolCall{{ID: "a", Type: "function", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`{}`)}}}}
	}
	for name, change := range map[string]func(*Message){
		"role": func(m *Message) { m.Role = RoleUser }, "content": func(m *Message) { m.Content = "d" },
		"reasoning": func(m *Message) { m.ReasoningContent = "" }, "tool_call_id": func(m *Message) { m.ToolCallID = "j" },
		"name": func(m *Message) { m.Name = "" }, "parts": func(m *Message) { m.Parts = []json.RawMessage{} },
		"extra":         func(m *Message) { m.Extra = []Field{} },
		"keys":          func(m *Message) { m.keys = []string{} },
		"no tool calls": func(m *Message) { m.ToolCalls = nil }, "empty tool calls": func(m *Message) { m.ToolCalls = []ToolCall{} },
		"call id":       func(m *Message) { m.ToolCalls[0].ID = "b" },
		"call type":     func(m *Message) { m.ToolCalls[0].Type = "" },
		"call extra":    func(m *Message) { m.ToolCalls[0].Extra = []Field{{Key: "k", Value: json.RawMessage(`1`)}} },
		"function":      func(m *Message) { m.ToolCalls[0].Function.Name = "g" },
		"arguments":     func(m *Message) { m.ToolCalls[0].Function.Arguments = json.RawMessage(`{"x":1}`) },
		"function keys": func(m *Message) { m.ToolCalls[0].Function.keys = []string{"name"} },
	} {
		a, b := base(), base()
		if !sameMessage(&a, &b) {
			t.Fatal("equal messages differ")
		}
		change(&b)
		if sameMessage(&a, &b) {
			t.Errorf("%s: changed, but the messages compare equal", name)
		}
	}
}
