package tito

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DeltaWindow is which of the history's messages a template's delta depends on: the delta is rendered from
// those and the new messages alone (RenderOptions.Window), so that a later turn's render walks a few messages,
// not the whole conversation. Which window is exact is a property of the template (Qwen3 writes a tool result
// from the previous message's role and messages[0]'s; a template that numbers turns depends on every message):
// FindDeltaWindow decides it by rendering long conversations whole and windowed, and the agent loop audits a
// windowed delta against the whole render once per episode.
//
// The zero value (Tail 0) is no window: the whole conversation is rendered.
type DeltaWindow struct {
	// Head is how many of the history's first messages are kept (the system prompt, the first user message).
	Head int
	// LastUser keeps the history's last user message (Qwen3.5's last_query_index looks for it).
	LastUser bool
	// Tail is how many of the history's last messages are kept (>= 1 for a window: the turn the delta follows).
	Tail int
	// Parity keeps the number of messages left out even (templates that check roles alternate by loop.index).
	Parity bool
}

// Enabled reports whether w renders a window rather than the whole conversation.
func (w DeltaWindow) Enabled() bool { return w.Tail > 0 }

// String describes the window ("whole" when none).
func (w DeltaWindow) String() string {
	if !w.Enabled() {
		return "whole"
	}
	s := "first " + strconv.Itoa(w.Head)
	if w.LastUser {
		s += ", last user"
	}
	s += ", last " + strconv.Itoa(w.Tail)
	if w.Parity {
		s += ", even parity"
	}
	return s
}

// LeavesOut returns how many history messages the window leaves out (0 when it keeps them all or is not
// enabled).
func (w DeltaWindow) LeavesOut(history []Message) int {
	_, _, _, out := w.bounds(history)
	return out
}

// bounds returns what the window keeps of history: history[:head], history[user] when user >= 0, and
// history[from:]; out is how many messages it leaves out (0: the window keeps them all).
func (w DeltaWindow) bounds(history []Message) (head, user, from, out int) {
	n := len(history)
	if !w.Enabled() {
		return n, -1, n, 0
	}
	head, user, from = min(w.Head, n), -1, n-w.Tail
	if from <= head {
		return n, -1, n, 0
	}
	if w.LastUser {
		for i := from - 1; i >= head; i-- {
			if history[i].Role == RoleUser {
				user = i
				break
			}
		}
	}
	count := func() int {
		if user >= 0 {
			return from - head - 1
		}
		return from - head
	}
	out = count()
	for w.Parity && out%2 == 1 {
		from-- // one more tail message
		if from == user {
			user = -1 // now in the tail
		}
		out = count()
	}
	if out == 0 {
		return n, -1, n, 0
	}
	return head, user, from, out
}

// apply returns the messages of history that the window keeps, in order, and how many it left out.
func (w DeltaWindow) apply(history []Message) ([]Message, int) {
	head, user, from, out := w.bounds(history)
	if out == 0 {
		return history, 0
	}
	msgs := make([]Message, 0, len(history)-out)
	msgs = append(msgs, history[:head]...)
	if user >= 0 {
		msgs = append(msgs, history[user])
	}
	return append(msgs, history[from:]...), out
}

// deltaWindows are the windows FindDeltaWindow tries, smallest first.
var deltaWindows = []DeltaWindow{
	{Head: 1, Tail: 1},
	{Head: 1, Tail: 2},
	{Head: 1, LastUser: true, Tail: 1},
	{Head: 1, LastUser: true, Tail: 2},
	{Head: 1, Tail: 2, Parity: true},
	{Head: 1, LastUser: true, Tail: 2, Parity: true},
	{Head: 2, LastUser: true, Tail: 4},
	{Head: 2, LastUser: true, Tail: 4, Parity: true},
}

// ErrNoDeltaWindow: no window renders every turn of FindDeltaWindow's conversations as the whole render does.
var ErrNoDeltaWindow = errors.New("tito: delta window: no window gives the whole render's delta at every turn")

// FindDeltaWindow finds the smallest window whose deltas equal the whole render's, byte for byte, at every later
// turn of long agent conversations (tool rounds with one and two calls, reasoning as reasoning_content and as
// <think> in the content, tool results of several kilobytes, several user messages, one that wraps a tool
// response in tags, with and without a system prompt), with the options o (the deployment's tools and kwargs; its
// Tools replace the canonical tool spec when set). A turn where the whole render fails must fail windowed too.
// It returns the zero window and an error saying why when none is exact (the template then renders whole).
func (t *ChatTemplate) FindDeltaWindow(o RenderOptions) (DeltaWindow, error) {
	if t.sepErr != nil {
		return DeltaWindow{}, t.sepErr
	}
	o.AddGenerationPrompt = true
	o.Messages, o.Window = nil, DeltaWindow{}
	if o.Tools == nil {
		o.Tools = []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "lookup", "description": "Look a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}`)}
	}
	name := "lookup"
	var spec struct {
		Function struct{ Name string } `json:"function"`
	}
	if json.Unmarshal(o.Tools[0], &spec) == nil && spec.Function.Name != "" {
		name = spec.Function.Name
	}
	type turn struct {
		conv, at, to int
		delta        string
		err          error
	}
	convs := windowConversations(name)
	var turns []turn
	rendered := 0
	for c, conv := range convs {
		for at := 1; at < len(conv); at++ {
			if conv[at-1].Role != RoleAssistant || conv[at].Role == RoleAssistant {
				continue
			}
			to := at
			for to < len(conv) && conv[to].Role != RoleAssistant {
				to++
			}
			d, err := t.RenderDelta(conv[:at], conv[at:to], o)
			if err == nil {
				rendered++
			}
			turns = append(turns, turn{c, at, to, d, err})
			if err != nil {
				break // an episode ends at its first failure; a window must fail there too
			}
		}
	}
	if rendered == 0 {
		return DeltaWindow{}, fmt.Errorf("%w: the whole render fails at every turn (%v)", ErrNoDeltaWindow, turns[0].err)
	}
	var why string
	for _, w := range deltaWindows {
		wo := o
		wo.Window = w
		ok := true
		for _, tr := range turns {
			conv := convs[tr.conv]
			d, err := t.RenderDelta(conv[:tr.at], conv[tr.at:tr.to], wo)
			if (err == nil) != (tr.err == nil) || d != tr.delta {
				ok = false
				if why == "" {
					why = fmt.Sprintf("window %v at message %d of conversation %d: whole %q (%v), windowed %q (%v)", w, tr.at, tr.conv+1, tmplTail(tr.delta), tr.err, tmplTail(d), err)
				}
				break
			}
		}
		if ok {
			return w, nil
		}
	}
	return DeltaWindow{}, fmt.Errorf("%w (first difference: %s)", ErrNoDeltaWindow, why)
}

// windowConversations are FindDeltaWindow's conversations, calling the tool name.
func windowConversations(name string) [][]Message {
	text := func(n, seed int) string {
		words := strings.Fields("the of and a to in is that for it as was with be by on not this are or from at which but have an they you were there one all we their")
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[(i*7+seed*13+i*i)%len(words)])
		}
		return b.String()
	}
	id := 0
	call := func(k int) ToolCall {
		id++
		return ToolCall{ID: fmt.Sprintf("call%05d", id), Type: "function", Function: FunctionCall{Name: name, Arguments: json.RawMessage(`{"word": "w` + strconv.Itoa(k) + `"}`)}}
	}
	result := func(tc ToolCall, size int) Message {
		return Message{Role: RoleTool, ToolCallID: tc.ID, Name: name, Content: `{"meaning": "` + text(size, id) + `"}`}
	}
	round := func(k int, think bool, calls, size int) []Message {
		asst := Message{Role: RoleAssistant}
		if think {
			asst.ReasoningContent = "I should look up " + text(20+k, k) + "."
		} else {
			asst.Content = "<think>\nLooking up " + text(10+k, k) + ".\n</think>\n\n"
		}
		var out []Message
		for c := range calls {
			asst.ToolCalls = append(asst.ToolCalls, call(k*10+c))
		}
		out = append(out, asst)
		for _, tc := range asst.ToolCalls {
			out = append(out, result(tc, size))
		}
		return out
	}
	answer := func(k int, think bool) Message {
		m := Message{Role: RoleAssistant, Content: "The answer is " + text(8+k, k) + "."}
		if think {
			m.ReasoningContent = "Done: " + text(12, k)
		}
		return m
	}
	build := func(system, parallel bool) []Message {
		var conv []Message
		if system {
			conv = append(conv, Message{Role: RoleSystem, Content: "You are a careful assistant. Use the tools, then give the final answer."})
		}
		conv = append(conv, Message{Role: RoleUser, Content: "Here are my notes:\n\n" + text(400, 1) + "\n\nLook up each word."})
		for k := range 4 {
			conv = append(conv, round(k, k%2 == 0, 1+b2i(parallel)*(k%2), 30+k*200)...)
		}
		conv = append(conv, answer(1, true), Message{Role: RoleUser, Content: "Now " + text(60, 2) + "?"})
		for k := 4; k < 7; k++ {
			conv = append(conv, round(k, k%2 == 1, 1, 40)...)
		}
		conv = append(conv, answer(2, false), Message{Role: RoleUser, Content: "<tool_response>\n" + text(30, 3) + "\n</tool_response>"})
		for k := 7; k < 9; k++ {
			conv = append(conv, round(k, true, 1+b2i(parallel)*(1-k%2), 60)...)
		}
		conv = append(conv, answer(3, true), Message{Role: RoleUser, Content: "Thanks. One more: " + text(20, 4) + "?"})
		conv = append(conv, round(9, false, 1, 2000)...)
		return append(conv, answer(4, true), Message{Role: RoleUser, Content: "Bye."})
	}
	return [][]Message{build(true, true), build(false, true), build(true, false), build(false, false)}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// toolResults reports whether msgs are all tool results.
func toolResults(msgs []Message) bool {
	for i := range msgs {
		if msgs[i].Role != RoleTool {
			return false
		}
	}
	return true
}
