package emulator

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Chat formats the emulator decodes from input ids.
const (
	chatML       = "chatml"   // Qwen: <|im_start|>role\n...<|im_end|>
	chatLlama    = "llama3"   // Llama 3: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
	chatDeepSeek = "deepseek" // DeepSeek V3/R1/V3.1: <｜User｜>...<｜Assistant｜>...<｜end▁of▁sentence｜>, tool outputs
	chatHarmony  = "harmony"  // gpt-oss: <|start|>role<|channel|>...<|message|>...<|end|> (<|call|>, <|return|>)
	chatMistral  = "mistral"  // Mistral: [AVAILABLE_TOOLS]...[/AVAILABLE_TOOLS][INST]...[/INST]...</s>[TOOL_RESULTS]...[/TOOL_RESULTS]
	chatKimi     = "kimi"     // Kimi K2: <|im_system|>tool_declare<|im_middle|>[tools]<|im_end|>, <|im_user|>user<|im_middle|>...<|im_end|>
	chatMiniMax  = "minimax"  // MiniMax-M2: ]~!b[]~b]system\n...[e~[\n]~b]user\n...[e~[\n]~b]ai\n...
	chatSeed     = "seed"     // Seed-OSS: <seed:bos>role\n...<seed:eos>
	chatGLM      = "glm"      // GLM-4.5/4.6/4.7: [gMASK]<sop><|system|>\n...<|user|>\n...<|assistant|>\n...<|observation|>\n<tool_response>...
	chatNone     = "none"
)

type message struct {
	role    string
	content string
}

// conversation is what a prompt says, decoded from its ids.
type conversation struct {
	format   string
	messages []message // complete messages, in order
	open     *message  // the trailing unfinished message (the generation prompt), if any
	tools    []toolSpec
	taskIdx  int // index in messages of the user task (-1 if none)
}

type toolSpec struct {
	Name       string
	Params     []string // property names, schema order where it can be recovered
	ParamTypes map[string]string
	Required   []string
}

// parseConversation decodes a prompt (special tokens kept) in one of the chat layouts above. tools, if not nil, memoises the
// tool specs read from a message.
func parseConversation(text string, tools *lru[[]toolSpec]) *conversation {
	c := &conversation{format: chatNone, taskIdx: -1}
	switch {
	case strings.Contains(text, "<|im_start|>"):
		c.format = chatML
		parts := strings.Split(text, "<|im_start|>")
		for _, p := range parts[1:] {
			role, body, _ := strings.Cut(p, "\n")
			content, closed := body, false
			if i := strings.Index(body, "<|im_end|>"); i >= 0 {
				content, closed = body[:i], true
			}
			m := message{role: strings.TrimSpace(role), content: content}
			if closed {
				c.messages = append(c.messages, m)
			} else {
				c.open = &m
			}
		}
	case strings.Contains(text, "<|start_header_id|>"):
		c.format = chatLlama
		parts := strings.Split(text, "<|start_header_id|>")
		for _, p := range parts[1:] {
			role, body, _ := strings.Cut(p, "<|end_header_id|>")
			body = strings.TrimPrefix(body, "\n\n")
			end := -1
			for _, t := range []string{"<|eot_id|>", "<|eom_id|>"} {
				if i := strings.Index(body, t); i >= 0 && (end < 0 || i < end) {
					end = i
				}
			}
			m := message{role: strings.TrimSpace(role), content: body}
			if end >= 0 {
				m.content = body[:end]
				c.messages = append(c.messages, m)
			} else {
				c.open = &m
			}
		}
	case strings.Contains(text, "<|start|>") && strings.Contains(text, "<|message|>"):
		c.format = chatHarmony
		c.messages, c.open = splitHarmony(text)
	case strings.Contains(text, dsUser):
		c.format = chatDeepSeek
		c.messages, c.open = splitDeepSeek(text)
	case strings.Contains(text, mistralInst):
		c.format = chatMistral
		c.messages, c.open = splitMistral(text)
	case strings.Contains(text, kimiMiddle):
		c.format = chatKimi
		c.messages, c.open = splitKimi(text)
	case strings.Contains(text, minimaxMsg):
		c.format = chatMiniMax
		c.messages, c.open = splitMiniMax(text)
	case strings.Contains(text, seedBOS):
		c.format = chatSeed
		c.messages, c.open = splitSeed(text)
	case strings.Contains(text, glmPrefix):
		c.format = chatGLM
		c.messages, c.open = splitGLM(text)
	default:
		c.messages = []message{{role: "user", content: text}}
	}
	c.findTools(tools)
	for i, m := range c.messages {
		if m.role == "user" && !strings.Contains(m.content, "<tool_response>") {
			c.taskIdx = i
			break
		}
	}
	return c
}

// task is the user's first real message, without a Llama tool preamble.
func (c *conversation) task() string {
	if c.taskIdx < 0 {
		return ""
	}
	t := c.messages[c.taskIdx].content
	if c.format == chatLlama && strings.Contains(t, "Given the following functions") {
		// the template puts the tool JSON first, then "\n\n" + the user's text
		if end := lastJSONEnd(t); end > 0 {
			t = t[end:]
		}
	}
	return strings.TrimSpace(t)
}

// assistantTurns counts completed assistant messages after the task.
func (c *conversation) assistantTurns() int {
	n := 0
	for i := c.taskIdx + 1; i < len(c.messages) && c.taskIdx >= 0; i++ {
		if c.messages[i].role == "assistant" {
			n++
		}
	}
	return n
}

// toolResults returns tool outputs after the task, in order.
func (c *conversation) toolResults() []string {
	var out []string
	for i := c.taskIdx + 1; i < len(c.messages) && c.taskIdx >= 0; i++ {
		m := c.messages[i]
		switch {
		case m.role == "ipython" || m.role == "tool":
			s := strings.TrimSpace(m.content)
			var str string
			if json.Unmarshal([]byte(s), &str) == nil {
				s = str
			}
			out = append(out, s)
		case m.role == "user" && strings.Contains(m.content, "<tool_response>"):
			rest := m.content
			for {
				_, after, ok := strings.Cut(rest, "<tool_response>")
				if !ok {
					break
				}
				body, tail, _ := strings.Cut(after, "</tool_response>")
				out = append(out, strings.TrimSpace(body))
				rest = tail
			}
		}
	}
	return out
}

// findTools reads tool specs: Qwen's (and MiniMax-M2's) <tools>...</tools> block in the system message, the JSON
// objects of Llama 3's tool preamble, a tool list that is a message of its own (Mistral's [AVAILABLE_TOOLS],
// Kimi K2's tool_declare), or Seed-OSS's Python signatures.
func (c *conversation) findTools(memo *lru[[]toolSpec]) {
	for _, m := range c.messages {
		if m.role != "system" && m.role != "user" && m.role != "developer" && m.role != roleTools {
			continue
		}
		if memo != nil {
			if ts, ok := memo.get(m.content); ok {
				if len(ts) > 0 {
					c.tools = ts
					return
				}
				continue
			}
		}
		before := len(c.tools)
		if i := strings.LastIndex(m.content, "<tools>"); i >= 0 {
			// the last one: Qwen's prompt mentions "<tools></tools>" before the block
			block, _, _ := strings.Cut(m.content[i+len("<tools>"):], "</tools>")
			ts := scanTools(block)
			if len(ts) == 0 && strings.Contains(block, "<function>") {
				ts = scanXMLTools(block) // Qwen3-Coder: <function><name>...</name><parameters>...
			}
			if len(ts) == 0 {
				ts = scanLooseTools(block) // Hermes-3 writes its tool JSON by hand (raw newlines and quotes in it)
			}
			c.tools = append(c.tools, ts...)
		} else if m.role == roleTools {
			c.tools = append(c.tools, scanMistralTools(m.content)...)
		} else if c.format == chatSeed && m.role == "system" {
			c.tools = append(c.tools, scanSeedTools(m.content)...)
			if len(c.tools) == before {
				c.tools = append(c.tools, scanTools(m.content)...) // use_json_tooldef: a JSON list
			}
		} else if c.format == chatHarmony && m.role == "developer" {
			c.tools = append(c.tools, scanTypeScriptTools(m.content)...)
		} else if c.format == chatDeepSeek && m.role == "system" || c.format == chatLlama && (strings.Contains(m.content, "Given the following functions") || m.role == "system") {
			c.tools = append(c.tools, scanTools(m.content)...)
			if c.format == chatDeepSeek && len(c.tools) == before {
				c.tools = append(c.tools, scanHeadedTools(m.content)...)
			}
		}
		if memo != nil {
			memo.put(m.content, c.tools[before:])
		}
		if len(c.tools) > 0 {
			return
		}
	}
}

// scanTools decodes every JSON object in s that looks like a tool ({"type":"function","function":{...}} or
// {"name":..., "parameters":...}).
func scanTools(s string) []toolSpec {
	var out []toolSpec
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		if t, ok := toolFromJSON(raw); ok {
			out = append(out, t)
		}
		i += int(dec.InputOffset()) - 1
	}
	return out
}

func toolFromJSON(raw json.RawMessage) (toolSpec, bool) {
	var w struct {
		Function   json.RawMessage `json:"function"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return toolSpec{}, false
	}
	if w.Function != nil {
		return toolFromJSON(w.Function)
	}
	if w.Name == "" {
		return toolSpec{}, false
	}
	t := toolSpec{Name: w.Name, ParamTypes: map[string]string{}}
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(w.Parameters, &schema) == nil && schema.Properties != nil {
		t.Required = schema.Required
		// keep the schema's key order
		dec := json.NewDecoder(bytes.NewReader(schema.Properties))
		if tk, err := dec.Token(); err == nil && tk == json.Delim('{') {
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					break
				}
				var prop struct {
					Type any `json:"type"`
				}
				if dec.Decode(&prop) != nil {
					break
				}
				name, _ := k.(string)
				t.Params = append(t.Params, name)
				if s, ok := prop.Type.(string); ok {
					t.ParamTypes[name] = s
				}
			}
		}
	}
	return t, true
}

// lastJSONEnd is the offset just after the last top-level JSON object in s (0 if none).
func lastJSONEnd(s string) int {
	end := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		i += int(dec.InputOffset()) - 1
		end = i + 1
	}
	return end
}

// DeepSeek's markers (fullwidth bars, U+2581 for spaces), as its templates and SGLang's write them.
const (
	dsUser        = "<｜User｜>"
	dsAssistant   = "<｜Assistant｜>"
	dsEOS         = "<｜end▁of▁sentence｜>"
	dsOutputBegin = "<｜tool▁output▁begin｜>"
	dsOutputEnd   = "<｜tool▁output▁end｜>"
	dsOutputsEnd  = "<｜tool▁outputs▁end｜>"
)

// firstMarker returns where the earliest of markers occurs in s and which it is; -1 and "" if none does.
func firstMarker(s string, markers []string) (int, string) {
	at, mk := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at) {
			at, mk = i, m
		}
	}
	return at, mk
}

// tagged returns the text of each open...close block of s, in order (an unclosed last block runs to the end).
func tagged(s, open, close string) []string {
	var out []string
	for {
		_, after, ok := strings.Cut(s, open)
		if !ok {
			return out
		}
		var block string
		block, s, _ = strings.Cut(after, close)
		out = append(out, block)
	}
}

// splitDeepSeek splits a DeepSeek prompt into messages: the system text before the first user turn, user turns,
// assistant turns (ended by <｜end▁of▁sentence｜>) and tool outputs. After tool outputs the model answers without
// an <｜Assistant｜> marker, so text there (or the prompt's end) is an assistant turn too.
func splitDeepSeek(text string) (msgs []message, open *message) {
	text = strings.TrimPrefix(text, "<｜begin▁of▁sentence｜>")
	markers := []string{dsUser, dsAssistant, dsEOS, dsOutputBegin, dsOutputEnd, dsOutputsEnd}
	cur, implied := &message{role: "system"}, true
	flush := func() {
		if cur != nil && (!implied || strings.TrimSpace(cur.content) != "") {
			msgs = append(msgs, *cur)
		}
		cur, implied = nil, false
	}
	for text != "" {
		at, next := firstMarker(text, markers)
		if at < 0 {
			at = len(text)
		}
		if cur != nil {
			cur.content += text[:at]
		}
		if next == "" {
			break
		}
		text = text[at+len(next):]
		switch next {
		case dsUser:
			flush()
			cur = &message{role: "user"}
		case dsAssistant:
			flush()
			cur = &message{role: "assistant"}
		case dsEOS:
			flush()
		case dsOutputBegin:
			flush()
			cur = &message{role: "tool"}
		case dsOutputEnd, dsOutputsEnd:
			flush()
			// the answer after tool outputs has no marker of its own: a message only if it has text (or is open)
			cur, implied = &message{role: "assistant"}, true
		}
	}
	if cur != nil && cur.role == "assistant" {
		return msgs, cur // the generation prompt
	}
	flush()
	return msgs, nil
}

// scanLooseTools reads tools whose JSON is broken around a well-formed parameters schema: Hermes-3's template
// writes `{"name": "NAME", "description": "...", "parameters": SCHEMA}` by hand, with the description's newlines
// and quotes unescaped, and only the schema through tojson.
func scanLooseTools(s string) []toolSpec {
	const nameKey, paramsKey = `{"name": "`, `"parameters": `
	var out []toolSpec
	for rest := s; ; {
		i := strings.Index(rest, nameKey)
		if i < 0 {
			return out
		}
		rest = rest[i+len(nameKey):]
		name, after, ok := strings.Cut(rest, `"`)
		j := strings.Index(after, paramsKey)
		if !ok || j < 0 {
			return out
		}
		var schema json.RawMessage
		if json.NewDecoder(strings.NewReader(after[j+len(paramsKey):])).Decode(&schema) != nil {
			continue
		}
		nb, _ := json.Marshal(name)
		if t, ok := toolFromJSON(json.RawMessage(`{"name": ` + string(nb) + `, "parameters": ` + string(schema) + `}`)); ok {
			out = append(out, t)
		}
	}
}

// scanXMLTools reads Qwen3-Coder's tool list: "<function>\n<name>NAME</name>" with "<parameter>\n<name>P</name>
// \n<type>T</type>" entries and a JSON "<required>[...]</required>".
func scanXMLTools(s string) []toolSpec {
	tag := func(s, name string) string {
		_, rest, ok := strings.Cut(s, "<"+name+">")
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, "</"+name+">")
		return strings.TrimSpace(v)
	}
	var out []toolSpec
	for _, fn := range strings.Split(s, "<function>")[1:] {
		fn, _, _ = strings.Cut(fn, "</function>")
		head, params, _ := strings.Cut(fn, "<parameters>")
		t := toolSpec{Name: tag(head, "name"), ParamTypes: map[string]string{}}
		if t.Name == "" {
			continue
		}
		for _, p := range strings.Split(params, "<parameter>")[1:] {
			p, _, _ = strings.Cut(p, "</parameter>")
			if name := tag(p, "name"); name != "" {
				t.Params = append(t.Params, name)
				t.ParamTypes[name] = tag(p, "type")
			}
		}
		_ = json.Unmarshal([]byte(tag(params, "required")), &t.Required)
		out = append(out, t)
	}
	return out
}

// scanHeadedTools reads tools written as "### NAME" ... "Parameters: {schema}" (SGLang's DeepSeek V3.1 template).
func scanHeadedTools(s string) []toolSpec {
	var out []toolSpec
	for _, part := range strings.Split(s, "\n### ")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		_, params, ok := strings.Cut(rest, "Parameters: ")
		if !ok {
			continue
		}
		params, _, _ = strings.Cut(params, "\n")
		nb, _ := json.Marshal(strings.TrimSpace(name))
		out = append(out, scanTools(`{"name": `+string(nb)+`, "parameters": `+params+`}`)...)
	}
	return out
}

// splitHarmony splits a gpt-oss prompt into messages: each "<|start|>HEADER<|message|>BODY" ending in <|end|>,
// <|call|> or <|return|>. The header's first word is the role; a tool result's header names the function
// ("functions.f to=assistant"), so it is a "tool" message. A trailing "<|start|>assistant" with no body is the
// generation prompt.
func splitHarmony(text string) (msgs []message, open *message) {
	parts := strings.Split(text, "<|start|>")
	for k, p := range parts[1:] {
		header, body, hasBody := strings.Cut(p, "<|message|>")
		role, _, _ := strings.Cut(strings.TrimSpace(header), " ")
		role, _, _ = strings.Cut(role, "<|channel|>")
		if strings.HasPrefix(role, "functions.") {
			role = "tool"
		}
		end := -1
		for _, t := range []string{"<|end|>", "<|call|>", "<|return|>"} {
			if i := strings.Index(body, t); i >= 0 && (end < 0 || i < end) {
				end = i
			}
		}
		m := message{role: role, content: body}
		switch {
		case hasBody && end >= 0:
			m.content = body[:end]
			msgs = append(msgs, m)
		case k == len(parts)-2:
			open = &m
		}
	}
	return msgs, open
}

// scanTypeScriptTools reads the tools of gpt-oss's developer message ("type NAME = (_: {\n// ...\nPARAM?: TYPE,\n})
// => any;" in "namespace functions").
func scanTypeScriptTools(s string) []toolSpec {
	var out []toolSpec
	for _, part := range strings.Split(s, "\ntype ")[1:] {
		name, rest, ok := strings.Cut(part, " = (")
		if !ok {
			continue
		}
		sig, _, _ := strings.Cut(rest, ") => any;")
		ts := toolSpec{Name: strings.TrimSpace(name), ParamTypes: map[string]string{}}
		for _, line := range strings.Split(sig, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "//") || strings.HasPrefix(line, "_:") {
				continue
			}
			p, typ, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			opt := strings.HasSuffix(p, "?")
			p = strings.TrimSuffix(p, "?")
			typ = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(typ), ","))
			ts.Params = append(ts.Params, p)
			ts.ParamTypes[p] = typ
			if !opt {
				ts.Required = append(ts.Required, p)
			}
		}
		out = append(out, ts)
	}
	return out
}

// Mistral's control tokens, as Nemo's (tekken) and Small 3.2's (tekken v7) templates write them.
const (
	mistralInst       = "[INST]"
	mistralInstEnd    = "[/INST]"
	mistralTools      = "[AVAILABLE_TOOLS]"
	mistralToolsEnd   = "[/AVAILABLE_TOOLS]"
	mistralResults    = "[TOOL_RESULTS]"
	mistralResultsEnd = "[/TOOL_RESULTS]"
	mistralContent    = "[TOOL_CONTENT]"
	mistralSystem     = "[SYSTEM_PROMPT]"
	mistralSystemEnd  = "[/SYSTEM_PROMPT]"
	mistralEOS        = "</s>"
)

// roleTools is the role of a tool list that is a message of its own: Mistral's [AVAILABLE_TOOLS] block, Kimi K2's
// tool_declare system message.
const roleTools = "tools"

// splitMistral splits a Mistral prompt into messages: [SYSTEM_PROMPT] (Small 3.2), the [AVAILABLE_TOOLS] list
// (role "tools"), [INST] user turns (Nemo writes the system prompt into the last one: "SYSTEM\n\nTASK"), tool
// results, and the assistant turns, which have no marker of their own: the text after [/INST] or [/TOOL_RESULTS]
// up to </s>. An assistant turn left open at the prompt's end is the generation prompt.
//
// A tool result's content is taken out of its wrapping: Nemo's {"content": CONTENT, "call_id": "ID"} (CONTENT
// as the template writes it, unquoted) or Small 3.2's ID[TOOL_CONTENT]CONTENT.
func splitMistral(text string) (msgs []message, open *message) {
	text = strings.TrimPrefix(text, "<s>")
	markers := []string{mistralInst, mistralInstEnd, mistralTools, mistralToolsEnd, mistralResults, mistralResultsEnd,
		mistralSystem, mistralSystemEnd, mistralEOS}
	var cur *message
	implied := false // cur is an assistant turn no marker opened: a message only if it has text (or is open)
	flush := func() {
		if cur != nil && (!implied || strings.TrimSpace(cur.content) != "") {
			if cur.role == "tool" {
				cur.content = mistralResult(cur.content)
			}
			msgs = append(msgs, *cur)
		}
		cur, implied = nil, false
	}
	for text != "" {
		at, next := firstMarker(text, markers)
		if at < 0 {
			at = len(text)
		}
		if cur != nil {
			cur.content += text[:at]
		}
		if next == "" {
			break
		}
		text = text[at+len(next):]
		switch next {
		case mistralInst:
			flush()
			cur = &message{role: "user"}
		case mistralTools:
			flush()
			cur = &message{role: roleTools}
		case mistralSystem:
			flush()
			cur = &message{role: "system"}
		case mistralResults:
			flush()
			cur = &message{role: "tool"}
		case mistralInstEnd, mistralResultsEnd:
			flush()
			cur, implied = &message{role: "assistant"}, true
		case mistralToolsEnd, mistralSystemEnd, mistralEOS:
			flush()
		}
	}
	if cur != nil && cur.role == "assistant" {
		return msgs, cur // the generation prompt
	}
	flush()
	return msgs, nil
}

// scanMistralTools reads a Mistral [AVAILABLE_TOOLS] list (or Kimi K2's tool_declare list, tojson's). Nemo's template writes each tool as
// {"type": "function", "function": {...}} by hand, string values unescaped (a description with a quote or a
// newline is not JSON), the rest through tojson: an item that is not JSON is read as Hermes-3's are
// (scanLooseTools), on its own so that nothing pairs one tool's name with another's schema.
func scanMistralTools(s string) []toolSpec {
	const item = `{"type": "function", "function": `
	parts := strings.Split(s, item)
	if len(parts) == 1 {
		return scanTools(s)
	}
	var out []toolSpec
	for _, p := range parts[1:] {
		ts := scanTools(item + p)
		if len(ts) == 0 {
			ts = scanLooseTools(p)
		}
		out = append(out, ts...)
	}
	return out
}

// mistralResult is the content of a Mistral tool result: Nemo's {"content": CONTENT, "call_id": "ID"} or Small
// 3.2's ID[TOOL_CONTENT]CONTENT; anything else as it is.
func mistralResult(s string) string {
	if _, content, ok := strings.Cut(s, mistralContent); ok {
		return content
	}
	const head, tail = `{"content": `, `, "call_id": "`
	t := strings.TrimSpace(s)
	if i := strings.LastIndex(t, tail); strings.HasPrefix(t, head) && i >= len(head) && strings.HasSuffix(t, `"}`) {
		return t[len(head):i]
	}
	return s
}

// Kimi K2's markers.
const (
	kimiSystem    = "<|im_system|>"
	kimiUser      = "<|im_user|>"
	kimiAssistant = "<|im_assistant|>"
	kimiMiddle    = "<|im_middle|>"
	kimiEnd       = "<|im_end|>"
	// kimiToolDeclare is the role of the system message that lists the tools (as JSON).
	kimiToolDeclare = "tool_declare"
)

// splitKimi splits a Kimi K2 prompt into messages: each opens with <|im_system|>, <|im_user|> or
// <|im_assistant|>, names its role before <|im_middle|> and ends with <|im_end|>. The tool list is the system
// message of role tool_declare (role "tools" here); a tool result is a system message of role "tool" whose
// content, after the template's "## Return of ID\n" header, is the result. A trailing message with no
// <|im_end|> is the generation prompt.
func splitKimi(text string) (msgs []message, open *message) {
	markers := []string{kimiSystem, kimiUser, kimiAssistant}
	for {
		at, mk := firstMarker(text, markers)
		if at < 0 {
			return msgs, open
		}
		text = text[at+len(mk):]
		part := text
		if j, _ := firstMarker(text, markers); j >= 0 {
			part, text = text[:j], text[j:]
		} else {
			text = ""
		}
		role, body, _ := strings.Cut(part, kimiMiddle)
		m := message{role: strings.TrimSpace(role), content: body}
		if m.role == kimiToolDeclare {
			m.role = roleTools
		}
		end := strings.Index(body, kimiEnd)
		if end < 0 {
			if text == "" {
				open = &m
			}
			continue
		}
		m.content = body[:end]
		if m.role == "tool" {
			m.content = kimiResult(m.content)
		}
		msgs = append(msgs, m)
	}
}

// kimiResult is the content of a Kimi K2 tool result: what follows the template's "## Return of ID" header and
// its line break, which the template writes as the two characters `\n` (a newline is taken too).
func kimiResult(s string) string {
	rest, ok := strings.CutPrefix(s, "## Return of ")
	if !ok {
		return s
	}
	at, n := strings.Index(rest, `\n`), 2
	if i := strings.IndexByte(rest, '\n'); i >= 0 && (at < 0 || i < at) {
		at, n = i, 1
	}
	if at < 0 {
		return s
	}
	return rest[at+n:]
}

// MiniMax-M2's markers.
const (
	minimaxBOS = "]~!b["
	minimaxMsg = "]~b]"
	minimaxEnd = "[e~["
)

// splitMiniMax splits a MiniMax-M2 prompt into messages: "]~b]ROLE\n...[e~[" (role "ai" is the assistant). The
// template writes consecutive tool results into one "tool" message, each in <response>...</response>: each is a
// message of its own here. A trailing message with no [e~[ is the generation prompt.
func splitMiniMax(text string) (msgs []message, open *message) {
	parts := strings.Split(text, minimaxMsg)
	for k, p := range parts[1:] {
		role, body, _ := strings.Cut(p, "\n")
		m := message{role: strings.TrimSpace(role), content: body}
		if m.role == "ai" {
			m.role = "assistant"
		}
		end := strings.Index(body, minimaxEnd)
		if end < 0 {
			if k == len(parts)-2 {
				open = &m
			}
			continue
		}
		m.content = body[:end]
		if m.role != "tool" || !strings.Contains(m.content, "<response>") {
			msgs = append(msgs, m)
			continue
		}
		for _, result := range tagged(m.content, "<response>", "</response>") {
			msgs = append(msgs, message{role: "tool", content: result})
		}
	}
	return msgs, open
}

// Seed-OSS's markers.
const (
	seedBOS = "<seed:bos>"
	seedEOS = "<seed:eos>"
)

// splitSeed splits a Seed-OSS prompt into messages: "<seed:bos>ROLE\n...<seed:eos>". A trailing message with no
// <seed:eos> is the generation prompt.
func splitSeed(text string) (msgs []message, open *message) {
	parts := strings.Split(text, seedBOS)
	for k, p := range parts[1:] {
		end := strings.Index(p, seedEOS)
		whole := p
		if end >= 0 {
			whole = p[:end]
		}
		role, body, _ := strings.Cut(whole, "\n")
		m := message{role: strings.TrimSpace(role), content: body}
		switch {
		case end >= 0:
			msgs = append(msgs, m)
		case k == len(parts)-2:
			open = &m
		}
	}
	return msgs, open
}

// scanSeedTools reads the tools of Seed-OSS's system message, which its template writes as Python signatures
// with a docstring: "Function:\ndef NAME(P: T,Q: T):" and, under "Args:", "- P (T) [必填]: ..." for each
// required parameter ([选填]: optional). The Python types map back to JSON Schema's (int stands for both number
// and integer: "integer" here).
func scanSeedTools(s string) []toolSpec {
	types := map[string]string{"str": "string", "int": "integer", "bool": "boolean", "list": "array"}
	var out []toolSpec
	for _, part := range strings.Split(s, "Function:\ndef ")[1:] {
		sig, doc, _ := strings.Cut(part, "\n")
		name, params, ok := strings.Cut(sig, "(")
		params, _, closed := strings.Cut(params, "):")
		if !ok || !closed || strings.TrimSpace(name) == "" {
			continue
		}
		t := toolSpec{Name: strings.TrimSpace(name), ParamTypes: map[string]string{}}
		for _, p := range strings.Split(params, ",") {
			p, typ, _ := strings.Cut(p, ":")
			if p = strings.TrimSpace(p); p != "" {
				t.Params = append(t.Params, p)
				t.ParamTypes[p] = types[strings.TrimSpace(typ)]
			}
		}
		doc, _, _ = strings.Cut(doc, "Function:\n")
		for _, line := range strings.Split(doc, "\n") {
			line = strings.TrimSpace(line)
			if p, ok := strings.CutPrefix(line, "- "); ok && strings.Contains(line, "[必填]") {
				p, _, _ = strings.Cut(p, " (")
				t.Required = append(t.Required, p)
			}
		}
		out = append(out, t)
	}
	return out
}

// GLM's markers (GLM-4.5, 4.6 and 4.7 alike).
const (
	glmPrefix      = "[gMASK]<sop>"
	glmSystem      = "<|system|>"
	glmUser        = "<|user|>"
	glmAssistant   = "<|assistant|>"
	glmObservation = "<|observation|>"
	glmNoThink     = "/nothink"
)

// splitGLM splits a GLM prompt into messages. A message opens with its role token (<|system|>, <|user|>,
// <|assistant|>, <|observation|> for tool results) and runs to the next one: GLM writes no end-of-turn token (the
// model stops on the token that begins the next message). GLM-4.5/4.6 write a newline after the role token, 4.7
// none: one leading newline is dropped. The /nothink GLM-4.5/4.6 append to a user message for enable_thinking =
// false is dropped too. An observation holds one <tool_response>...</tool_response> per result: each is a tool
// message of its own. A trailing assistant message is the generation prompt.
func splitGLM(text string) (msgs []message, open *message) {
	roles := map[string]string{glmSystem: "system", glmUser: "user", glmAssistant: "assistant", glmObservation: "tool"}
	markers := []string{glmSystem, glmUser, glmAssistant, glmObservation}
	for {
		at, mk := firstMarker(text, markers)
		if at < 0 {
			return msgs, open
		}
		text = text[at+len(mk):]
		body := text
		j, _ := firstMarker(text, markers)
		if j >= 0 {
			body, text = text[:j], text[j:]
		} else {
			text = ""
		}
		m := message{role: roles[mk], content: strings.TrimPrefix(body, "\n")}
		switch {
		case m.role == "assistant" && j < 0:
			open = &m
		case m.role == "user":
			m.content = strings.TrimSuffix(m.content, glmNoThink)
			msgs = append(msgs, m)
		case m.role == "tool" && strings.Contains(m.content, "<tool_response>"):
			for _, result := range tagged(m.content, "<tool_response>", "</tool_response>") {
				msgs = append(msgs, message{role: "tool", content: strings.TrimSuffix(strings.TrimPrefix(result, "\n"), "\n")})
			}
		default:
			msgs = append(msgs, m)
		}
	}
}
