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

// OpenAI's Responses API (POST /v1/responses) over the same sessions. Input items become chat
// messages (a run of reasoning, assistant message and function_call items is one assistant message);
// previous_response_id continues the session's own history, so the caller may send only the new items.

type respRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []respTool      `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             bool            `json:"stream"`
	PreviousResponseID string          `json:"previous_response_id"`
	Text               *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []respPart      `json:"summary"`
}

type respPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request, sessionID string) {
	req, msgs, tools, aerr := s.decodeResponses(w, r, sessionID)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	res, aerr := s.serveCall(r.Context(), sessionID, "openai.responses", req, msgs, tools)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if req.Stream {
		writeRespStream(w, res.response(s.m.Name, tools))
		return
	}
	writeJSON(w, http.StatusOK, res.response(s.m.Name, tools))
}

// writeRespStream sends a finished response as the Responses API's SSE events: response.created, each output
// item added, its text / reasoning / arguments as one delta and done, the item done, response.completed. Like the
// other streams, it is sent once the reply is generated.
func writeRespStream(w http.ResponseWriter, full map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	started := map[string]any{}
	for k, v := range full {
		started[k] = v
	}
	started["status"], started["output"], started["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": started})
	event("response.in_progress", map[string]any{"response": started})
	output, _ := full["output"].([]any)
	for i, o := range output {
		item := o.(map[string]any)
		id, _ := item["id"].(string)
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		switch item["type"] {
		case "message":
			added["content"], added["status"] = []any{}, "in_progress"
		case "reasoning":
			added["content"] = []any{}
		case "function_call":
			added["arguments"], added["status"] = "", "in_progress"
		}
		event("response.output_item.added", map[string]any{"output_index": i, "item": added})
		switch item["type"] {
		case "message":
			part := item["content"].([]any)[0].(map[string]any)
			text := part["text"]
			event("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			event("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": text, "logprobs": []any{}})
			event("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			event("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
		case "reasoning":
			text := item["content"].([]any)[0].(map[string]any)["text"]
			event("response.reasoning_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": text})
			event("response.reasoning_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
		case "function_call":
			event("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": item["arguments"]})
			event("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": item["arguments"], "name": item["name"]})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	final := "response.completed"
	if full["status"] == "incomplete" {
		final = "response.incomplete"
	}
	event(final, map[string]any{"response": full})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) decodeResponses(w http.ResponseWriter, r *http.Request, sessionID string) (*chatRequest, []tito.Message, []json.RawMessage, *apiError) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, nil, invalid("", "the request is not a valid Responses API JSON object: "+err.Error())
	}
	stream := req.Stream
	if req.Model != s.m.Name {
		return nil, nil, nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
			msg: fmt.Sprintf("the model %q does not exist: this server serves %q", req.Model, s.m.Name)}
	}
	if t := bytes.TrimSpace(req.ToolChoice); len(t) > 0 && string(t) != "null" && string(t) != `"auto"` {
		return nil, nil, nil, invalid("tool_choice", fmt.Sprintf("tool_choice %s is not supported: the model's reply is returned as generated (use \"auto\")", t))
	}
	var tools []json.RawMessage
	for i, t := range req.Tools {
		if t.Type != "function" || t.Name == "" {
			return nil, nil, nil, invalid(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("tools[%d]: only function tools with a name are supported", i))
		}
		b, err := turn.ToolSpec(t.Name, t.Description, t.Parameters)
		if err != nil {
			return nil, nil, nil, invalid(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("tools[%d]: %v", i, err))
		}
		tools = append(tools, b)
	}
	var items []respItem
	var text string
	if t := bytes.TrimSpace(req.Input); len(t) == 0 {
		return nil, nil, nil, invalid("input", "input is required")
	} else if json.Unmarshal(t, &text) == nil {
		items = []respItem{{Type: "message", Role: "user", Content: t}}
	} else if err := json.Unmarshal(t, &items); err != nil {
		return nil, nil, nil, invalid("input", "input must be a string or a list of input items")
	}
	var msgs []tito.Message
	if req.PreviousResponseID != "" {
		prev, aerr := s.historyOf(sessionID, req.PreviousResponseID)
		if aerr != nil {
			return nil, nil, nil, aerr
		}
		msgs = prev
	} else if req.Instructions != nil {
		msgs = append(msgs, tito.Message{Role: tito.RoleSystem, Content: *req.Instructions})
	}
	conv, err := itemsToChat(items)
	if err != nil {
		return nil, nil, nil, invalid("input", err.Error())
	}
	msgs = append(msgs, conv...)
	if len(msgs) == 0 {
		return nil, nil, nil, invalid("input", "input has no items")
	}
	chat := &chatRequest{Model: req.Model, MaxTokens: req.MaxOutputTokens, Temperature: req.Temperature, TopP: req.TopP, Stream: stream}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens <= 0 {
		return nil, nil, nil, invalid("max_output_tokens", "max_output_tokens must be > 0")
	}
	if req.Text != nil {
		var aerr *apiError
		if chat.constraint, aerr = constraintOf(req.Text.Format, "text.format"); aerr != nil {
			return nil, nil, nil, aerr
		}
		chat.constraintParam = "text.format"
	}
	return chat, msgs, tools, nil
}

// historyOf returns the session's conversation as the API showed it, when prev is its last response's id.
func (s *Server) historyOf(sessionID, prev string) ([]tito.Message, *apiError) {
	s.mu.Lock()
	ss := s.sessions[sessionID]
	s.mu.Unlock()
	if ss == nil {
		return nil, invalid("previous_response_id", fmt.Sprintf("previous_response_id %q: no open session %q (the session holds the conversation)", prev, sessionID))
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	b := ss.current()
	if b == nil || "resp_"+ss.lastRID != prev {
		return nil, invalid("previous_response_id", fmt.Sprintf("previous_response_id %q is not session %q's last response", prev, sessionID))
	}
	out := make([]tito.Message, len(b.hist))
	for i, h := range b.hist {
		out[i] = h.view
	}
	return out, nil
}

// itemsToChat turns input items into chat messages.
func itemsToChat(items []respItem) ([]tito.Message, error) {
	var out []tito.Message
	open := false // the last message is an assistant message that later assistant-side items extend
	assistant := func() *tito.Message {
		if !open {
			out = append(out, tito.Message{Role: tito.RoleAssistant})
			open = true
		}
		return &out[len(out)-1]
	}
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			text, err := partsText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("input[%d].content: %v", i, err)
			}
			switch it.Role {
			case "assistant":
				a := assistant()
				a.Content += text
			case "user", "system", "developer":
				role := it.Role
				if role == "developer" {
					role = tito.RoleSystem
				}
				out, open = append(out, tito.Message{Role: role, Content: text}), false
			default:
				return nil, fmt.Errorf("input[%d].role: %q (want user, system, developer or assistant)", i, it.Role)
			}
		case "reasoning":
			a := assistant()
			var b strings.Builder
			var parts []respPart
			json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			a.ReasoningContent += b.String()
		case "function_call":
			args := strings.TrimSpace(it.Arguments)
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) || args[0] != '{' {
				return nil, fmt.Errorf("input[%d].arguments is not a JSON object", i)
			}
			var c bytes.Buffer
			json.Compact(&c, []byte(args))
			a := assistant()
			a.ToolCalls = append(a.ToolCalls, tito.ToolCall{ID: it.CallID, Type: "function", Function: tito.FunctionCall{Name: it.Name, Arguments: c.Bytes()}})
		case "function_call_output":
			text, err := partsText(it.Output)
			if err != nil {
				return nil, fmt.Errorf("input[%d].output: %v", i, err)
			}
			if it.CallID == "" {
				return nil, fmt.Errorf("input[%d]: function_call_output without a call_id", i)
			}
			out, open = append(out, tito.Message{Role: tito.RoleTool, ToolCallID: it.CallID, Content: text}), false
		default:
			return nil, fmt.Errorf("input[%d]: %q items are not supported", i, typ)
		}
	}
	return out, tito.ValidateMessages(out)
}

// partsText reads a string or a list of text parts (input_text, output_text, text).
func partsText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" && p.Type != "text" {
			return "", fmt.Errorf("[%d]: %q parts are not supported (text only)", j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (c *callResult) response(model string, tools []json.RawMessage) map[string]any {
	var output []any
	if c.reasoning != "" {
		output = append(output, map[string]any{"type": "reasoning", "id": "rs_" + c.rid, "summary": []any{},
			"content": []any{map[string]any{"type": "reasoning_text", "text": c.reasoning}}})
	}
	if c.content != "" || len(c.calls) == 0 {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + c.rid, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": c.content, "annotations": []any{}}}})
	}
	for i, tc := range c.calls {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", c.rid, i), "call_id": tc.ID,
			"name": tc.Function.Name, "arguments": string(tc.Function.Arguments), "status": "completed"})
	}
	status, incomplete := "completed", any(nil)
	if c.finish == "length" {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	var toolList []any
	for _, t := range tools {
		var sp struct {
			Function map[string]any `json:"function"`
		}
		json.Unmarshal(t, &sp)
		ft := map[string]any{"type": "function"}
		for k, v := range sp.Function {
			ft[k] = v
		}
		toolList = append(toolList, ft)
	}
	if toolList == nil {
		toolList = []any{}
	}
	return map[string]any{"id": "resp_" + c.rid, "object": "response", "created_at": c.created, "status": status, "model": model,
		"output": output, "incomplete_details": incomplete, "error": nil, "instructions": nil, "metadata": map[string]any{},
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": toolList, "temperature": nil, "top_p": nil,
		"usage": map[string]any{"input_tokens": c.promptTokens, "output_tokens": c.completionTokens, "total_tokens": c.promptTokens + c.completionTokens,
			"input_tokens_details": map[string]any{"cached_tokens": c.cachedTokens}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
		"agentrt": agentrtInfo{Session: c.session, TrajectoryID: c.trajectoryID, Turn: c.turn, Drift: c.drift}}
}
