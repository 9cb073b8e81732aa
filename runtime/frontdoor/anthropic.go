package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// Anthropic's Messages API (POST /v1/messages) over the same sessions: its messages, content blocks and tools are
// turned into the chat messages the chat template reads, and the reply comes back as content blocks (thinking,
// text, tool_use). Anthropic SDK: Anthropic(base_url="http://HOST/s/SESSION").

type anthRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []anthMessage   `json:"messages"`
	Tools         []anthTool      `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	OutputFormat  json.RawMessage `json:"output_format"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	Type        string          `json:"type,omitempty"`
}

type anthBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
}

// anthError writes e in Anthropic's shape: {"type": "error", "error": {"type", "message"}}.
func anthError(w http.ResponseWriter, e *apiError) {
	typ := e.typ
	switch {
	case e.status == http.StatusNotFound:
		typ = "not_found_error"
	case e.status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case e.status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.status == http.StatusServiceUnavailable:
		typ = "overloaded_error"
	case e.status >= 500:
		typ = "api_error"
	}
	writeJSON(w, e.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": e.msg}})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, sessionID string) {
	req, msgs, tools, aerr := s.decodeMessages(w, r)
	if aerr != nil {
		anthError(w, aerr)
		return
	}
	res, aerr := s.serveCall(r.Context(), sessionID, "anthropic.messages", req.chat, msgs, tools)
	if aerr != nil {
		anthError(w, aerr)
		return
	}
	msg := res.anthropic(s.m.Name)
	if req.stream {
		writeAnthStream(w, msg)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

type decodedAnth struct {
	chat   *chatRequest
	stream bool
}

func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request) (*decodedAnth, []tito.Message, []json.RawMessage, *apiError) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	var req anthRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, nil, invalid("", "the request is not a valid Messages API JSON object: "+err.Error())
	}
	if req.Model != s.m.Name {
		return nil, nil, nil, &apiError{status: http.StatusNotFound, typ: "not_found_error",
			msg: fmt.Sprintf("model: %q does not exist: this server serves %q", req.Model, s.m.Name)}
	}
	if req.MaxTokens == nil || *req.MaxTokens <= 0 {
		return nil, nil, nil, invalid("max_tokens", "max_tokens: a positive number is required")
	}
	if t := bytes.TrimSpace(req.ToolChoice); len(t) > 0 && string(t) != "null" {
		var tc struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t, &tc) != nil || tc.Type != "auto" {
			return nil, nil, nil, invalid("tool_choice", fmt.Sprintf("tool_choice %s is not supported: the model's reply is returned as generated (use {\"type\": \"auto\"})", t))
		}
	}
	if len(req.Messages) == 0 {
		return nil, nil, nil, invalid("messages", "messages: at least one message is required")
	}
	var msgs []tito.Message
	if sys := bytes.TrimSpace(req.System); len(sys) > 0 && string(sys) != "null" {
		text, err := blocksText(sys)
		if err != nil {
			return nil, nil, nil, invalid("system", "system: "+err.Error())
		}
		msgs = append(msgs, tito.Message{Role: tito.RoleSystem, Content: text})
	}
	for i, m := range req.Messages {
		conv, err := anthToChat(m)
		if err != nil {
			return nil, nil, nil, invalid(fmt.Sprintf("messages.%d", i), fmt.Sprintf("messages.%d: %v", i, err))
		}
		msgs = append(msgs, conv...)
	}
	var tools []json.RawMessage
	for i, t := range req.Tools {
		if t.Name == "" || t.Type != "" && t.Type != "custom" {
			return nil, nil, nil, invalid(fmt.Sprintf("tools.%d", i), fmt.Sprintf("tools.%d: only custom tools with a name are supported", i))
		}
		b, err := turn.ToolSpec(t.Name, t.Description, t.InputSchema)
		if err != nil {
			return nil, nil, nil, invalid(fmt.Sprintf("tools.%d", i), fmt.Sprintf("tools.%d: %v", i, err))
		}
		tools = append(tools, b)
	}
	chat := &chatRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK}
	if len(req.StopSequences) > 0 {
		chat.Stop, _ = json.Marshal(req.StopSequences)
	}
	if chat.constraint, aerr = constraintOf(req.OutputFormat, "output_format"); aerr != nil {
		return nil, nil, nil, aerr
	}
	chat.constraintParam = "output_format"
	return &decodedAnth{chat: chat, stream: req.Stream}, msgs, tools, nil
}

// blocksText reads a string or a list of text blocks.
func blocksText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("want a string or a list of content blocks")
	}
	var b strings.Builder
	for j, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("content.%d: a %q block where only text is supported", j, bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// anthToChat turns one Messages API message into chat messages: a user message's tool_result blocks become tool
// messages (in order, before its text), an assistant's thinking, text and tool_use blocks one assistant message.
func anthToChat(m anthMessage) ([]tito.Message, error) {
	var blocks []anthBlock
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		blocks = []anthBlock{{Type: "text", Text: text}}
	} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, errors.New("content: want a string or a list of content blocks")
	}
	switch m.Role {
	case "user":
		var out []tito.Message
		var b strings.Builder
		hasText := false
		for j, bl := range blocks {
			switch bl.Type {
			case "text":
				b.WriteString(bl.Text)
				hasText = true
			case "tool_result":
				content := ""
				if c := bytes.TrimSpace(bl.Content); len(c) > 0 && string(c) != "null" {
					t, err := blocksText(c)
					if err != nil {
						return nil, fmt.Errorf("content.%d.content: %v", j, err)
					}
					content = t
				}
				if bl.ToolUseID == "" {
					return nil, fmt.Errorf("content.%d: tool_result without a tool_use_id", j)
				}
				out = append(out, tito.Message{Role: tito.RoleTool, ToolCallID: bl.ToolUseID, Content: content})
			default:
				return nil, fmt.Errorf("content.%d: %q blocks are not supported in a user message", j, bl.Type)
			}
		}
		if hasText {
			out = append(out, tito.Message{Role: tito.RoleUser, Content: b.String()})
		}
		if len(out) == 0 {
			return nil, errors.New("content: empty")
		}
		return out, nil
	case "assistant":
		msg := tito.Message{Role: tito.RoleAssistant}
		var b strings.Builder
		for j, bl := range blocks {
			switch bl.Type {
			case "text":
				b.WriteString(bl.Text)
			case "thinking":
				msg.ReasoningContent += bl.Thinking
			case "tool_use":
				args := bytes.TrimSpace(bl.Input)
				if len(args) == 0 || string(args) == "null" {
					args = []byte("{}")
				}
				if args[0] != '{' || !json.Valid(args) {
					return nil, fmt.Errorf("content.%d.input: want a JSON object", j)
				}
				var c bytes.Buffer
				json.Compact(&c, args)
				msg.ToolCalls = append(msg.ToolCalls, tito.ToolCall{ID: bl.ID, Type: "function",
					Function: tito.FunctionCall{Name: bl.Name, Arguments: json.RawMessage(c.Bytes())}})
			default:
				return nil, fmt.Errorf("content.%d: %q blocks are not supported in an assistant message", j, bl.Type)
			}
		}
		msg.Content = b.String()
		if err := tito.ValidateMessages([]tito.Message{msg}); err != nil {
			return nil, err
		}
		return []tito.Message{msg}, nil
	}
	return nil, fmt.Errorf("role: %q (want user or assistant; the system prompt goes in \"system\")", m.Role)
}

type anthResponse struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []anthBlock `json:"content"`
	StopReason   string      `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        struct {
		InputTokens          int `json:"input_tokens"`
		OutputTokens         int `json:"output_tokens"`
		CacheReadInputTokens int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Agentrt agentrtInfo `json:"agentrt"`
}

func (c *callResult) anthropic(model string) anthResponse {
	r := anthResponse{ID: "msg_" + c.rid, Type: "message", Role: "assistant", Model: model, Content: []anthBlock{}, StopReason: "end_turn",
		Agentrt: agentrtInfo{Session: c.session, TrajectoryID: c.trajectoryID, Turn: c.turn, Drift: c.drift}}
	if c.reasoning != "" {
		empty := ""
		r.Content = append(r.Content, anthBlock{Type: "thinking", Thinking: c.reasoning, Signature: &empty})
	}
	if c.content != "" {
		r.Content = append(r.Content, anthBlock{Type: "text", Text: c.content})
	}
	for _, tc := range c.calls {
		r.Content = append(r.Content, anthBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: tc.Function.Arguments})
	}
	switch {
	case len(c.calls) > 0:
		r.StopReason = "tool_use"
	case c.finish == "length":
		r.StopReason = "max_tokens"
	}
	r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CacheReadInputTokens = c.promptTokens, c.completionTokens, c.cachedTokens
	for _, pe := range c.parseErrors {
		r.Agentrt.ParseErrors = append(r.Agentrt.ParseErrors, parseErrView{Reason: pe.Reason, Raw: pe.Raw})
	}
	return r
}

// writeAnthStream sends a finished reply as the Messages API's SSE events (message_start, one content block
// each start/delta/stop, message_delta, message_stop); like the chat stream, it is sent once generated.
func writeAnthStream(w http.ResponseWriter, r anthResponse) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	startMsg := map[string]any{"id": r.ID, "type": "message", "role": "assistant", "model": r.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": r.Usage.InputTokens, "output_tokens": 0}}
	event("message_start", map[string]any{"type": "message_start", "message": startMsg})
	for i, bl := range r.Content {
		var first, delta map[string]any
		switch bl.Type {
		case "thinking":
			first = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			delta = map[string]any{"type": "thinking_delta", "thinking": bl.Thinking}
		case "text":
			first = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": bl.Text}
		case "tool_use":
			first = map[string]any{"type": "tool_use", "id": bl.ID, "name": bl.Name, "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(bl.Input)}
		}
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": first})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": r.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
