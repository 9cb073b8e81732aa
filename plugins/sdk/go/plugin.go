package sdk

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

// Info is what every plugin says about itself in its manifest.
type Info struct {
	// Name is the plugin's name: the parser name ("hermes"), tool-module name or hook name.
	Name string
	// Version is the plugin's own version, recorded for provenance.
	Version string
	// Description is one line for humans.
	Description string
	// ConfigSchema is an optional JSON Schema documenting the accepted config.
	ConfigSchema RawJSON
}

// Parser is a parser plugin: it turns a completion into tool calls, normal text and errors.
type Parser struct {
	Info
	// Init, if set, is called once per instance with the plugin config (may be null) and the agent's tools.
	Init func(cfg Value, tools []ToolSpec) error
	// Parse parses one completion, exactly as generated, and records what it finds in out. text is a view of the
	// SDK's input buffer, valid only during the call: strings.Clone what must outlive it (everything passed to out
	// is copied, so a parser normally keeps nothing).
	Parse func(text string, out *ParseOutput)
}

// Tools is a tool plugin: one module implementing one or more tools.
type Tools struct {
	Info
	// Specs are the tools the module implements.
	Specs []ToolSpec
	// Init, if set, is called once per instance with the plugin config; a non-nil result replaces Specs.
	Init func(cfg Value) ([]ToolSpec, error)
	// Call runs tool name with its arguments (a JSON object). An error is the tool's error result, which the
	// model sees; use [Errorf] to set its code.
	Call func(name string, args Value) (Result, error)
}

// Hook is a hook plugin: it is called for the events it lists.
type Hook struct {
	Info
	// Events are the events the hook wants (abi.Event*).
	Events []string
	// MessageRoles, if set, are the roles (abi.Role*) whose message_added events the hook wants: the host skips the
	// others without a call (manifest message_roles).
	MessageRoles []string
	// Init, if set, is called once per instance with the plugin config.
	Init func(cfg Value) error
	// Handle handles one event; the zero Response means "carry on".
	Handle func(ev Event) (Response, error)
}

// Response is a hook's answer (ABI.md section 5.3).
type Response = abi.HookResponse

// Stop is a hook's request to stop the loop.
type Stop = abi.Stop

// Result is a tool's successful result: text or JSON.
type Result struct {
	text   string
	json   []byte
	isJSON bool
}

// Text is a text tool result.
func Text(s string) Result { return Result{text: s} }

// JSON is a JSON tool result; raw must be one valid JSON value.
func JSON(raw []byte) Result { return Result{json: raw, isJSON: true} }

// Error is an error with a code, the error half of an envelope.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Event is a hook event. The SDK indexes its top-level members in one scan; use the accessors for the common
// fields and Get for the rest. It is valid only during the Handle call.
type Event struct {
	Value
	name, episodeID                           string
	turn                                      int
	counts, state, message, toolCall, toolRes Value
}

// newEvent indexes the top-level members of an event.
func newEvent(in []byte) Event {
	e := Event{Value: Value(in)}
	_ = fastjson.Each(in, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "event"):
			e.name, _ = fastjson.String(v)
		case fastjson.KeyEquals(k, "episode_id"):
			e.episodeID, _ = fastjson.String(v)
		case fastjson.KeyEquals(k, "turn"):
			n, _ := fastjson.Int(v)
			e.turn = int(n)
		case fastjson.KeyEquals(k, "counts"):
			e.counts = Value(v)
		case fastjson.KeyEquals(k, "state"):
			e.state = Value(v)
		case fastjson.KeyEquals(k, "message"):
			e.message = Value(v)
		case fastjson.KeyEquals(k, "tool_call"):
			e.toolCall = Value(v)
		case fastjson.KeyEquals(k, "tool_result"):
			e.toolRes = Value(v)
		}
		return true
	})
	return e
}

// Name is the event name (abi.Event*).
func (e Event) Name() string { return e.name }

// EpisodeID is the episode the event belongs to.
func (e Event) EpisodeID() string { return e.episodeID }

// Turn is the number of model calls started so far.
func (e Event) Turn() int { return e.turn }

// State is what this hook returned as State on its previous call in this episode (nil on the first).
func (e Event) State() Value { return e.state }

// Message is the message of message_added (nil otherwise); its fields are "role", "content", "tool_calls",
// "tool_call_id", "name".
func (e Event) Message() Value { return e.message }

// ToolCall is the tool_call of before_tool_call and after_tool_call: "id", "name", "arguments", "index".
func (e Event) ToolCall() Value { return e.toolCall }

// ToolResult is the tool_result of after_tool_call: "text" or "json", and "is_error".
func (e Event) ToolResult() Value { return e.toolRes }

// Counts are the episode's running counters.
func (e Event) Counts() abi.Counts {
	var c abi.Counts
	_ = fastjson.Each(e.counts, func(k, v []byte) bool {
		n64, _ := fastjson.Int(v)
		n := int(n64)
		switch {
		case fastjson.KeyEquals(k, "messages"):
			c.Messages = n
		case fastjson.KeyEquals(k, "model_calls"):
			c.ModelCalls = n
		case fastjson.KeyEquals(k, "tool_iters"):
			c.ToolIters = n
		case fastjson.KeyEquals(k, "tool_calls"):
			c.ToolCalls = n
		case fastjson.KeyEquals(k, "cancelled_tool_calls"):
			c.CancelledToolCalls = n
		case fastjson.KeyEquals(k, "prompt_tokens"):
			c.PromptTokens = n
		case fastjson.KeyEquals(k, "response_tokens"):
			c.ResponseTokens = n
		}
		return true
	})
	return c
}

// module is the registered plugin; exactly one of its kinds is set.
type module struct {
	parser *Parser
	tools  *Tools
	hook   *Hook

	parserTools []ToolSpec // the agent's tools, for parsers (from init)
	toolNames   map[string]bool
	out         []byte // the output buffer, reused call after call
	po          ParseOutput
	desc        []byte // the manifest, built once
}

func (m *module) kind() string {
	switch {
	case m.parser != nil:
		return abi.KindParser
	case m.tools != nil:
		return abi.KindTool
	case m.hook != nil:
		return abi.KindHook
	}
	return ""
}

func (m *module) register(p *Parser, t *Tools, h *Hook) {
	if m.kind() != "" {
		panic("sdk: a plugin registers exactly one Parser, Tools or Hook")
	}
	m.parser, m.tools, m.hook = p, t, h
}

func (m *module) info() Info {
	switch {
	case m.parser != nil:
		return m.parser.Info
	case m.tools != nil:
		return m.tools.Info
	case m.hook != nil:
		return m.hook.Info
	}
	return Info{}
}

// describe returns the manifest JSON.
func (m *module) describe() []byte {
	if m.desc != nil {
		return m.desc
	}
	inf := m.info()
	b := []byte(`{"abi_version":`)
	b = strconv.AppendInt(b, abi.Version, 10)
	b = append(b, `,"kind":`...)
	b = fastjson.AppendQuote(b, m.kind())
	b = append(b, `,"name":`...)
	b = fastjson.AppendQuote(b, inf.Name)
	if inf.Version != "" {
		b = append(b, `,"version":`...)
		b = fastjson.AppendQuote(b, inf.Version)
	}
	if inf.Description != "" {
		b = append(b, `,"description":`...)
		b = fastjson.AppendQuote(b, inf.Description)
	}
	if m.tools != nil {
		b = append(b, `,"tools":`...)
		b = appendSpecs(b, m.tools.Specs)
	}
	if m.hook != nil {
		b = appendStrings(append(b, `,"events":`...), m.hook.Events)
		if len(m.hook.MessageRoles) > 0 {
			b = appendStrings(append(b, `,"message_roles":`...), m.hook.MessageRoles)
		}
	}
	if len(inf.ConfigSchema) > 0 {
		b = append(b, `,"config_schema":`...)
		b = append(b, inf.ConfigSchema...)
	}
	m.desc = append(b, '}')
	return m.desc
}

// appendStrings appends ss as a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = fastjson.AppendQuote(b, s)
	}
	return append(b, ']')
}

func appendSpecs(b []byte, specs []ToolSpec) []byte {
	b = append(b, '[')
	for i, s := range specs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = fastjson.AppendQuote(b, s.Name)
		if s.Description != "" {
			b = append(b, `,"description":`...)
			b = fastjson.AppendQuote(b, s.Description)
		}
		if len(s.Parameters) > 0 {
			b = append(b, `,"parameters":`...)
			b = append(b, s.Parameters...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func decodeSpecs(v Value) ([]ToolSpec, error) {
	var specs []ToolSpec
	var err error
	if v.IsNull() {
		return nil, nil
	}
	perr := v.Elems(func(e Value) bool {
		var s ToolSpec
		if s.Name, err = e.Get("name").Str(); err != nil {
			err = fmt.Errorf("tool spec %d: name: %w", len(specs), err)
			return false
		}
		s.Description = e.Get("description").StrOr("")
		if p := e.Get("parameters"); p.Exists() {
			s.Parameters = append(RawJSON(nil), p...)
		}
		specs = append(specs, s)
		return true
	})
	if perr != nil {
		return nil, perr
	}
	return specs, err
}

// init handles agentrt_init: {"config":…, "tools":[…]} -> envelope.
func (m *module) init(in []byte) (out []byte) {
	defer m.recoverInto(&out)
	cfg := Value(in).Get("config")
	if cfg.IsNull() {
		cfg = nil
	} else {
		cfg = append(Value(nil), cfg...) // the config outlives the input buffer
	}
	switch {
	case m.parser != nil:
		tools, err := decodeSpecs(Value(in).Get("tools"))
		if err != nil {
			return m.errEnv(abi.CodeBadInput, "init tools: "+err.Error())
		}
		m.parserTools = tools
		if m.parser.Init != nil {
			if err := m.parser.Init(cfg, tools); err != nil {
				return m.errEnvFrom(abi.CodeBadConfig, err)
			}
		}
		return m.okEnv([]byte(`{}`))
	case m.tools != nil:
		m.toolNames = make(map[string]bool)
		for _, s := range m.tools.Specs {
			m.toolNames[s.Name] = true
		}
		if m.tools.Init != nil {
			specs, err := m.tools.Init(cfg)
			if err != nil {
				return m.errEnvFrom(abi.CodeBadConfig, err)
			}
			if specs != nil {
				m.toolNames = make(map[string]bool)
				for _, s := range specs {
					m.toolNames[s.Name] = true
				}
				return m.okEnv(appendSpecs([]byte(`{"tools":`), specs), '}')
			}
		}
		return m.okEnv([]byte(`{}`))
	case m.hook != nil:
		if m.hook.Init != nil {
			if err := m.hook.Init(cfg); err != nil {
				return m.errEnvFrom(abi.CodeBadConfig, err)
			}
		}
		return m.okEnv([]byte(`{}`))
	}
	return m.errEnv(abi.CodeInternal, "no plugin registered: call sdk.RegisterParser, RegisterTools or RegisterHook from init()")
}

// call handles agentrt_call.
func (m *module) call(in []byte) (out []byte) {
	defer m.recoverInto(&out)
	switch {
	case m.parser != nil:
		o := &m.po
		o.tools, o.buf, o.calls, o.errs, o.normal, o.nCalls, o.nErrs = m.parserTools, m.out[:0], o.calls[:0], o.errs[:0], o.normal[:0], 0, 0
		m.parser.Parse(view(in), o)
		m.out = o.encode()
		return m.out
	case m.tools != nil:
		name, err := Value(in).Get("name").Str()
		if err != nil {
			return m.errEnv(abi.CodeBadInput, "tool call without a name")
		}
		if m.toolNames != nil && !m.toolNames[name] {
			return m.errEnv(abi.CodeUnknownTool, "unknown tool "+strconv.Quote(name))
		}
		args := Value(in).Get("arguments")
		res, err := m.tools.Call(name, args)
		if err != nil {
			return m.errEnvFrom("error", err)
		}
		b := append(m.out[:0], `{"ok":{`...)
		if res.isJSON {
			b = append(b, `"json":`...)
			if len(res.json) == 0 {
				b = append(b, "null"...)
			} else {
				b = append(b, res.json...)
			}
		} else {
			b = append(b, `"text":`...)
			b = fastjson.AppendQuote(b, res.text)
		}
		m.out = append(b, "}}"...)
		return m.out
	case m.hook != nil:
		resp, err := m.hook.Handle(newEvent(in))
		if err != nil {
			return m.errEnvFrom("error", err)
		}
		b := append(m.out[:0], `{"ok":`...)
		b = AppendResponse(b, &resp)
		m.out = append(b, '}')
		return m.out
	}
	return m.errEnv(abi.CodeInternal, "no plugin registered")
}

// view returns b as a string without copying. The parser's text is such a view of the input buffer: it is valid
// only during the Parse call (the next call overwrites the buffer), which is documented on [Parser].Parse.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (m *module) recoverInto(out *[]byte) {
	if r := recover(); r != nil {
		*out = m.errEnv(abi.CodeInternal, fmt.Sprint("panic: ", r))
	}
}

func (m *module) okEnv(val []byte, tail ...byte) []byte {
	b := append(m.out[:0], `{"ok":`...)
	b = append(b, val...)
	b = append(b, tail...)
	m.out = append(b, '}')
	return m.out
}

func (m *module) errEnv(code, msg string) []byte {
	b := append(m.out[:0], `{"error":{"code":`...)
	b = fastjson.AppendQuote(b, code)
	b = append(b, `,"message":`...)
	b = fastjson.AppendQuote(b, msg)
	m.out = append(b, "}}"...)
	return m.out
}

func (m *module) errEnvFrom(code string, err error) []byte {
	var e *Error
	if errors.As(err, &e) {
		return m.errEnv(e.Code, e.Message)
	}
	return m.errEnv(code, err.Error())
}

// AppendResponse appends the JSON of a hook response to b (exported for tests and for plugins that build
// envelopes themselves).
func AppendResponse(b []byte, r *Response) []byte {
	b = append(b, '{')
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	if r.Stop != nil {
		sep()
		b = append(b, `"stop":{"reason":`...)
		b = fastjson.AppendQuote(b, r.Stop.Reason)
		if r.Stop.Message != "" {
			b = append(b, `,"message":`...)
			b = fastjson.AppendQuote(b, r.Stop.Message)
		}
		b = append(b, '}')
	}
	if r.CancelTool != nil {
		sep()
		b = append(b, `"cancel_tool":`...)
		b = fastjson.AppendQuote(b, *r.CancelTool)
	}
	if len(r.ToolArguments) > 0 {
		sep()
		b = append(b, `"tool_arguments":`...)
		b = append(b, r.ToolArguments...)
	}
	if r.ToolResult != nil {
		sep()
		b = append(b, `"tool_result":{`...)
		m := 0
		if r.ToolResult.Text != nil {
			b = append(b, `"text":`...)
			b = fastjson.AppendQuote(b, *r.ToolResult.Text)
			m++
		}
		if len(r.ToolResult.JSON) > 0 {
			if m > 0 {
				b = append(b, ',')
			}
			b = append(b, `"json":`...)
			b = append(b, r.ToolResult.JSON...)
			m++
		}
		if r.ToolResult.IsError {
			if m > 0 {
				b = append(b, ',')
			}
			b = append(b, `"is_error":true`...)
		}
		b = append(b, '}')
	}
	if r.Reward != nil {
		sep()
		b = append(b, `"reward":`...)
		b = strconv.AppendFloat(b, *r.Reward, 'g', -1, 64)
	}
	if len(r.Metrics) > 0 {
		sep()
		b = append(b, `"metrics":{`...)
		keys := make([]string, 0, len(r.Metrics))
		for k := range r.Metrics {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = fastjson.AppendQuote(b, k)
			b = append(b, ':')
			b = strconv.AppendFloat(b, r.Metrics[k], 'g', -1, 64)
		}
		b = append(b, '}')
	}
	if len(r.State) > 0 {
		sep()
		b = append(b, `"state":`...)
		b = append(b, r.State...)
	}
	if r.Messages != nil {
		sep()
		b = append(b, `"messages":[`...)
		for i := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendMessage(b, &r.Messages[i])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// AppendMessage appends the JSON of a conversation message (a before_generate hook's replacement conversation).
func AppendMessage(b []byte, m *abi.Message) []byte {
	b = append(b, `{"role":`...)
	b = fastjson.AppendQuote(b, m.Role)
	b = append(b, `,"content":`...)
	b = fastjson.AppendQuote(b, m.Content)
	if m.ReasoningContent != "" {
		b = append(b, `,"reasoning_content":`...)
		b = fastjson.AppendQuote(b, m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = fastjson.AppendQuote(b, c.ID)
			b = append(b, `,"name":`...)
			b = fastjson.AppendQuote(b, c.Name)
			b = append(b, `,"arguments":`...)
			if len(c.Arguments) == 0 {
				b = append(b, "{}"...)
			} else {
				b = append(b, c.Arguments...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = fastjson.AppendQuote(b, m.ToolCallID)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = fastjson.AppendQuote(b, m.Name)
	}
	return append(b, '}')
}

// MessageOf reads a conversation message (an element of a before_generate event's messages).
func MessageOf(v Value) abi.Message {
	m := abi.Message{Role: v.Get("role").StrOr(""), Content: v.Get("content").StrOr(""), ReasoningContent: v.Get("reasoning_content").StrOr(""),
		ToolCallID: v.Get("tool_call_id").StrOr(""), Name: v.Get("name").StrOr("")}
	_ = v.Get("tool_calls").Elems(func(c Value) bool {
		m.ToolCalls = append(m.ToolCalls, abi.ToolCall{ID: c.Get("id").StrOr(""), Name: c.Get("name").StrOr(""),
			Arguments: abi.RawJSON(append([]byte(nil), c.Get("arguments").Raw()...))})
		return true
	})
	return m
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// ParseOutput collects what a parser finds in one completion.
type ParseOutput struct {
	tools  []ToolSpec
	buf    []byte
	calls  []byte
	errs   []byte
	normal []byte
	nCalls int
	nErrs  int
}

// Tools are the agent's tool specs (from init).
func (o *ParseOutput) Tools() []ToolSpec { return o.tools }

// Tool returns the spec of the agent's tool name, and whether there is one.
func (o *ParseOutput) Tool(name string) (ToolSpec, bool) {
	for _, t := range o.tools {
		if t.Name == name {
			return t, true
		}
	}
	return ToolSpec{}, false
}

// AddCall records a well-formed call. args must be a JSON object (it is copied verbatim); id may be "". The span
// [start, end) is in bytes of the completion. It returns an error, and records nothing, when args is not a
// JSON object: record a [abi.ReasonBadArguments] error instead.
func (o *ParseOutput) AddCall(id, name string, args []byte, start, end int) error {
	if !fastjson.IsObject(args) {
		return fmt.Errorf("sdk: arguments of %q are not a JSON object", name)
	}
	o.AddCheckedCall(id, name, args, start, end)
	return nil
}

// AddCheckedCall is AddCall for arguments the parser has already checked to be one JSON object (e.g. a
// compacted object from its own JSON reader): it skips AddCall's second scan of them, the largest part of
// recording a call. Anything else makes an envelope the host refuses, failing the whole parse.
func (o *ParseOutput) AddCheckedCall(id, name string, args []byte, start, end int) {
	if o.nCalls > 0 {
		o.calls = append(o.calls, ',')
	}
	o.nCalls++
	o.calls = append(o.calls, '{')
	if id != "" {
		o.calls = append(o.calls, `"id":`...)
		o.calls = fastjson.AppendQuote(o.calls, id)
		o.calls = append(o.calls, ',')
	}
	o.calls = append(o.calls, `"name":`...)
	o.calls = fastjson.AppendQuote(o.calls, name)
	o.calls = append(o.calls, `,"arguments":`...)
	o.calls = append(o.calls, fastjson.SkipWSBytes(args)...)
	o.calls = appendSpan(o.calls, start, end)
	o.calls = append(o.calls, '}')
}

// AddError records a malformed call: a reason code (abi.Reason*), a message for the model (what is wrong and
// where), and the exact raw text at [start, end).
func (o *ParseOutput) AddError(reason, message, raw string, start, end int) {
	o.AddCallError("", reason, message, raw, start, end)
}

// AddCallError is AddError for a malformed call whose tool name the parser could read: the error result the
// model reads is then that tool's (its name in the tool message).
func (o *ParseOutput) AddCallError(name, reason, message, raw string, start, end int) {
	if o.nErrs > 0 {
		o.errs = append(o.errs, ',')
	}
	o.nErrs++
	o.errs = append(o.errs, `{"reason":`...)
	o.errs = fastjson.AppendQuote(o.errs, reason)
	if name != "" {
		o.errs = append(o.errs, `,"name":`...)
		o.errs = fastjson.AppendQuote(o.errs, name)
	}
	if message != "" {
		o.errs = append(o.errs, `,"message":`...)
		o.errs = fastjson.AppendQuote(o.errs, message)
	}
	o.errs = append(o.errs, `,"raw":`...)
	o.errs = fastjson.AppendQuote(o.errs, raw)
	o.errs = appendSpan(o.errs, start, end)
	o.errs = append(o.errs, '}')
}

// AppendNormal appends text to the normal (non-call) text.
func (o *ParseOutput) AppendNormal(text string) { o.normal = append(o.normal, text...) }

// Calls is the number of calls recorded so far.
func (o *ParseOutput) Calls() int { return o.nCalls }

// Errors is the number of errors recorded so far.
func (o *ParseOutput) Errors() int { return o.nErrs }

func appendSpan(b []byte, start, end int) []byte {
	b = append(b, `,"span":[`...)
	b = strconv.AppendInt(b, int64(start), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(end), 10)
	return append(b, ']')
}

func (o *ParseOutput) encode() []byte {
	b := append(o.buf, `{"ok":{`...)
	n := 0
	if o.nCalls > 0 {
		b = append(b, `"calls":[`...)
		b = append(b, o.calls...)
		b = append(b, ']')
		n++
	}
	if len(o.normal) > 0 {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `"normal_text":`...)
		b = fastjson.AppendQuoteBytes(b, o.normal)
		n++
	}
	if o.nErrs > 0 {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `"errors":[`...)
		b = append(b, o.errs...)
		b = append(b, ']')
	}
	return append(b, "}}"...)
}
