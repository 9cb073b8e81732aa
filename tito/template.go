package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// ChatTemplate is a parsed Hugging Face chat template. It renders conversations exactly as transformers'
// apply_chat_template(..., tokenize=False) does, and renders the messages appended after an assistant turn as a
// delta (RenderDelta) so that history is never re-tokenized.
//
// A ChatTemplate is safe for concurrent use. It keeps a bounded cache of encoded tools and kwargs, keyed by their
// exact value, so repeated renders with the same options skip the encoding.
//
// # Notes
//
// The engine is minijinja (Rust, by Jinja's author) behind a small C ABI of ours (tito/jinja), set up as
// transformers sets up Jinja: trim_blocks and lstrip_blocks, loop controls, its tojson (json.dumps with
// ensure_ascii=False and the indent, separators and sort_keys arguments), raise_exception, strftime_now, Python's
// printing of None, booleans, lists and dicts, and Python's str/list/dict methods. Messages are passed as
// transformers passes them: None-valued keys dropped, reasoning aliased to "thinking" and "reasoning_content".
// Known differences from Python's Jinja: "~" prints none/true/false in lower case (printing with {{ }} and the
// string filter follow Python); engine errors other than raise_exception have minijinja's wording.
type ChatTemplate struct {
	source  string
	name    string // the model folder, for errors
	engine  *jinjaTemplate
	special map[string]string
	stops   []string // tokens a model turn may end with (eos_token and WithEndOfTurn's)
	now     func() time.Time

	// endMarks are stop tokens the template writes at the end of an assistant turn; startMarks are stop tokens
	// that begin the next message (GLM's <|user|>/<|observation|>): the model generates them, and the template
	// writes them again as the start of the next message.
	endMarks, startMarks []string
	// rewrittenEnds are what the template writes in place of the model's stop token at the end of an earlier
	// turn (gpt-oss: <|end|> where the model generated <|return|>); they end the history too.
	rewrittenEnds []string
	separator     string
	sepErr        error

	// probeOnly makes RenderDelta find the history's end by the probe render even where the engine saw where the
	// new content starts (tests compare the two ways).
	probeOnly bool

	mu    sync.Mutex
	cache map[string]*prepared // by optionsKey
}

// SpecialTokens are the named special tokens that transformers passes to every template render (its
// special_tokens_map): "bos_token", "eos_token", "unk_token", "pad_token", ... Empty values are left out, as
// transformers leaves out unset tokens.
type SpecialTokens map[string]string

// RenderOptions are the inputs of one render besides the messages.
type RenderOptions struct {
	// Tools are the tool specs (JSON objects, usually {"type": "function", "function": {...}}), in order. Nil
	// renders with tools = None.
	Tools []json.RawMessage
	// AddGenerationPrompt appends the template's assistant header.
	AddGenerationPrompt bool
	// Kwargs are extra template variables (enable_thinking, tools_in_user_message, date_string, ...). Values may
	// be nil, bool, string, int, float64, []any, map[string]any (keys sorted) or json.RawMessage (key order kept).
	// They override the special tokens of the same name. The names messages, tools, documents and
	// add_generation_prompt are reserved.
	Kwargs map[string]any
	// Messages, if set, is the conversation's MessageCache: the messages' JSON for the engine, kept from one
	// render to the next, so that a render writes only the messages the last one did not have. The text is the
	// same with it or without.
	Messages *MessageCache
	// Window, if enabled, makes RenderDelta render new messages that are all tool results after only the history's
	// messages that the window keeps (FindDeltaWindow finds a template's exact window). A new user message is
	// rendered after the whole history: it can change which earlier turn a template takes for the last query
	// (Qwen3's last_query_index), and so how it writes the history, which only the whole render shows
	// (ErrHistoryDependsOnNew). Other renders ignore it.
	Window DeltaWindow
}

// TemplateOption configures NewChatTemplate.
type TemplateOption func(*ChatTemplate)

// WithEndOfTurn adds tokens that end a model turn besides the "eos_token" special token (Llama's <|eom_id|>,
// GLM's <|user|> and <|observation|>). RenderDelta cuts the conversation after the history's last one, or before
// it when the template writes it as the start of the next message (see StartsNextMessage).
func WithEndOfTurn(tokens ...string) TemplateOption {
	return func(t *ChatTemplate) {
		for _, s := range tokens {
			if s != "" && !slices.Contains(t.stops, s) {
				t.stops = append(t.stops, s)
			}
		}
	}
}

// WithRewrittenEnd names tokens the template writes at the end of an earlier assistant turn in place of the
// stop token the model generated (gpt-oss writes a final answer's <|return|> as <|end|> once messages follow, and
// drops that turn's analysis). The history keeps the model's own tokens; RenderDelta returns exactly what the
// template writes for the new messages, after the rewritten turn, as it does for templates that drop earlier
// reasoning (Qwen3).
func WithRewrittenEnd(tokens ...string) TemplateOption {
	return func(t *ChatTemplate) {
		for _, s := range tokens {
			if s != "" && !slices.Contains(t.rewrittenEnds, s) {
				t.rewrittenEnds = append(t.rewrittenEnds, s)
			}
		}
	}
}

// WithClock sets the clock behind the templates' strftime_now global (default time.Now).
func WithClock(now func() time.Time) TemplateOption {
	return func(t *ChatTemplate) { t.now = now }
}

// WithName names the template in errors (the model folder it came from).
func WithName(name string) TemplateOption {
	return func(t *ChatTemplate) { t.name = name }
}

// TemplateError is a chat template that could not be parsed or that failed while rendering.
type TemplateError struct {
	// Name is the template's name (the model folder), when known.
	Name string
	// Raised reports that the template called raise_exception; Message is then its argument, verbatim.
	Raised bool
	// Line is the template line where it failed (0 when unknown).
	Line int
	// Message says what went wrong.
	Message string
}

// Error implements error.
func (e *TemplateError) Error() string {
	var b strings.Builder
	b.WriteString("tito: chat template")
	if e.Name != "" {
		b.WriteString(" of " + e.Name)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Raised {
		b.WriteString(": raised an exception: ")
	} else {
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// isReserved reports the render variables that Kwargs may not set.
func isReserved(name string) bool {
	switch name {
	case "messages", "tools", "documents", "add_generation_prompt":
		return true
	}
	return false
}

// ChatTemplate parses the model's default chat template with the model's special tokens; errors name the model
// folder.
//
// # Errors
//
// The model has no chat template, or see NewChatTemplate.
func (m *Model) ChatTemplate(opts ...TemplateOption) (*ChatTemplate, error) {
	if m.TemplateSource == "" {
		return nil, fmt.Errorf("tito: model %s has no chat template (neither %s nor chat_template in %s)", m.Dir, FileChatTemplate, FileTokenizerConfig)
	}
	var stops []string // the model's stop tokens (generation_config's eos_token_id: GLM's <|user|>, <|observation|>)
	for _, id := range m.StopIDs {
		if m.Tokenizer != nil {
			stops = append(stops, m.Tokenizer.Decode([]int32{id}, false))
		}
	}
	return NewChatTemplate(m.TemplateSource, m.SpecialTokens(), append([]TemplateOption{WithName(m.Dir), WithEndOfTurn(stops...)}, opts...)...)
}

// SpecialTokens returns the special tokens that transformers passes to the model's chat template.
func (m *Model) SpecialTokens() SpecialTokens {
	st := SpecialTokens{}
	for k, v := range map[string]string{"bos_token": m.BOSToken, "eos_token": m.EOSToken, "pad_token": m.PadToken, "unk_token": m.UnkToken} {
		if v != "" {
			st[k] = v
		}
	}
	return st
}

// NewChatTemplate parses a Jinja chat template in transformers' environment and finds how its assistant turns
// end (for RenderDelta).
//
// # Errors
//
// A *TemplateError with the line of a syntax error.
//
// # Notes
//
// A template whose turn ends cannot be found still renders; only RenderDelta then fails, saying why.
func NewChatTemplate(source string, special SpecialTokens, opts ...TemplateOption) (*ChatTemplate, error) {
	t := &ChatTemplate{source: source, special: map[string]string{}, now: time.Now, cache: map[string]*prepared{}}
	for k, v := range special {
		if v != "" {
			t.special[k] = v
		}
	}
	if eos := t.special["eos_token"]; eos != "" {
		t.stops = append(t.stops, eos)
	}
	for _, o := range opts {
		o(t)
	}
	engine, err := compileJinja(source)
	if err != nil {
		err.Name = t.name
		return nil, err
	}
	t.engine = engine
	t.detect()
	return t, nil
}

// Source returns the template's Jinja source.
func (t *ChatTemplate) Source() string { return t.source }

// Separator returns what the template writes after an assistant's end-of-turn token before the next message
// ("\n" for Qwen's ChatML, "" for Llama 3 and for templates whose next message starts with the stop token).
func (t *ChatTemplate) Separator() string { return t.separator }

// StartsNextMessage reports whether the template writes the stop token stop as the start of the next message
// rather than after the assistant's turn (GLM-4.6/4.7: the model stops on <|observation|> or <|user|>). A delta
// after such a turn begins with that token's text: the model generated it already, so the caller appends the
// delta without it (strings.CutPrefix(delta, stop)).
func (t *ChatTemplate) StartsNextMessage(stop string) bool {
	return slices.Contains(t.startMarks, stop)
}

// Render renders a conversation as transformers' apply_chat_template(messages, tools=..., add_generation_prompt=...,
// tokenize=False, **kwargs) does, byte for byte.
//
// # Errors
//
// A *MessageError for an invalid message (unknown role, ...), an error naming a bad tool spec or kwarg, or a
// *TemplateError when the template fails or calls raise_exception (its message is kept verbatim).
func (t *ChatTemplate) Render(msgs []Message, o RenderOptions) (string, error) {
	if err := ValidateMessages(msgs); err != nil {
		return "", err
	}
	p, err := t.prepare(o)
	if err != nil {
		return "", err
	}
	return t.renderPrepared(msgs, p, o)
}

// prepared holds render options converted once: the variables besides messages and add_generation_prompt,
// parsed by the engine.
type prepared struct {
	vars *jinjaVars
}

// maxPrepared bounds the cache of prepared options (distinct tool sets and kwargs); past it, options are encoded
// on every render.
const maxPrepared = 256

// prepare returns the encoded options, from the cache when the same tools and kwargs were seen before.
func (t *ChatTemplate) prepare(o RenderOptions) (*prepared, error) {
	key := optionsKey(o)
	t.mu.Lock()
	p, ok := t.cache[key]
	t.mu.Unlock()
	if ok {
		return p, nil
	}
	vars := make(map[string][]byte, 2+len(t.special)+len(o.Kwargs))
	for k, v := range t.special {
		vars[k] = jsonw.AppendString(nil, v)
	}
	for k, v := range o.Kwargs {
		if isReserved(k) {
			return nil, fmt.Errorf("tito: render: kwarg %q is reserved (pass it through RenderOptions or the messages)", k)
		}
		var b bytes.Buffer
		if err := writeGoValue(&b, v); err != nil {
			return nil, fmt.Errorf("tito: render: kwarg %q: %w", k, err)
		}
		vars[k] = b.Bytes()
	}
	vars["documents"] = []byte("null")
	vars["tools"] = []byte("null")
	if o.Tools != nil {
		var b bytes.Buffer
		b.WriteByte('[')
		for i, raw := range o.Tools {
			trimmed := bytes.TrimSpace(raw)
			if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
				return nil, fmt.Errorf("tito: render: tool %d: want a JSON object, got %s", i, abbrevJSON(trimmed))
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(trimmed)
		}
		b.WriteByte(']')
		vars["tools"] = b.Bytes()
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	var obj bytes.Buffer
	obj.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			obj.WriteByte(',')
		}
		writeJSONString(&obj, k)
		obj.WriteByte(':')
		obj.Write(vars[k])
	}
	obj.WriteByte('}')
	jv, err := newJinjaVars(obj.Bytes())
	if err != nil {
		return nil, err
	}
	p = &prepared{vars: jv}
	t.mu.Lock()
	if q, ok := t.cache[key]; ok {
		p = q
	} else if len(t.cache) < maxPrepared {
		t.cache[key] = p
	}
	t.mu.Unlock()
	return p, nil
}

// optionsKey identifies tools and kwargs exactly: the kwargs as the engine gets them (writeGoValue: sorted keys,
// types kept, 1 and 1.0 render differently). fmt's %#v did the same at ~9 µs a render.
func optionsKey(o RenderOptions) string {
	var b bytes.Buffer
	for _, raw := range o.Tools {
		b.WriteString(strconv.Itoa(len(raw)))
		b.WriteByte(':')
		b.Write(raw)
	}
	if o.Tools == nil {
		b.WriteString("nil")
	}
	b.WriteByte('|')
	if len(o.Kwargs) > 0 && writeGoValue(&b, o.Kwargs) != nil {
		// prepare reports the error and caches nothing; the key only has to differ from valid ones'
		fmt.Fprintf(&b, "!%#v", o.Kwargs)
	}
	return b.String()
}

func (t *ChatTemplate) renderPrepared(msgs []Message, p *prepared, o RenderOptions) (string, error) {
	b, err := o.encode(msgs)
	if err != nil {
		return "", err
	}
	text, terr := t.engine.renderWith(p.vars, b, o.AddGenerationPrompt, t.now())
	if terr != nil {
		terr.Name = t.name
		return "", terr
	}
	return text, nil
}

// encodedMessages are messages as the engine reads them: a JSON array, and where each element ends in it (the
// engine keeps each message's value by its bytes, so that a conversation's history is parsed once).
type encodedMessages struct {
	json []byte
	ends []uint32
}

// encode writes the messages as the JSON array the engine reads, through o.Messages when it is set.
func (o *RenderOptions) encode(msgs []Message) (encodedMessages, error) {
	if o.Messages != nil {
		return o.Messages.encode(msgs)
	}
	return encodeMessages(msgs)
}

// encodeMessages writes the messages as the JSON array the engine reads.
func encodeMessages(msgs []Message) (encodedMessages, error) {
	b := bytes.NewBuffer(make([]byte, 0, 512*len(msgs)+2))
	ends := make([]uint32, len(msgs))
	b.WriteByte('[')
	for i := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeTemplateMessage(b, &msgs[i]); err != nil {
			return encodedMessages{}, &MessageError{Index: i, Detail: err.Error()}
		}
		if b.Len() > math.MaxUint32 {
			return encodedMessages{}, &MessageError{Index: i, Detail: "the conversation is over 4 GiB"}
		}
		ends[i] = uint32(b.Len())
	}
	b.WriteByte(']')
	return encodedMessages{json: b.Bytes(), ends: ends}, nil
}

// writeTemplateMessage writes a message as transformers hands it to the template: None-valued keys dropped, and
// when the message has reasoning (reasoning_content, thinking or reasoning), "thinking" first and
// "reasoning_content" set to it.
func writeTemplateMessage(b *bytes.Buffer, m *Message) error {
	if built(m) {
		return writeBuiltMessage(b, m)
	}
	return writeMessageFields(b, m)
}

// writeMessageFields is writeTemplateMessage for any message, by its fields in their order.
func writeMessageFields(b *bytes.Buffer, m *Message) error {
	fs := m.fields()
	kept := fs[:0:0]
	for _, f := range fs {
		if f.str == nil && !f.isSeq && f.sub == nil && string(bytes.TrimSpace(f.raw)) == "null" {
			continue
		}
		kept = append(kept, f)
	}
	var reasoning *kv
	for _, name := range []string{"reasoning_content", "thinking", "reasoning"} {
		if i := slices.IndexFunc(kept, func(f kv) bool { return f.key == name }); i >= 0 {
			r := kept[i]
			reasoning = &r
			break
		}
	}
	if reasoning != nil {
		if !slices.ContainsFunc(kept, func(f kv) bool { return f.key == "thinking" }) {
			th := *reasoning
			th.key = "thinking"
			kept = append([]kv{th}, kept...)
		}
		rc := *reasoning
		rc.key = "reasoning_content"
		if i := slices.IndexFunc(kept, func(f kv) bool { return f.key == "reasoning_content" }); i >= 0 {
			kept[i] = rc
		} else {
			kept = append(kept, rc)
		}
	}
	return writeTemplateFields(b, kept)
}

// built reports whether m was made by a program rather than decoded: no key order of its own and no extra keys,
// in it or its tool calls. Such messages (the agent loop's, encoded again on every delta) have their keys in the
// canonical order, which writeBuiltMessage writes without building the fields first.
func built(m *Message) bool {
	if m.keys != nil || m.Extra != nil {
		return false
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		if tc.keys != nil || tc.Extra != nil || tc.Function.keys != nil || tc.Function.Extra != nil {
			return false
		}
	}
	return true
}

// writeBuiltMessage is writeMessageFields for a built message (TestWriteBuiltMessage holds them equal): the
// canonical keys that are set, reasoning also as "thinking", first.
func writeBuiltMessage(b *bytes.Buffer, m *Message) error {
	b.WriteByte('{')
	if m.ReasoningContent != "" {
		b.WriteString(`"thinking":`)
		writeJSONString(b, m.ReasoningContent)
		b.WriteByte(',')
	}
	b.WriteString(`"role":`)
	writeJSONString(b, m.Role)
	b.WriteString(`,"content":`)
	if m.Parts != nil {
		parts := partsJSON(m.Parts)
		if !json.Valid(parts) {
			return fmt.Errorf("content: invalid JSON %s", abbrevJSON(parts))
		}
		b.Write(parts)
	} else {
		writeJSONString(b, m.Content)
	}
	if m.ReasoningContent != "" {
		b.WriteString(`,"reasoning_content":`)
		writeJSONString(b, m.ReasoningContent)
	}
	if m.ToolCalls != nil {
		b.WriteString(`,"tool_calls":[`)
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			if tc.ID != "" {
				b.WriteString(`"id":`)
				writeJSONString(b, tc.ID)
				b.WriteByte(',')
			}
			if tc.Type != "" {
				b.WriteString(`"type":`)
				writeJSONString(b, tc.Type)
				b.WriteByte(',')
			}
			b.WriteString(`"function":{"name":`)
			writeJSONString(b, tc.Function.Name)
			if args := tc.Function.Arguments; len(args) > 0 {
				if !json.Valid(args) {
					return fmt.Errorf("arguments: invalid JSON %s", abbrevJSON(args))
				}
				b.WriteString(`,"arguments":`)
				b.Write(args)
			}
			b.WriteString("}}")
		}
		b.WriteByte(']')
	}
	if m.ToolCallID != "" {
		b.WriteString(`,"tool_call_id":`)
		writeJSONString(b, m.ToolCallID)
	}
	if m.Name != "" {
		b.WriteString(`,"name":`)
		writeJSONString(b, m.Name)
	}
	b.WriteByte('}')
	return nil
}

// writeTemplateFields writes fields as a JSON object for the engine (strings with only the escapes JSON needs).
func writeTemplateFields(b *bytes.Buffer, fs []kv) error {
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, f.key)
		b.WriteByte(':')
		switch {
		case f.str != nil:
			writeJSONString(b, *f.str)
		case f.isSeq:
			b.WriteByte('[')
			for j, o := range f.seq {
				if j > 0 {
					b.WriteByte(',')
				}
				if err := writeTemplateFields(b, o); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		case f.sub != nil:
			if err := writeTemplateFields(b, f.sub); err != nil {
				return err
			}
		default:
			if !json.Valid(f.raw) {
				return fmt.Errorf("%s: invalid JSON %s", f.key, abbrevJSON(f.raw))
			}
			b.Write(f.raw)
		}
	}
	b.WriteByte('}')
	return nil
}

// writeJSONString writes s as a JSON string (internal/jsonw's policy: invalid UTF-8 becomes U+FFFD, as
// replaceInvalidUTF8 writes it).
func writeJSONString(b *bytes.Buffer, s string) {
	b.Grow(len(s) + 2) // room for s unescaped (the buffer grows by doubling, so escapes seldom need more)
	b.Write(jsonw.AppendString(b.AvailableBuffer(), s))
}

// replaceInvalidUTF8 replaces each byte that is not part of valid UTF-8 by U+FFFD, as writeJSONString does for
// the messages, so text located in a render is written the same way there.
func replaceInvalidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// writeGoValue encodes a kwarg value as JSON, keeping floats floats (1.0 stays 1.0, as Python prints it).
func writeGoValue(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeJSONString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%v cannot be passed to a template", x)
		}
		f := jsonw.AppendFloat(b.AvailableBuffer(), x)
		if !bytes.ContainsAny(f, ".e") {
			f = append(f, ".0"...)
		}
		b.Write(f)
	case json.RawMessage:
		if !json.Valid(x) {
			return fmt.Errorf("invalid JSON %s", abbrevJSON(x))
		}
		return json.Compact(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeGoValue(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			if err := writeGoValue(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unsupported type %T", v)
	}
	return nil
}

// deltaMark is appended to the new messages' content in RenderDelta's second render: where the two renders part
// is inside the first new message, after everything the template writes for the history.
const deltaMark = "\u2063agentrt-delta-probe"

// ErrHistoryDependsOnNew: the template writes the history differently depending on what the new messages say
// (Qwen3 treats a user message wrapped in <tool_response> tags as a tool result when it decides which turns keep
// their reasoning), so no delta appended to the history's tokens can equal the full render.
var ErrHistoryDependsOnNew = errors.New("tito: render delta: the template renders the history differently depending on the new message's content")

// RenderDelta renders the messages appended after history (which ends with the model's turn) as the text to
// append to the token stream: transformers' render of history + newMsgs, cut after the history's end-of-turn
// token (or before the stop token that begins the next message, see StartsNextMessage). History is never
// re-tokenized, and a template that renders earlier turns differently once more messages follow (Qwen3 drops old
// reasoning) still gets exactly the text it writes for the new messages (docs/design.md invariant 4).
//
// The cut is the last stop token before the first new message's content. The engine sees where the template
// writes that content (the very string it was given, as is or through tojson, straight into the output), so one
// render finds it. Where the template transforms the content first (gpt-oss, Mistral, DeepSeek wrap it in
// concatenations), the conversation is rendered a second time with a marker after that content (and any stop
// token's text in it broken up): the history ends at the last stop token before the marker, and both renders
// must agree up to there.
//
// # Errors
//
// The template's turn ends could not be found (sepErr), no new message has text content, the history's end cannot
// be found before the new messages, or any error of Render.
func (t *ChatTemplate) RenderDelta(history, newMsgs []Message, o RenderOptions) (string, error) {
	if t.sepErr != nil {
		return "", t.sepErr
	}
	if len(history) == 0 || len(newMsgs) == 0 {
		return "", errors.New("tito: render delta: needs the history and at least one new message")
	}
	if err := ValidateMessages(newMsgs); err != nil {
		return "", err
	}
	p, err := t.prepare(o)
	if err != nil {
		return "", err
	}
	first := &newMsgs[0]
	if first.Parts != nil || !slices.ContainsFunc(first.fields(), func(f kv) bool { return f.key == "content" && f.str != nil }) {
		return "", errors.New("tito: render delta: the first new message needs text content (the history's end is found by it)")
	}
	if o.Window.Enabled() && toolResults(newMsgs) {
		history, _ = o.Window.apply(history)
	}
	all := slices.Concat(history, newMsgs)
	msgs, err := o.encode(all)
	if err != nil {
		return "", err
	}
	full, at, probe, free, terr := t.engine.renderDelta(p.vars, msgs, len(history), t.defuse(replaceInvalidUTF8(first.Content))+deltaMark, t.probeOnly, o.AddGenerationPrompt, t.now())
	if terr != nil {
		terr.Name = t.name
		return "", terr
	}
	// full and probe are the engine's memory until free: only copies leave (the delta, and errors' text, which
	// fmt copies)
	defer free()
	located := full // the render the history's end is found in
	if at < 0 || t.probeOnly {
		located, at = probe, strings.Index(probe, deltaMark)
		if at < 0 {
			if probe != full {
				return "", errors.New("tito: render delta: the template does not write the first new message's content, so the history's end cannot be found")
			}
			at = len(full) // the template drops the new messages (Phi-4 drops tool messages): only its own text follows
		}
	}
	cut := t.historyEnd(located[:at])
	if cut < 0 {
		return "", fmt.Errorf("tito: render delta: no end-of-turn token %q before the new messages in %q", t.stops, tmplTail(located[:at]))
	}
	if len(full) < cut || full[:cut] != located[:cut] { // the probe's history must be the real one's
		return "", fmt.Errorf("%w (near %q)", ErrHistoryDependsOnNew, tmplTail(located[:cut]))
	}
	if err := t.checkLastTurn(located[:cut], &history[len(history)-1]); err != nil {
		return "", err
	}
	return strings.Clone(full[cut:]), nil
}

// defuse breaks up the stop tokens' text inside content (with an invisible separator after its first byte), so
// that the content cannot be taken for the end of the history.
func (t *ChatTemplate) defuse(content string) string {
	for _, s := range t.stops {
		if len(s) > 1 {
			content = strings.ReplaceAll(content, s, s[:1]+"\u2063"+s[1:])
		}
	}
	return content
}

// lastTurnTail is how many bytes of the history's last message checkLastTurn looks for when the template does not
// write the whole message.
const lastTurnTail = 32

// checkLastTurn checks that the cut follows the history's last message: its content is in the text before the
// cut, with no stop token between it and the cut but the one that ends the turn. A template that writes the last
// turn differently once messages follow (gpt-oss ends a final answer with <|end|>, where the model generated
// <|return|>) would otherwise be cut after an earlier turn, and the delta would repeat history.
func (t *ChatTemplate) checkLastTurn(text string, last *Message) error {
	c := strings.TrimSpace(last.Content)
	if c == "" || last.Parts != nil || len(last.ToolCalls) > 0 {
		return nil // nothing to find it by (templates drop the text of tool-calling turns); the golden tests cover these
	}
	i := strings.LastIndex(text, c)
	if i < 0 && len(c) > lastTurnTail {
		// Templates drop a turn's reasoning (MiniMax-M2 and GLM write what follows </think>): find it by its end.
		k := len(c) - lastTurnTail
		for k < len(c) && !utf8.RuneStart(c[k]) {
			k++
		}
		c = c[k:]
		i = strings.LastIndex(text, c)
	}
	if i < 0 {
		return fmt.Errorf("tito: render delta: the history's last message (%s) is not before the end of the history found in the render (%q): the template writes that turn differently once messages follow", last.Role, tmplTail(text))
	}
	between := text[i+len(c):]
	for _, m := range slices.Concat(t.endMarks, t.rewrittenEnds) {
		if strings.HasSuffix(between, m) {
			between = strings.TrimSuffix(between, m)
			break
		}
	}
	for _, m := range slices.Concat(t.endMarks, t.startMarks) {
		if strings.Contains(between, m) {
			return fmt.Errorf("tito: render delta: the history's last message (%s) ends before %q, where the render of the whole conversation continues it: the template writes that turn differently once messages follow", last.Role, m)
		}
	}
	return nil
}

// historyEnd returns where the history ends in text (a render up to inside the first new message): after the
// last end-of-turn mark, or at the last stop token that starts a message, whichever is later; -1 if neither.
func (t *ChatTemplate) historyEnd(text string) int {
	cut := -1
	for _, m := range slices.Concat(t.endMarks, t.rewrittenEnds) {
		if i := strings.LastIndex(text, m); i >= 0 && i+len(m) > cut {
			cut = i + len(m)
		}
	}
	for _, m := range t.startMarks {
		if i := strings.LastIndex(text, m); i > cut {
			cut = i
		}
	}
	return cut
}

func tmplTail(s string) string {
	if len(s) > 80 {
		return "..." + s[len(s)-80:]
	}
	return s
}

// The stand-in conversation that detect renders.
const (
	fakeUser      = "agentrt-fake-user"
	fakeAssistant = "agentrt-fake-assistant"
	fakeNext      = "agentrt-fake-next"
)

// detect sorts the stop tokens into those the template writes after an assistant turn and those it writes at the
// start of the next message (a user or a tool message), and finds the separator.
func (t *ChatTemplate) detect() {
	user := Message{Role: RoleUser, Content: fakeUser}
	asst := Message{Role: RoleAssistant, Content: fakeAssistant}
	o := RenderOptions{}
	text, err := t.Render([]Message{user, asst}, o)
	if err != nil {
		// some templates need tools (Hermes 3's tool-use template iterates them unconditionally)
		o.Tools = []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}}`)}
		text, err = t.Render([]Message{user, asst}, o)
	}
	if err != nil {
		t.sepErr = fmt.Errorf("tito: render delta: cannot find how the template ends an assistant turn: rendering a user and an assistant message failed: %w", err)
		return
	}
	i := strings.LastIndex(text, fakeAssistant)
	if i < 0 {
		t.sepErr = errors.New("tito: render delta: cannot find how the template ends an assistant turn: the template drops the assistant's content")
		return
	}
	ending := text[i+len(fakeAssistant):]
	var nexts []string // what follows the assistant's content when a user or a tool message follows
	for _, next := range []Message{{Role: RoleUser, Content: fakeNext}, {Role: RoleTool, Content: fakeNext}} {
		text, err := t.Render([]Message{user, asst, next}, o)
		if err != nil {
			continue // some templates refuse a tool message without a tool call
		}
		if i := strings.LastIndex(text, fakeAssistant); i >= 0 {
			nexts = append(nexts, text[i+len(fakeAssistant):])
		}
	}
	for _, s := range t.stops {
		starts := false
		for _, a := range nexts {
			starts = starts || strings.HasPrefix(a, s)
		}
		if starts && !strings.HasPrefix(ending, s) {
			t.startMarks = append(t.startMarks, s)
		} else {
			t.endMarks = append(t.endMarks, s)
		}
	}
	for _, s := range t.endMarks {
		if rest, ok := strings.CutPrefix(ending, s); ok {
			t.separator = rest
			return
		}
	}
	if len(t.startMarks) == 0 {
		t.sepErr = fmt.Errorf("tito: render delta: after the assistant's content the template writes %q, which starts with none of the end-of-turn tokens %q (add the model's stop tokens with WithEndOfTurn)", tmplTail(ending), t.stops)
	}
}
