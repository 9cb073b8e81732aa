package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Roles that messages may carry. A chat template decides which of them it renders (Llama 3.1 reads ipython, Qwen
// reads tool); any other role is rejected before rendering.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleIPython   = "ipython"
	RoleFunction  = "function"
)

// knownRoles lists the accepted roles, in the order error messages name them.
func knownRoles() []string {
	return []string{RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool, RoleIPython, RoleFunction}
}

// Message is one chat message as transformers' apply_chat_template takes it (the OpenAI shape):
//
//	{"role": "assistant", "content": "...", "reasoning_content": "...",
//	 "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]}
//	{"role": "tool", "tool_call_id": "call_0", "name": "f", "content": "..."}
//
// The template sees the message as a dict with its keys in order: the order of the JSON it was decoded from, or
// for a message built in Go: role, content, reasoning_content, tool_calls, tool_call_id, name, then Extra. Keys
// that Go leaves empty are left out (as transformers drops keys whose value is None), except content, which a
// message built in Go always has.
type Message struct {
	// Role is one of the Role constants.
	Role string
	// Content is the text of the message. It is ignored when Parts is non-nil.
	Content string
	// Parts, when non-nil, replaces Content with a list of content parts (raw JSON values, usually objects such
	// as {"type": "text", "text": "..."}), which the template sees as a list of ordered dicts.
	Parts []json.RawMessage
	// ReasoningContent is the assistant's reasoning ("thinking"); empty means none. As in transformers, the
	// template also sees it as "thinking".
	ReasoningContent string
	// ToolCalls are the assistant's tool calls. Nil means none; a non-nil empty slice is an empty list.
	ToolCalls []ToolCall
	// ToolCallID is the id of the call that a tool message answers.
	ToolCallID string
	// Name is the tool (or participant) name, when the message carries one.
	Name string
	// Extra holds any other keys, in order; their values reach the template as decoded JSON.
	Extra []Field

	// keys is the key order of the JSON the message was decoded from (nil for a message built in Go). A key in
	// it is rendered even when its Go field is empty, so decoding then rendering keeps "content": "".
	keys []string
}

// ToolCall is one assistant tool call: {"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}.
type ToolCall struct {
	// ID is the call id ("" leaves the key out).
	ID string
	// Type is the call type, normally "function" ("" leaves the key out).
	Type string
	// Function is the called function.
	Function FunctionCall
	// Extra holds any other keys, in order.
	Extra []Field

	keys []string
}

// FunctionCall names the function of a tool call and its arguments.
type FunctionCall struct {
	// Name is the function name.
	Name string
	// Arguments is raw JSON: an object (rendered as an ordered dict, which templates print with tojson in its
	// original key order) or a string holding JSON text (the OpenAI wire form, which templates print verbatim).
	// Empty leaves the key out.
	Arguments json.RawMessage
	// Extra holds any other keys, in order.
	Extra []Field

	keys []string
}

// Field is one extra key of a message, tool call or function, with its raw JSON value.
type Field struct {
	Key   string
	Value json.RawMessage
}

// MessageError reports an invalid message: which one (its index in the list), which field, and what was wrong.
type MessageError struct {
	Index  int    // index of the message in its list
	Field  string // the offending key, e.g. "role" or "tool_calls[1].function.arguments"; "" for the whole message
	Detail string // what was wrong
}

// Error implements error.
func (e *MessageError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("tito: message %d: %s", e.Index, e.Detail)
	}
	return fmt.Sprintf("tito: message %d: %s: %s", e.Index, e.Field, e.Detail)
}

// ValidateMessages checks every message: a known role, tool calls with a function name, arguments that are a JSON
// object or string, content parts that are valid JSON.
//
// # Errors
//
// A *MessageError naming the first bad message, its field and the problem; an empty list is an error too.
func ValidateMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return errors.New("tito: no messages (a chat template needs at least one)")
	}
	for i := range msgs {
		if err := msgs[i].validate(i); err != nil {
			return err
		}
	}
	return nil
}

func (m *Message) validate(i int) error {
	bad := func(field, format string, args ...any) error {
		return &MessageError{Index: i, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.Role == "":
		return bad("role", "missing (want one of %s)", strings.Join(knownRoles(), ", "))
	case !slices.Contains(knownRoles(), m.Role):
		return bad("role", "unknown role %q (want one of %s)", m.Role, strings.Join(knownRoles(), ", "))
	}
	for j, p := range m.Parts {
		if !json.Valid(p) {
			return bad(fmt.Sprintf("content[%d]", j), "not valid JSON")
		}
	}
	for j, tc := range m.ToolCalls {
		field := fmt.Sprintf("tool_calls[%d]", j)
		if tc.Function.Name == "" {
			return bad(field+".function.name", "missing")
		}
		if a := bytes.TrimSpace(tc.Function.Arguments); len(a) > 0 {
			if !json.Valid(a) {
				return bad(field+".function.arguments", "not valid JSON")
			}
			if a[0] != '{' && a[0] != '"' {
				return bad(field+".function.arguments", "want a JSON object or a string holding JSON, got %s", abbrevJSON(a))
			}
		}
		if err := validFields(tc.Extra); err != "" {
			return bad(field+"."+err, "not valid JSON")
		}
		if err := validFields(tc.Function.Extra); err != "" {
			return bad(field+".function."+err, "not valid JSON")
		}
	}
	if err := validFields(m.Extra); err != "" {
		return bad(err, "not valid JSON")
	}
	return nil
}

func validFields(fs []Field) string {
	for _, f := range fs {
		if !json.Valid(f.Value) {
			return f.Key
		}
	}
	return ""
}

func abbrevJSON(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// DecodeMessages decodes a JSON array of messages (the "messages" of an OpenAI chat request) and validates it.
// Unknown keys are kept, in order, in Extra; keys whose value is null are dropped, as transformers does.
//
// # Errors
//
// Invalid JSON (with the byte offset), a value that is not an array of objects, a field of the wrong type, or a
// failed ValidateMessages: each error names the message index and the field.
func DecodeMessages(data []byte) ([]Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("tito: messages: want a JSON array of message objects: %w", jsonPosErr(data, err))
	}
	msgs := make([]Message, len(raws))
	for i, raw := range raws {
		if err := msgs[i].decode(raw); err != nil {
			var me *MessageError
			if errors.As(err, &me) {
				me.Index = i
				return nil, me
			}
			return nil, &MessageError{Index: i, Detail: err.Error()}
		}
	}
	if err := ValidateMessages(msgs); err != nil {
		return nil, err
	}
	return msgs, nil
}

// DecodeTools decodes a JSON array of tool specs (OpenAI {"type": "function", "function": {...}} objects, or any
// objects the template reads), keeping each one's raw JSON so that its key order reaches the template.
//
// # Errors
//
// Invalid JSON, or an element that is not an object (the error names its index).
func DecodeTools(data []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("tito: tools: want a JSON array of tool objects: %w", jsonPosErr(data, err))
	}
	for i, r := range raws {
		if t := bytes.TrimSpace(r); len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("tito: tools: tool %d: want a JSON object, got %s", i, abbrevJSON(t))
		}
	}
	return raws, nil
}

// jsonErr adds the line and column to a JSON syntax error.
func jsonPosErr(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := jsonLineCol(data, int(se.Offset))
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := jsonLineCol(data, int(te.Offset))
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	return err
}

func jsonLineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return line, off - 1 - bytes.LastIndexByte(data[:off], '\n') // the offending byte is the last one read
}

// objectFields decodes a JSON object into its fields, in order, dropping null values.
func objectFields(raw json.RawMessage) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want a JSON object, got %s", abbrevJSON(bytes.TrimSpace(raw)))
	}
	var out []Field
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		key := kt.(string)
		out = slices.DeleteFunc(out, func(f Field) bool { return f.Key == key }) // a repeated key: the last wins
		if string(v) != "null" {
			out = append(out, Field{Key: key, Value: v})
		}
	}
	return out, nil
}

func decodeString(f Field, dst *string) error {
	if err := json.Unmarshal(f.Value, dst); err != nil {
		return &MessageError{Field: f.Key, Detail: "want a string, got " + abbrevJSON(f.Value)}
	}
	return nil
}

func (m *Message) decode(raw json.RawMessage) error {
	fields, err := objectFields(raw)
	if err != nil {
		return err
	}
	*m = Message{keys: make([]string, 0, len(fields))}
	for _, f := range fields {
		m.keys = append(m.keys, f.Key)
		switch f.Key {
		case "role":
			err = decodeString(f, &m.Role)
		case "content":
			if v := bytes.TrimSpace(f.Value); len(v) > 0 && v[0] == '[' {
				m.Parts = []json.RawMessage{}
				if json.Unmarshal(v, &m.Parts) != nil {
					err = &MessageError{Field: "content", Detail: "want a string or a list of parts"}
				}
			} else {
				err = decodeString(f, &m.Content)
			}
		case "reasoning_content":
			err = decodeString(f, &m.ReasoningContent)
		case "tool_call_id":
			err = decodeString(f, &m.ToolCallID)
		case "name":
			err = decodeString(f, &m.Name)
		case "tool_calls":
			var calls []json.RawMessage
			if json.Unmarshal(f.Value, &calls) != nil {
				return &MessageError{Field: "tool_calls", Detail: "want a list of tool calls, got " + abbrevJSON(f.Value)}
			}
			m.ToolCalls = make([]ToolCall, len(calls))
			for j, c := range calls {
				if err := m.ToolCalls[j].decode(c); err != nil {
					var me *MessageError
					if errors.As(err, &me) {
						me.Field = fmt.Sprintf("tool_calls[%d].%s", j, me.Field)
						return me
					}
					return &MessageError{Field: fmt.Sprintf("tool_calls[%d]", j), Detail: err.Error()}
				}
			}
		default:
			m.Extra = append(m.Extra, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (tc *ToolCall) decode(raw json.RawMessage) error {
	fields, err := objectFields(raw)
	if err != nil {
		return err
	}
	*tc = ToolCall{keys: make([]string, 0, len(fields))}
	for _, f := range fields {
		tc.keys = append(tc.keys, f.Key)
		switch f.Key {
		case "id":
			err = decodeString(f, &tc.ID)
		case "type":
			err = decodeString(f, &tc.Type)
		case "function":
			err = tc.Function.decode(f.Value)
			var me *MessageError
			if errors.As(err, &me) {
				me.Field = "function." + me.Field
			}
		default:
			tc.Extra = append(tc.Extra, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (fc *FunctionCall) decode(raw json.RawMessage) error {
	fields, err := objectFields(raw)
	if err != nil {
		return &MessageError{Field: "", Detail: err.Error()}
	}
	*fc = FunctionCall{keys: make([]string, 0, len(fields))}
	for _, f := range fields {
		fc.keys = append(fc.keys, f.Key)
		switch f.Key {
		case "name":
			err = decodeString(f, &fc.Name)
		case "arguments":
			fc.Arguments = f.Value
		default:
			fc.Extra = append(fc.Extra, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// UnmarshalJSON decodes one message object, keeping its key order and unknown keys (see DecodeMessages).
func (m *Message) UnmarshalJSON(data []byte) error { return m.decode(data) }

// UnmarshalJSON decodes one tool call object, keeping its key order and unknown keys.
func (tc *ToolCall) UnmarshalJSON(data []byte) error { return tc.decode(data) }

// UnmarshalJSON decodes one function object, keeping its key order and unknown keys.
func (fc *FunctionCall) UnmarshalJSON(data []byte) error { return fc.decode(data) }

// MarshalJSON encodes the message with the keys the template would see, in the same order.
func (m Message) MarshalJSON() ([]byte, error) { return marshalFields(m.fields()) }

// MarshalJSON encodes the tool call with its keys in order.
func (tc ToolCall) MarshalJSON() ([]byte, error) { return marshalFields(tc.fields()) }

// MarshalJSON encodes the function with its keys in order.
func (fc FunctionCall) MarshalJSON() ([]byte, error) { return marshalFields(fc.fields()) }

// kv is one key of a message as the template sees it, with exactly one kind of value.
type kv struct {
	key   string
	raw   json.RawMessage // a JSON value
	str   *string         // a string (kept as Go text, not re-encoded)
	sub   []kv            // an object (a tool call's function)
	seq   [][]kv          // a list of objects (tool_calls), when isSeq
	isSeq bool
}

// ordered merges the decoded key order with the canonical order of keys that are set.
func ordered(decoded, canonical []string, present func(string) bool) []string {
	out := make([]string, 0, len(canonical))
	for _, k := range decoded {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, k := range canonical {
		if !slices.Contains(out, k) && present(k) {
			out = append(out, k)
		}
	}
	return out
}

func extraKeys(fs []Field) []string {
	ks := make([]string, len(fs))
	for i, f := range fs {
		ks[i] = f.Key
	}
	return ks
}

func extraValue(fs []Field, key string) (json.RawMessage, bool) {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Key == key {
			return fs[i].Value, true
		}
	}
	return nil, false
}

func (m *Message) fields() []kv {
	canonical := append([]string{"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"}, extraKeys(m.Extra)...)
	present := func(k string) bool {
		switch k {
		case "role", "content":
			return m.keys == nil || k == "content" && (m.Content != "" || m.Parts != nil)
		case "reasoning_content":
			return m.ReasoningContent != ""
		case "tool_calls":
			return m.ToolCalls != nil
		case "tool_call_id":
			return m.ToolCallID != ""
		case "name":
			return m.Name != ""
		}
		_, ok := extraValue(m.Extra, k)
		return ok
	}
	keys := ordered(m.keys, canonical, present)
	out := make([]kv, 0, len(keys))
	for _, k := range keys {
		switch k {
		case "role":
			out = append(out, kv{key: k, str: &m.Role})
		case "content":
			if m.Parts != nil {
				out = append(out, kv{key: k, raw: partsJSON(m.Parts)})
			} else {
				out = append(out, kv{key: k, str: &m.Content})
			}
		case "reasoning_content":
			out = append(out, kv{key: k, str: &m.ReasoningContent})
		case "tool_call_id":
			out = append(out, kv{key: k, str: &m.ToolCallID})
		case "name":
			out = append(out, kv{key: k, str: &m.Name})
		case "tool_calls":
			if m.ToolCalls == nil {
				continue
			}
			seq := make([][]kv, len(m.ToolCalls))
			for i := range m.ToolCalls {
				seq[i] = m.ToolCalls[i].fields()
			}
			out = append(out, kv{key: k, seq: seq, isSeq: true})
		default:
			if v, ok := extraValue(m.Extra, k); ok {
				out = append(out, kv{key: k, raw: v})
			}
		}
	}
	return out
}

func partsJSON(parts []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(p)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func (tc *ToolCall) fields() []kv {
	canonical := append([]string{"id", "type", "function"}, extraKeys(tc.Extra)...)
	present := func(k string) bool {
		switch k {
		case "id":
			return tc.ID != ""
		case "type":
			return tc.Type != ""
		case "function":
			return true
		}
		_, ok := extraValue(tc.Extra, k)
		return ok
	}
	var out []kv
	for _, k := range ordered(tc.keys, canonical, present) {
		switch k {
		case "id":
			out = append(out, kv{key: k, str: &tc.ID})
		case "type":
			out = append(out, kv{key: k, str: &tc.Type})
		case "function":
			out = append(out, kv{key: k, sub: tc.Function.fields()})
		default:
			if v, ok := extraValue(tc.Extra, k); ok {
				out = append(out, kv{key: k, raw: v})
			}
		}
	}
	return out
}

func (fc *FunctionCall) fields() []kv {
	canonical := append([]string{"name", "arguments"}, extraKeys(fc.Extra)...)
	present := func(k string) bool {
		switch k {
		case "name":
			return true
		case "arguments":
			return len(fc.Arguments) > 0
		}
		_, ok := extraValue(fc.Extra, k)
		return ok
	}
	var out []kv
	for _, k := range ordered(fc.keys, canonical, present) {
		switch k {
		case "name":
			out = append(out, kv{key: k, str: &fc.Name})
		case "arguments":
			if len(fc.Arguments) > 0 {
				out = append(out, kv{key: k, raw: fc.Arguments})
			}
		default:
			if v, ok := extraValue(fc.Extra, k); ok {
				out = append(out, kv{key: k, raw: v})
			}
		}
	}
	return out
}

func marshalFields(fs []kv) ([]byte, error) {
	var b bytes.Buffer
	if err := writeFields(&b, fs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeFields(b *bytes.Buffer, fs []kv) error {
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		switch {
		case f.str != nil:
			s, _ := json.Marshal(*f.str)
			b.Write(s)
		case f.isSeq:
			b.WriteByte('[')
			for j, o := range f.seq {
				if j > 0 {
					b.WriteByte(',')
				}
				if err := writeFields(b, o); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		case f.sub != nil:
			if err := writeFields(b, f.sub); err != nil {
				return err
			}
		default:
			if err := json.Compact(b, f.raw); err != nil {
				return fmt.Errorf("tito: %s: %w", f.key, err)
			}
		}
	}
	b.WriteByte('}')
	return nil
}
