package tito

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkEncodeMessages is the JSON the template engine reads for a conversation (written on every render and
// delta): system, user, two tool-call rounds with 1 KB tool results (quotes, newlines, non-ASCII in them).
func BenchmarkEncodeMessages(b *testing.B) {
	result := strings.Repeat("{\"title\": \"Lyon – Wikipedia\", \"snippet\": \"Lyon has a population of 522,250 (2021).\\n\"}\n", 12)
	call := func(id, q string) Message {
		return Message{Role: RoleAssistant, Content: "Let me search.", ToolCalls: []ToolCall{{ID: id, Type: "function",
			Function: FunctionCall{Name: "search", Arguments: json.RawMessage(`{"query": "` + q + `"}`)}}}}
	}
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a helpful agent. Answer in English; use the tools when they help."},
		{Role: RoleUser, Content: "Find the population of Lyon and compute its square root."},
		call("call00001", "population of Lyon"),
		{Role: RoleTool, ToolCallID: "call00001", Name: "search", Content: result},
		call("call00002", "square root of 522250"),
		{Role: RoleTool, ToolCallID: "call00002", Name: "search", Content: result},
	}
	enc, err := encodeMessages(msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc.json)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeMessages(msgs); err != nil {
			b.Fatal(err)
		}
	}
}
