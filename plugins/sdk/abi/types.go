package abi

// RawJSON is a raw, already-encoded JSON value (like encoding/json.RawMessage, without importing encoding/json so
// that guests stay small). It marshals as itself; a nil RawJSON marshals as null.
type RawJSON []byte

// MarshalJSON returns r, or null when r is empty.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON stores a copy of data.
func (r *RawJSON) UnmarshalJSON(data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}

// Manifest is what a plugin says about itself through [FuncDescribe] (ABI.md section 4).
type Manifest struct {
	ABIVersion  int        `json:"abi_version"`
	Kind        string     `json:"kind"`
	Name        string     `json:"name"`
	Version     string     `json:"version,omitempty"`
	Description string     `json:"description,omitempty"`
	Tools       []ToolSpec `json:"tools,omitempty"`
	Events      []string   `json:"events,omitempty"`
	// MessageRoles, if set, are the roles whose message_added events the hook wants; it is called for no other
	// message (ABI.md section 4.1).
	MessageRoles []string `json:"message_roles,omitempty"`
	ConfigSchema RawJSON  `json:"config_schema,omitempty"`
}

// ToolSpec describes one tool: its name, a description for the model, and the JSON Schema of its arguments object.
type ToolSpec struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Parameters  RawJSON `json:"parameters,omitempty"`
}

// InitInput is the JSON passed to [FuncInit] (ABI.md section 4.2).
type InitInput struct {
	// Config is the plugin's table from runtime.toml as JSON, or null.
	Config RawJSON `json:"config"`
	// Tools are the agent's tool specs, for parsers; empty for other kinds.
	Tools []ToolSpec `json:"tools"`
}

// InitResult is the ok value of [FuncInit]. Tools, when set by a tool module, replaces the manifest's tool list.
type InitResult struct {
	Tools []ToolSpec `json:"tools,omitempty"`
}

// Envelope is the output of [FuncInit] and [FuncCall]: exactly one of OK and Error is set.
type Envelope struct {
	OK    RawJSON `json:"ok,omitempty"`
	Error *Error  `json:"error,omitempty"`
}

// Error is the error half of an [Envelope].
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Span is a [start, end) byte range in a parser's input text.
type Span [2]int

// ParseResult is a parser's ok value (ABI.md section 5.1).
type ParseResult struct {
	Calls      []ParsedCall `json:"calls,omitempty"`
	NormalText string       `json:"normal_text,omitempty"`
	Errors     []ParseError `json:"errors,omitempty"`
}

// ParsedCall is one well-formed tool call found by a parser. Arguments is always a JSON object.
type ParsedCall struct {
	ID        string  `json:"id,omitempty"`
	Name      string  `json:"name"`
	Arguments RawJSON `json:"arguments"`
	Span      Span    `json:"span"`
}

// ParseError is one malformed tool call: a reason code (Reason*), a message, and the exact raw text. Name is the
// tool it calls, when the parser could read one (optional): the error result the model reads is that tool's.
type ParseError struct {
	Reason  string `json:"reason"`
	Name    string `json:"name,omitempty"`
	Message string `json:"message,omitempty"`
	Raw     string `json:"raw"`
	Span    Span   `json:"span"`
}

// ToolCall is a tool's input (ABI.md section 5.2) and the tool_call of hook events. Index is set in hook events only.
type ToolCall struct {
	ID        string  `json:"id,omitempty"`
	Name      string  `json:"name"`
	Arguments RawJSON `json:"arguments"`
	Index     *int    `json:"index,omitempty"`
}

// ToolResult is a tool's ok value: text, or a JSON value. IsError is set by the host for error envelopes and may be
// set by hooks in tool_result replacements.
type ToolResult struct {
	Text    *string `json:"text,omitempty"`
	JSON    RawJSON `json:"json,omitempty"`
	IsError bool    `json:"is_error,omitempty"`
}

// Counts are the running counters of an episode, as of the moment an event fires (ABI.md section 5.3).
type Counts struct {
	Messages           int `json:"messages"`
	ModelCalls         int `json:"model_calls"`
	ToolIters          int `json:"tool_iters"`
	ToolCalls          int `json:"tool_calls"`
	CancelledToolCalls int `json:"cancelled_tool_calls"`
	PromptTokens       int `json:"prompt_tokens"`
	ResponseTokens     int `json:"response_tokens"`
}

// Message is a conversation message as hooks see it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant message's reasoning, apart from its content, in before_generate's messages
	// (and a hook's replacement); elsewhere the content holds the text as generated.
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

// ModelResponse is the response field of after_model_call.
type ModelResponse struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
	ToolCalls    int    `json:"tool_calls"`
	ParseErrors  int    `json:"parse_errors"`
}

// Event is a hook's input (ABI.md section 5.3). Which optional fields are set depends on Event.
type Event struct {
	Event     string  `json:"event"`
	EpisodeID string  `json:"episode_id"`
	Turn      int     `json:"turn"`
	Counts    Counts  `json:"counts"`
	State     RawJSON `json:"state,omitempty"`

	Messages   []Message      `json:"messages,omitempty"`    // before_invocation, before_generate, episode_end
	Message    *Message       `json:"message,omitempty"`     // message_added
	Response   *ModelResponse `json:"response,omitempty"`    // after_model_call
	ToolCall   *ToolCall      `json:"tool_call,omitempty"`   // before_tool_call, after_tool_call
	ToolResult *ToolResult    `json:"tool_result,omitempty"` // after_tool_call
	Status     string         `json:"status,omitempty"`      // after_invocation, episode_end
	StopReason string         `json:"stop_reason,omitempty"` // after_invocation, episode_end
	Label      RawJSON        `json:"label,omitempty"`       // episode_end
	Metadata   RawJSON        `json:"metadata,omitempty"`    // episode_end
	// before_generate: the tokens of the current sample (the prompt the next call sends) and the context window.
	ContextTokens int `json:"context_tokens,omitempty"`
	ContextWindow int `json:"context_window,omitempty"`
}

// Stop asks the runtime to stop the agent loop at the current event's message boundary.
type Stop struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// HookResponse is a hook's ok value; every field is optional and the zero value means "carry on".
type HookResponse struct {
	Stop          *Stop              `json:"stop,omitempty"`
	CancelTool    *string            `json:"cancel_tool,omitempty"`
	ToolArguments RawJSON            `json:"tool_arguments,omitempty"`
	ToolResult    *ToolResult        `json:"tool_result,omitempty"`
	Reward        *float64           `json:"reward,omitempty"`
	Metrics       map[string]float64 `json:"metrics,omitempty"`
	State         RawJSON            `json:"state,omitempty"`
	// Messages (before_generate) replace the conversation: the runtime starts a new sample of the episode whose
	// prompt is the chat template's full render of them (tool results answer the tool_calls of the assistant
	// message before them, as in any conversation).
	Messages []Message `json:"messages,omitempty"`
}
