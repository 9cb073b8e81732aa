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
	Name        string
	Description string
	Params      []string // property names, schema order where it can be recovered
	ParamTypes  map[string]string
	Required    []string
	// Schemas holds what the agentic policy fills a parameter by beyond its type (JSON tool lists only).
	Schemas map[string]paramSchema
}

// paramSchema is the part of a parameter's JSON Schema the agentic policy reads to fill it.
type paramSchema struct {
	Description string
	Enum        []any
	Min, Max    *float64
	Items       string // the element type of an array
}

// parseConversation decodes a prompt (special tokens kept) in one of the chat layouts above. tools, if not nil, memoises the
// tool specs read from a message.
func parseConversation(text string, tools *lru[[]toolSpec]) *conversation {
	c := &conversation{format: chatNone, taskIdx: -1}
	if l := layoutOf(text); l != nil {
		c.format = l.format
		c.messages, c.open = l.split(text)
	} else {
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
		Function    json.RawMessage `json:"function"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
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
	t := toolSpec{Name: w.Name, Description: w.Description, ParamTypes: map[string]string{}, Schemas: map[string]paramSchema{}}
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
					Type             any      `json:"type"`
					Description      string   `json:"description"`
					Enum             []any    `json:"enum"`
					Minimum          *float64 `json:"minimum"`
					Maximum          *float64 `json:"maximum"`
					ExclusiveMinimum any      `json:"exclusiveMinimum"`
					ExclusiveMaximum any      `json:"exclusiveMaximum"`
					Items            struct {
						Type any `json:"type"`
					} `json:"items"`
				}
				if dec.Decode(&prop) != nil {
					break
				}
				name, _ := k.(string)
				t.Params = append(t.Params, name)
				if s, ok := prop.Type.(string); ok {
					t.ParamTypes[name] = s
				} else if ts, ok := prop.Type.([]any); ok { // ["integer", "null"]: the non-null type
					for _, x := range ts {
						if s, ok := x.(string); ok && s != "null" {
							t.ParamTypes[name] = s
							break
						}
					}
				}
				ps := paramSchema{Description: prop.Description, Enum: prop.Enum, Min: prop.Minimum, Max: prop.Maximum}
				// exclusive bounds (numbers, JSON Schema draft 6+): an integer just inside them
				if x, ok := prop.ExclusiveMinimum.(float64); ok {
					x++
					ps.Min = &x
				}
				if x, ok := prop.ExclusiveMaximum.(float64); ok {
					x--
					ps.Max = &x
				}
				ps.Items, _ = prop.Items.Type.(string)
				t.Schemas[name] = ps
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
	dsBOS         = "<｜begin▁of▁sentence｜>"
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
		t := toolSpec{Name: tag(head, "name"), Description: tag(head, "description"), ParamTypes: map[string]string{}}
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

// Seed-OSS's markers.
const (
	seedBOS = "<seed:bos>"
	seedEOS = "<seed:eos>"
)

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
