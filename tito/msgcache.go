package tito

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
)

// MessageCache keeps a conversation's messages as the template engine reads them (their JSON array) from one
// render to the next (RenderOptions.Messages). The agent loop renders the whole conversation on every turn (a
// delta is the tail of the full render), so writing every message's JSON again made a turn's cost grow with the
// context: with the cache, a render whose messages begin with those of the last one writes only the rest.
//
// A kept message is reused only when it equals the message given now, field by field (its text compared by
// content: a string that was kept is usually the very same string, which compares at once), so a cache given a
// different conversation, or messages changed since, costs time but never renders stale text. It keeps a copy of
// each message (its strings shared, its byte slices cloned) besides their JSON, until it is dropped.
//
// The zero value is ready for use. A MessageCache is for one conversation's renders, one at a time: it is not
// safe for concurrent use.
type MessageCache struct {
	msgs []Message // the messages encoded (mutable parts cloned)
	json []byte    // '[' and their JSON, comma separated; no ']'
	ends []uint32  // where each message's JSON ends in json
}

// encode returns msgs as encodeMessages does, reusing the messages it kept that begin msgs. The result is valid
// until the next call.
func (c *MessageCache) encode(msgs []Message) (encodedMessages, error) {
	k := 0
	for k < len(msgs) && k < len(c.msgs) && sameMessage(&c.msgs[k], &msgs[k]) {
		k++
	}
	c.msgs, c.ends = c.msgs[:k], c.ends[:k]
	if k == 0 {
		c.json = append(c.json[:0], '[')
	} else {
		c.json = c.json[:c.ends[k-1]]
	}
	b := bytes.NewBuffer(c.json)
	for i := k; i < len(msgs); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeTemplateMessage(b, &msgs[i]); err != nil {
			c.forget(i)
			return encodedMessages{}, &MessageError{Index: i, Detail: err.Error()}
		}
		if b.Len() > math.MaxUint32 {
			c.forget(i)
			return encodedMessages{}, &MessageError{Index: i, Detail: "the conversation is over 4 GiB"}
		}
		c.ends = append(c.ends, uint32(b.Len()))
		c.msgs = append(c.msgs, cloneMessage(&msgs[i]))
	}
	c.json = b.Bytes()
	// the closing bracket goes past the kept bytes: the next call writes over it
	return encodedMessages{json: append(c.json, ']'), ends: c.ends}, nil
}

// forget drops what an encode that failed at message i left: the messages before it stay.
func (c *MessageCache) forget(i int) {
	c.msgs, c.ends = c.msgs[:i], c.ends[:i]
	if i == 0 {
		c.json = c.json[:0]
	} else {
		c.json = c.json[:c.ends[i-1]]
	}
}

// sameMessage reports whether a and b render the same: every field equal, text by content.
func sameMessage(a, b *Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ReasoningContent != b.ReasoningContent ||
		a.ToolCallID != b.ToolCallID || a.Name != b.Name || !sameKeys(a.keys, b.keys) ||
		(a.Parts == nil) != (b.Parts == nil) || !slices.EqualFunc(a.Parts, b.Parts, sameRaw) ||
		!sameFields(a.Extra, b.Extra) || (a.ToolCalls == nil) != (b.ToolCalls == nil) || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Type != y.Type || !sameKeys(x.keys, y.keys) || !sameFields(x.Extra, y.Extra) ||
			x.Function.Name != y.Function.Name || !sameRaw(x.Function.Arguments, y.Function.Arguments) ||
			!sameKeys(x.Function.keys, y.Function.keys) || !sameFields(x.Function.Extra, y.Function.Extra) {
			return false
		}
	}
	return true
}

// sameRaw compares raw JSON by its bytes (nil and empty alike: both leave the key out or render nothing).
func sameRaw(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// sameKeys compares key orders, nil (a message built in Go) apart from empty (one decoded from JSON).
func sameKeys(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// sameFields compares extra keys, nil apart from empty (as built tells them apart).
func sameFields(a, b []Field) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, func(x, y Field) bool { return x.Key == y.Key && bytes.Equal(x.Value, y.Value) })
}

// cloneMessage copies m so that no later change to the caller's slices reaches the copy (strings are immutable
// and shared).
func cloneMessage(m *Message) Message {
	out := *m
	out.keys = slices.Clone(m.keys)
	out.Extra = cloneFields(m.Extra)
	if m.Parts != nil {
		out.Parts = make([]json.RawMessage, len(m.Parts))
		for i, p := range m.Parts {
			out.Parts[i] = bytes.Clone(p)
		}
	}
	if m.ToolCalls != nil {
		out.ToolCalls = make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.keys = slices.Clone(tc.keys)
			tc.Extra = cloneFields(tc.Extra)
			tc.Function.Arguments = bytes.Clone(tc.Function.Arguments)
			tc.Function.keys = slices.Clone(tc.Function.keys)
			tc.Function.Extra = cloneFields(tc.Function.Extra)
			out.ToolCalls[i] = tc
		}
	}
	return out
}

func cloneFields(fs []Field) []Field {
	if fs == nil {
		return nil
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field{Key: f.Key, Value: bytes.Clone(f.Value)}
	}
	return out
}
