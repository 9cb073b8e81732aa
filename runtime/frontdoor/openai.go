package frontdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// chatRequest is the part of an OpenAI chat completions request that agentrt reads; other fields are ignored.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	N                   *int            `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs       bool            `json:"logprobs"`
	LogitBias      json.RawMessage `json:"logit_bias"`
	ResponseFormat json.RawMessage `json:"response_format"`
	// SGLang's extensions of the OpenAI request.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`

	// constraint is the JSON schema the reply must follow (SGLang's json_schema), from the API's response
	// format; constraintParam names that parameter in errors.
	constraint, constraintParam string
}

// formatSpec is a structured-output request in any of the APIs' spellings: Chat Completions' response_format
// ({"type": "json_schema", "json_schema": {"name", "schema", "strict"}}), Responses' text.format and Anthropic's
// output_format ({"type": "json_schema", "schema": ...}); "json_object" and "text" too.
type formatSpec struct {
	Type       string          `json:"type"`
	Schema     json.RawMessage `json:"schema"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// constraintOf turns a response format into SGLang's json_schema constraint, as SGLang's own OpenAI server does
// (json_object is {"type": "object"}); "" for none. param names the format's parameter in errors.
func constraintOf(raw json.RawMessage, param string) (string, *apiError) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return "", nil
	}
	var f formatSpec
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", invalid(param, fmt.Sprintf("%s: want an object with a \"type\" (text, json_object or json_schema): %v", param, err))
	}
	switch f.Type {
	case "text":
		return "", nil
	case "json_object":
		return `{"type": "object"}`, nil
	case "json_schema":
		schema, at := f.Schema, param+".schema"
		if f.JSONSchema != nil {
			schema, at = f.JSONSchema.Schema, param+".json_schema.schema"
		}
		var obj map[string]any
		if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
			return "", invalid(at, fmt.Sprintf("%s: a json_schema format needs the schema, a JSON object", at))
		}
		var c bytes.Buffer
		json.Compact(&c, schema)
		return c.String(), nil
	}
	return "", invalid(param+".type", fmt.Sprintf("%s.type %q is not supported (text, json_object or json_schema)", param, f.Type))
}

// apiError is an error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	status int
	typ    string
	param  string
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func invalid(param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: "invalid_request", msg: msg}
}

func writeError(w http.ResponseWriter, e *apiError) {
	var param any
	if e.param != "" {
		param = e.param
	}
	writeJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.msg, "type": e.typ, "param": param, "code": e.code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"agentrt: cannot encode the response","type":"server_error","param":null,"code":"internal"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// readBody reads a request's body, at most frontdoor.max_request_bytes of it (a larger one is a 413).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes))
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
				msg: fmt.Sprintf("the request is larger than %d bytes (frontdoor.max_request_bytes)", s.cfg.MaxRequestBytes)}
		}
		return nil, invalid("", "reading the request: "+err.Error())
	}
	return body, nil
}

// decodeChat reads and checks a request; the messages come back decoded and normalized (see normalize).
func (s *Server) decodeChat(w http.ResponseWriter, r *http.Request) (*chatRequest, []tito.Message, []json.RawMessage, *apiError) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, nil, invalid("", "the request is not a valid chat completions JSON object: "+err.Error())
	}
	if req.Model != s.m.Name {
		return nil, nil, nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
			msg: fmt.Sprintf("the model %q does not exist: this server serves %q", req.Model, s.m.Name)}
	}
	if req.N != nil && *req.N != 1 {
		return nil, nil, nil, invalid("n", "n must be 1: each call of a session is one sample (call again to sample again; the session forks)")
	}
	if t := bytes.TrimSpace(req.LogitBias); len(t) > 0 && string(t) != "null" && string(t) != "{}" {
		return nil, nil, nil, invalid("logit_bias", "logit_bias is not supported")
	}
	if t := bytes.TrimSpace(req.ToolChoice); len(t) > 0 && string(t) != "null" && string(t) != `"auto"` {
		return nil, nil, nil, invalid("tool_choice", fmt.Sprintf("tool_choice %s is not supported: the model's reply is returned as generated (use \"auto\")", t))
	}
	if t := bytes.TrimSpace(req.Messages); len(t) == 0 || t[0] != '[' {
		return nil, nil, nil, invalid("messages", "messages must be a non-empty array of chat messages")
	}
	raw, err := tito.DecodeMessages(req.Messages)
	if err != nil {
		return nil, nil, nil, invalid("messages", err.Error())
	}
	if len(raw) == 0 {
		return nil, nil, nil, invalid("messages", "messages must be a non-empty array of chat messages")
	}
	msgs := make([]tito.Message, len(raw))
	for i := range raw {
		m, err := normalize(raw[i])
		if err != nil {
			return nil, nil, nil, invalid(fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: %v", i, err))
		}
		msgs[i] = m
	}
	var tools []json.RawMessage
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" {
		if tools, err = tito.DecodeTools(t); err != nil {
			return nil, nil, nil, invalid("tools", err.Error())
		}
		for i, sp := range tools {
			if name, err := turn.ToolName(sp); err != nil || name == "" {
				return nil, nil, nil, invalid(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("tools[%d] has no function name", i))
			}
		}
	}
	if req.MaxTokens != nil && *req.MaxTokens <= 0 || req.MaxCompletionTokens != nil && *req.MaxCompletionTokens <= 0 {
		return nil, nil, nil, invalid("max_tokens", "max_tokens must be > 0")
	}
	if req.constraint, aerr = constraintOf(req.ResponseFormat, "response_format"); aerr != nil {
		return nil, nil, nil, aerr
	}
	req.constraintParam = "response_format"
	return &req, msgs, tools, nil
}

// normalize keeps what a chat template reads of a caller's message: role, text content (text parts joined),
// reasoning, tool calls (arguments as a JSON object) and the tool call id. SDK-only keys (refusal, annotations,
// audio, ...) are dropped, so that the same message renders the same however the SDK serialized it.
func normalize(m tito.Message) (tito.Message, error) {
	out := tito.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
	if m.Parts != nil {
		var b strings.Builder
		for j, p := range m.Parts {
			var part struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(p, &part); err != nil || part.Type != "text" || part.Text == nil {
				return out, fmt.Errorf("content[%d]: only text parts are supported", j)
			}
			b.WriteString(*part.Text)
		}
		out.Content = b.String()
	}
	for _, f := range m.Extra {
		if f.Key == "reasoning" || f.Key == "thinking" { // other spellings of reasoning_content
			var s string
			if json.Unmarshal(f.Value, &s) == nil && out.ReasoningContent == "" {
				out.ReasoningContent = s
			}
		}
	}
	for j, tc := range m.ToolCalls {
		args := bytes.TrimSpace(tc.Function.Arguments)
		if len(args) > 0 && args[0] == '"' {
			var s string
			if err := json.Unmarshal(args, &s); err != nil {
				return out, fmt.Errorf("tool_calls[%d].function.arguments: %v", j, err)
			}
			if s = strings.TrimSpace(s); s == "" {
				s = "{}"
			}
			if !json.Valid([]byte(s)) || s[0] != '{' {
				return out, fmt.Errorf("tool_calls[%d].function.arguments is not a JSON object: %q", j, s)
			}
			var c bytes.Buffer
			json.Compact(&c, []byte(s))
			args = c.Bytes()
		}
		if len(args) == 0 {
			args = []byte("{}")
		}
		out.ToolCalls = append(out.ToolCalls, tito.ToolCall{ID: tc.ID, Type: "function",
			Function: tito.FunctionCall{Name: tc.Function.Name, Arguments: json.RawMessage(args)}})
	}
	if err := tito.ValidateMessages([]tito.Message{out}); err != nil {
		return out, err
	}
	return out, nil
}

// chatResponse is OpenAI's chat.completion object, plus agentrt's own "agentrt" member.
type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
	Agentrt agentrtInfo  `json:"agentrt"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// agentrtInfo tells the caller where its call went: the session, the trajectory (branch) and the turn.
type agentrtInfo struct {
	Session      string         `json:"session"`
	TrajectoryID string         `json:"trajectory_id"`
	Turn         int            `json:"turn"`
	Drift        *driftRecord   `json:"drift,omitempty"`
	ParseErrors  []parseErrView `json:"parse_errors,omitempty"`
}

type parseErrView struct {
	Reason string `json:"reason"`
	Raw    string `json:"raw"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, sessionID string) {
	req, msgs, tools, aerr := s.decodeChat(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	res, aerr := s.serveCall(r.Context(), sessionID, "openai.chat.completions", req, msgs, tools)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if req.Stream {
		writeChatStream(w, res.chat(s.m.Name), req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	writeJSON(w, http.StatusOK, res.chat(s.m.Name))
}

// serveCall runs one decoded call of any API in its session (a one-call session ends right after it). Sampling
// params SGLang would refuse are refused first, before any session is opened.
func (s *Server) serveCall(ctx context.Context, sessionID, api string, req *chatRequest, msgs []tito.Message, tools []json.RawMessage) (*callResult, *apiError) {
	if _, aerr := s.sampling(req); aerr != nil {
		return nil, aerr
	}
	for {
		ss, aerr := s.open(sessionID)
		if aerr != nil {
			return nil, aerr
		}
		res, aerr, discarded := ss.call(ctx, api, req, msgs, tools)
		if discarded {
			continue // the session's first call failed while this one waited: this one opens it afresh
		}
		if ss.oneCall {
			if _, err := ss.end(ctx, "", nil); err != nil && aerr == nil {
				aerr = &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "spool_error", msg: err.Error()}
			}
		}
		return res, aerr
	}
}

// writeChatStream sends a finished reply as OpenAI's chat.completion.chunk events: the role, the reasoning, the
// content, each tool call (whole, with its index), the finish reason, the usage if asked, then [DONE]. The reply
// is generated before the first event (SGLang's /generate is called without streaming), so the events carry
// the whole reply rather than token-by-token deltas.
func writeChatStream(w http.ResponseWriter, r chatResponse, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any, u *chatUsage) {
		c := map[string]any{"id": r.ID, "object": "chat.completion.chunk", "created": r.Created, "model": r.Model,
			"choices": []any{}}
		if delta != nil {
			c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}
		}
		if u != nil {
			c["usage"] = u
		}
		if delta == nil && u == nil {
			return
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	msg := r.Choices[0].Message
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if msg.ReasoningContent != nil {
		chunk(map[string]any{"reasoning_content": *msg.ReasoningContent}, nil, nil)
	}
	if msg.Content != nil && *msg.Content != "" {
		chunk(map[string]any{"content": *msg.Content}, nil, nil)
	}
	for i, tc := range msg.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}}}}, nil, nil)
	}
	chunk(map[string]any{}, r.Choices[0].FinishReason, nil)
	if usage {
		u := r.Usage
		chunk(nil, nil, &u)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chat shapes a reply as a chat.completion.
func (c *callResult) chat(model string) chatResponse {
	msg := chatMessage{Role: "assistant"}
	if c.content != "" || len(c.calls) == 0 {
		msg.Content = &c.content
	}
	if c.reasoning != "" {
		msg.ReasoningContent = &c.reasoning
	}
	for _, tc := range c.calls {
		var t chatToolCall
		t.ID, t.Type = tc.ID, "function"
		t.Function.Name, t.Function.Arguments = tc.Function.Name, string(tc.Function.Arguments)
		msg.ToolCalls = append(msg.ToolCalls, t)
	}
	finish := c.finish
	if finish == "stop" && len(c.calls) > 0 {
		finish = "tool_calls"
	}
	resp := chatResponse{ID: "chatcmpl-" + c.rid, Object: "chat.completion", Created: c.created, Model: model,
		Choices: []chatChoice{{Message: msg, FinishReason: finish, Logprobs: json.RawMessage("null")}},
		Agentrt: agentrtInfo{Session: c.session, TrajectoryID: c.trajectoryID, Turn: c.turn, Drift: c.drift}}
	resp.Usage.PromptTokens, resp.Usage.CompletionTokens = c.promptTokens, c.completionTokens
	resp.Usage.TotalTokens = c.promptTokens + c.completionTokens
	resp.Usage.PromptTokensDetails.CachedTokens = c.cachedTokens
	for _, pe := range c.parseErrors {
		resp.Agentrt.ParseErrors = append(resp.Agentrt.ParseErrors, parseErrView{Reason: pe.Reason, Raw: pe.Raw})
	}
	return resp
}
