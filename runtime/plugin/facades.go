package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

// ParseResult is what a parser found in one completion (plugins/ABI.md section 5.1).
type ParseResult = abi.ParseResult

// Parser is the facade of a parser module. It is safe for concurrent use.
type Parser struct{ m *Module }

// Parser returns the module's parser facade, or ErrWrongKind.
func (m *Module) Parser() (*Parser, error) {
	if m.manifest.Kind != abi.KindParser {
		return nil, fmt.Errorf("plugin: %s is a %s plugin, not a parser: %w", m.name, m.manifest.Kind, ErrWrongKind)
	}
	return &Parser{m}, nil
}

// Module is the underlying module (for its name and sha256).
func (p *Parser) Module() *Module { return p.m }

// Parse parses one completion text (exactly as generated).
//
// # Errors
//
// *GuestError for an error envelope; *TrapError, *TimeoutError, *LimitError, *ProtocolError (the output is not a
// valid ParseResult: e.g. arguments that are not an object, a span outside the text) for a broken guest, whose
// instance is replaced; ctx errors; ErrClosed.
func (p *Parser) Parse(ctx context.Context, text string) (ParseResult, error) {
	var res ParseResult
	// The guest memory write only reads the input, so a view of text avoids copying 2 KB per call.
	err := p.m.run(ctx, unsafe.Slice(unsafe.StringData(text), len(text)), func(out []byte) error {
		okv, gerr, err := p.m.envelope(abi.FuncCall, out)
		if err != nil {
			return err
		}
		if gerr != nil {
			return gerr
		}
		res, err = decodeParseResult(okv, len(text))
		if err != nil {
			return &ProtocolError{Plugin: p.m.name, Func: abi.FuncCall, Msg: "bad parse result: " + err.Error()}
		}
		return nil
	})
	return res, err
}

// decodeParseResult decodes a ParseResult from raw JSON, copying everything out of guest memory.
func decodeParseResult(b []byte, textLen int) (ParseResult, error) {
	var r ParseResult
	var err error
	perr := wholeObject(b, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "calls"):
			err = elems(v, func(e []byte) error {
				c, err := decodeCall(e, textLen)
				r.Calls = append(r.Calls, c)
				return err
			})
		case fastjson.KeyEquals(k, "normal_text"):
			if !fastjson.IsNull(v) {
				r.NormalText, err = fastjson.String(v)
			}
		case fastjson.KeyEquals(k, "errors"):
			err = elems(v, func(e []byte) error {
				pe, err := decodeParseError(e, textLen)
				r.Errors = append(r.Errors, pe)
				return err
			})
		}
		return err == nil
	})
	if perr != nil {
		return r, perr
	}
	return r, err
}

func elems(v []byte, fn func(e []byte) error) error {
	if fastjson.IsNull(v) {
		return nil
	}
	var err error
	perr := fastjson.EachElem(v, func(e []byte) bool {
		err = fn(e)
		return err == nil
	})
	if perr != nil {
		return perr
	}
	return err
}

func decodeCall(b []byte, textLen int) (abi.ParsedCall, error) {
	var c abi.ParsedCall
	var err error
	hasName, hasArgs := false, false
	perr := fastjson.Each(b, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "id"):
			c.ID, err = fastjson.String(v)
		case fastjson.KeyEquals(k, "name"):
			c.Name, err = fastjson.String(v)
			hasName = true
		case fastjson.KeyEquals(k, "arguments"):
			if len(v) == 0 || v[0] != '{' { // v was validated by Each
				err = fmt.Errorf("call arguments are not a JSON object: %s", snippet(v))
			}
			c.Arguments = append(abi.RawJSON(nil), v...)
			hasArgs = true
		case fastjson.KeyEquals(k, "span"):
			c.Span, err = decodeSpan(v, textLen)
		}
		return err == nil
	})
	switch {
	case perr != nil:
		return c, perr
	case err != nil:
		return c, err
	case !hasName || c.Name == "":
		return c, fmt.Errorf("call without a name")
	case !hasArgs:
		return c, fmt.Errorf("call %q without arguments", c.Name)
	}
	return c, nil
}

func decodeParseError(b []byte, textLen int) (abi.ParseError, error) {
	var e abi.ParseError
	var err error
	perr := fastjson.Each(b, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "reason"):
			e.Reason, err = fastjson.String(v)
		case fastjson.KeyEquals(k, "name"):
			e.Name, err = fastjson.String(v)
		case fastjson.KeyEquals(k, "message"):
			e.Message, err = fastjson.String(v)
		case fastjson.KeyEquals(k, "raw"):
			e.Raw, err = fastjson.String(v)
		case fastjson.KeyEquals(k, "span"):
			e.Span, err = decodeSpan(v, textLen)
		}
		return err == nil
	})
	if perr != nil {
		return e, perr
	}
	if err == nil && e.Reason == "" {
		err = fmt.Errorf("parse error without a reason")
	}
	return e, err
}

func decodeSpan(v []byte, textLen int) (abi.Span, error) {
	var s abi.Span
	n := 0
	var err error
	perr := fastjson.EachElem(v, func(e []byte) bool {
		if n >= 2 {
			err = fmt.Errorf("span has more than 2 elements")
			return false
		}
		var x int64
		x, err = fastjson.Int(e)
		s[n] = int(x)
		n++
		return err == nil
	})
	if perr != nil {
		return s, perr
	}
	if err != nil {
		return s, err
	}
	if n != 2 || s[0] < 0 || s[1] < s[0] || s[1] > textLen {
		return s, fmt.Errorf("span %v is not a [start, end) range within the %d-byte text", s, textLen)
	}
	return s, nil
}

// ToolResult is a tool's result: text, or JSON. IsError marks a result the tool reported as a failure (an error
// envelope: the model sees Text, which is then the message, and ErrorCode is its code).
type ToolResult struct {
	Text      string
	JSON      json.RawMessage
	IsError   bool
	ErrorCode string
}

// Tool is the facade of a tool module. It is safe for concurrent use.
type Tool struct{ m *Module }

// Tool returns the module's tool facade, or ErrWrongKind.
func (m *Module) Tool() (*Tool, error) {
	if m.manifest.Kind != abi.KindTool {
		return nil, fmt.Errorf("plugin: %s is a %s plugin, not a tool: %w", m.name, m.manifest.Kind, ErrWrongKind)
	}
	return &Tool{m}, nil
}

// Module is the underlying module (for its name and sha256).
func (t *Tool) Module() *Module { return t.m }

// Specs are the tools the module implements (a copy).
func (t *Tool) Specs() []abi.ToolSpec { return append([]abi.ToolSpec(nil), t.m.specs...) }

// Call runs tool name with args (a JSON object; nil means {}).
//
// # Errors
//
// A tool's own failure is not an error but a ToolResult with IsError. Errors are: *TrapError, *TimeoutError,
// *LimitError, *ProtocolError for a broken guest (its instance is replaced; the runtime turns these into error
// results for the model), ctx errors, ErrClosed, and a plain error for args that are not a JSON object.
func (t *Tool) Call(ctx context.Context, name string, args json.RawMessage) (ToolResult, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if !fastjson.IsObject(args) {
		return ToolResult{}, fmt.Errorf("plugin: %s: arguments of %q are not a JSON object", t.m.name, name)
	}
	in := make([]byte, 0, len(name)+len(args)+32)
	in = append(in, `{"name":`...)
	in = fastjson.AppendQuote(in, name)
	in = append(in, `,"arguments":`...)
	in = append(in, args...)
	in = append(in, '}')
	var res ToolResult
	err := t.m.run(ctx, in, func(out []byte) error {
		okv, gerr, err := t.m.envelope(abi.FuncCall, out)
		if err != nil {
			return err
		}
		if gerr != nil {
			res = ToolResult{Text: gerr.Message, IsError: true, ErrorCode: gerr.Code}
			return nil
		}
		res, err = decodeToolResult(okv)
		if err != nil {
			return &ProtocolError{Plugin: t.m.name, Func: abi.FuncCall, Msg: "bad tool result: " + err.Error()}
		}
		return nil
	})
	return res, err
}

func decodeToolResult(b []byte) (ToolResult, error) {
	var r ToolResult
	var err error
	found := false
	perr := wholeObject(b, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "text"):
			r.Text, err = fastjson.String(v)
			found = true
		case fastjson.KeyEquals(k, "json"):
			r.JSON = append(json.RawMessage(nil), v...)
			found = true
		case fastjson.KeyEquals(k, "is_error"):
			r.IsError, err = fastjson.Bool(v)
		}
		return err == nil
	})
	if perr != nil {
		return r, perr
	}
	if err == nil && !found {
		err = fmt.Errorf(`want {"text": ...} or {"json": ...}`)
	}
	return r, err
}

// Event is a hook event (plugins/ABI.md section 5.3).
type Event = abi.Event

// HookResponse is a hook's answer (plugins/ABI.md section 5.3).
type HookResponse = abi.HookResponse

// Hook is the facade of a hook module. It is safe for concurrent use.
type Hook struct{ m *Module }

// Hook returns the module's hook facade, or ErrWrongKind.
func (m *Module) Hook() (*Hook, error) {
	if m.manifest.Kind != abi.KindHook {
		return nil, fmt.Errorf("plugin: %s is a %s plugin, not a hook: %w", m.name, m.manifest.Kind, ErrWrongKind)
	}
	return &Hook{m}, nil
}

// Module is the underlying module (for its name and sha256).
func (h *Hook) Module() *Module { return h.m }

// Events are the events the hook subscribed to (a copy).
func (h *Hook) Events() []string { return append([]string(nil), h.m.manifest.Events...) }

// Wants reports whether the hook subscribed to event; the runtime calls Handle only for those.
func (h *Hook) Wants(event string) bool { return h.m.events[event] }

// Handle sends one event to the hook. An event the hook did not subscribe to, or a message_added of a role outside
// its manifest's message_roles, gets the zero response without a call.
//
// # Errors
//
// *GuestError for an error envelope (the runtime aborts the episode); *TrapError, *TimeoutError, *LimitError,
// *ProtocolError for a broken guest (replaced); ctx errors; ErrClosed.
func (h *Hook) Handle(ctx context.Context, ev *Event) (HookResponse, error) {
	if !h.m.events[ev.Event] {
		return HookResponse{}, nil
	}
	if h.m.roles != nil && ev.Event == abi.EventMessageAdded && ev.Message != nil && !h.m.roles[ev.Message.Role] {
		return HookResponse{}, nil // a message of a role the hook declared it does not want
	}
	in, err := json.Marshal(ev)
	if err != nil {
		return HookResponse{}, fmt.Errorf("plugin: %s: encode event: %w", h.m.name, err)
	}
	var res HookResponse
	err = h.m.run(ctx, in, func(out []byte) error {
		okv, gerr, err := h.m.envelope(abi.FuncCall, out)
		if err != nil {
			return err
		}
		if gerr != nil {
			return gerr
		}
		if string(okv) == "{}" {
			return nil
		}
		if err := json.Unmarshal(okv, &res); err != nil {
			return &ProtocolError{Plugin: h.m.name, Func: abi.FuncCall, Msg: "bad hook response: " + err.Error()}
		}
		return nil
	})
	return res, err
}
