package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// ChatTemplate is a parsed Hugging Face chat template. It renders conversations exactly as transformers'
// apply_chat_template(..., tokenize=False) does, and renders the messages appended to a conversation as a delta
// (RenderDelta) so that history is never re-rendered.
//
// A ChatTemplate is safe for concurrent use. It keeps a bounded cache of converted tools and kwargs, keyed by
// their exact value, so repeated renders with the same options skip the conversion.
//
// # Notes
//
// The engine is gonja v2 with transformers' environment rebuilt around it (ordered dicts, Python json.dumps for
// tojson, items, reverse, read-only dict and list methods as in the immutable sandbox, raise_exception,
// strftime_now, Jinja's lstrip_blocks). It is byte-exact with transformers on the Qwen3, Qwen2.5 and Llama 3.1
// templates and the golden engine cases (testdata/template). Known differences that those templates do not hit:
//   - a conditional expression is parsed only at the top of {{ }} and {% set %}: "(a if c else b)" and
//     "f(a if c else b)" are syntax errors (Gemma 3's template fails to parse);
//   - undefined and None are one value: "x is defined" is false for a variable set to None, and None prints "";
//   - strings are indexed and iterated by byte ("s[0]", "for c in s"); slicing, length, first, last and reverse
//     work on characters;
//   - "+" of a string and a non-string concatenates text where Python raises; "**" yields a float; "//" and "%"
//     truncate toward zero.
type ChatTemplate struct {
	source    string
	tpl       *exec.Template
	env       *exec.Environment
	special   map[string]string
	endOfTurn string
	now       func() time.Time

	// separator is what the template writes after the assistant's end-of-turn token; sepErr says why it could
	// not be found (RenderDelta then fails with it).
	separator string
	sepErr    error
	// fakePrefixes are the stand-ins for history that RenderDelta tries, most preferred first.
	fakePrefixes [][]Message

	mu     sync.Mutex
	cache  map[string]*prepared // by optionsKey
	frozen frozenJSON           // tojson texts of cached tool specs
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
}

// TemplateOption configures NewChatTemplate.
type TemplateOption func(*ChatTemplate)

// WithEndOfTurn sets the token that ends an assistant turn, which separator detection looks for after an
// assistant message (default: the "eos_token" special token).
func WithEndOfTurn(token string) TemplateOption {
	return func(t *ChatTemplate) { t.endOfTurn = token }
}

// WithClock sets the clock behind the templates' strftime_now global (default time.Now).
func WithClock(now func() time.Time) TemplateOption {
	return func(t *ChatTemplate) { t.now = now }
}

// TemplateError is a chat template that could not be parsed or that failed while rendering.
type TemplateError struct {
	// Raised reports that the template called raise_exception; Message is then its argument, verbatim.
	Raised bool
	// Line is the template line of a syntax error (0 when unknown).
	Line int
	// Message says what went wrong.
	Message string
}

// Error implements error.
func (e *TemplateError) Error() string {
	switch {
	case e.Raised:
		return "tito: chat template raised an exception: " + e.Message
	case e.Line > 0:
		return fmt.Sprintf("tito: chat template: line %d: %s", e.Line, e.Message)
	}
	return "tito: chat template: " + e.Message
}

// isReserved reports the render variables that Kwargs may not set.
func isReserved(name string) bool {
	switch name {
	case "messages", "tools", "documents", "add_generation_prompt":
		return true
	}
	return false
}

// The stand-in conversation that separator detection and RenderDelta render.
const (
	fakeUser      = "agentrt-fake-user"
	fakeAssistant = "agentrt-fake-assistant"
	probeText     = "agentrt-probe"
)

// ChatTemplate parses the model's default chat template with the model's special tokens.
//
// # Errors
//
// The model has no chat template, or see NewChatTemplate.
func (m *Model) ChatTemplate(opts ...TemplateOption) (*ChatTemplate, error) {
	if m.TemplateSource == "" {
		return nil, fmt.Errorf("tito: model %s has no chat template (neither %s nor chat_template in %s)", m.Dir, FileChatTemplate, FileTokenizerConfig)
	}
	return NewChatTemplate(m.TemplateSource, m.SpecialTokens(), opts...)
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

// NewChatTemplate parses a Jinja chat template in transformers' environment (trim_blocks, lstrip_blocks, loop
// controls, Python-compatible tojson, raise_exception and strftime_now) and detects its message separator.
//
// # Errors
//
// A *TemplateError with the line of a syntax error.
//
// # Notes
//
// A template whose separator cannot be detected still renders; only RenderDelta then fails, saying why.
func NewChatTemplate(source string, special SpecialTokens, opts ...TemplateOption) (*ChatTemplate, error) {
	t := &ChatTemplate{source: source, special: map[string]string{}, now: time.Now, cache: map[string]*prepared{}}
	for k, v := range special {
		if v != "" {
			t.special[k] = v
		}
	}
	t.endOfTurn = t.special["eos_token"]
	for _, o := range opts {
		o(t)
	}
	t.env = newEnvironment(t.now, &t.frozen)
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = false // done by lstripBlocks, which follows Jinja where the engine does not
	src := lstripBlocks(source) // keeps every line where it was, so error lines hold for the caller's source
	tpl, err := exec.NewTemplate(templateName, cfg, &sourceLoader{source: src}, t.env)
	if err != nil {
		return nil, parseError(err, src, cfg)
	}
	t.tpl = tpl
	t.detect()
	return t, nil
}

// Source returns the template's Jinja source.
func (t *ChatTemplate) Source() string { return t.source }

// Separator returns what the template writes after an assistant's end-of-turn token before the next message
// ("\n" for Qwen's ChatML, "" for Llama 3), or "" when it could not be detected.
func (t *ChatTemplate) Separator() string { return t.separator }

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
	return t.render(msgs, o)
}

// prepared holds render options converted to engine values once: tools and kwargs are read-only during a render,
// so one conversion serves every render with the same options, concurrently.
type prepared struct {
	vars map[string]any // special tokens, kwargs, tools, documents

	once  sync.Once
	bases []string // render(fake) per stand-in history, without generation prompt
	errs  []error
}

// maxPrepared bounds the cache of prepared options (distinct tool sets and kwargs); past it, options are converted
// on every render.
const maxPrepared = 256

// prepare returns the converted options, from the cache when the same tools and kwargs were seen before.
func (t *ChatTemplate) prepare(o RenderOptions) (*prepared, error) {
	key := optionsKey(o)
	t.mu.Lock()
	p, ok := t.cache[key]
	t.mu.Unlock()
	if ok {
		return p, nil
	}
	vars := make(map[string]any, 4+len(t.special)+len(o.Kwargs))
	for k, v := range t.special {
		vars[k] = v
	}
	for k, v := range o.Kwargs {
		if isReserved(k) {
			return nil, fmt.Errorf("tito: render: kwarg %q is reserved (pass it through RenderOptions or the messages)", k)
		}
		c, err := goToValue(v)
		if err != nil {
			return nil, fmt.Errorf("tito: render: kwarg %q: %w", k, err)
		}
		vars[k] = c
	}
	vars["documents"] = nil
	vars["tools"] = nil
	if o.Tools != nil {
		tools := make([]any, len(o.Tools))
		for i, raw := range o.Tools {
			v, err := jsonToValue(raw)
			if err != nil {
				return nil, fmt.Errorf("tito: render: tool %d: %w", i, err)
			}
			if _, ok := v.(*exec.Dict); !ok {
				return nil, fmt.Errorf("tito: render: tool %d: want a JSON object, got %s", i, abbrevJSON(bytes.TrimSpace(raw)))
			}
			tools[i] = v
		}
		vars["tools"] = tools
	}
	p = &prepared{vars: vars}
	t.mu.Lock()
	if q, ok := t.cache[key]; ok {
		p = q
	} else if len(t.cache) < maxPrepared {
		t.cache[key] = p
		if tools, ok := vars["tools"].([]any); ok {
			for _, tool := range tools {
				t.frozen.freeze(tool.(*exec.Dict))
			}
		}
	}
	t.mu.Unlock()
	return p, nil
}

// optionsKey identifies tools and kwargs exactly (types included: 1 and 1.0 render differently).
func optionsKey(o RenderOptions) string {
	var b strings.Builder
	for _, raw := range o.Tools {
		b.WriteString(strconv.Itoa(len(raw)))
		b.WriteByte(':')
		b.Write(raw)
	}
	if o.Tools == nil {
		b.WriteString("nil")
	}
	b.WriteByte('|')
	if len(o.Kwargs) > 0 {
		fmt.Fprintf(&b, "%#v", o.Kwargs) // fmt prints maps with sorted keys
	}
	return b.String()
}

func (t *ChatTemplate) render(msgs []Message, o RenderOptions) (string, error) {
	p, err := t.prepare(o)
	if err != nil {
		return "", err
	}
	return t.renderPrepared(msgs, p, o.AddGenerationPrompt)
}

func (t *ChatTemplate) renderPrepared(msgs []Message, p *prepared, addGenerationPrompt bool) (string, error) {
	data := make(map[string]any, len(p.vars)+3)
	for k, v := range p.vars {
		data[k] = v
	}
	list := make([]any, len(msgs))
	for i := range msgs {
		d, err := messageDict(&msgs[i])
		if err != nil {
			return "", &MessageError{Index: i, Detail: err.Error()}
		}
		list[i] = d
	}
	data["messages"] = list
	data["add_generation_prompt"] = addGenerationPrompt
	var raised *string
	data["raise_exception"] = func(msg *exec.Value) (string, error) {
		s := msg.String()
		raised = &s
		return "", &TemplateError{Raised: true, Message: s}
	}
	var b strings.Builder
	b.Grow(4096)
	if err := t.tpl.Execute(&b, exec.NewContext(data)); err != nil {
		if raised != nil {
			return "", &TemplateError{Raised: true, Message: *raised}
		}
		return "", &TemplateError{Message: renderMessage(err)}
	}
	return b.String(), nil
}

// RenderDelta renders messages appended after an assistant turn that ended with its end-of-turn token, as the
// text to append to the token stream: Separator() + render(fake + newMsgs, o) - render(fake), where fake is a
// short stand-in conversation (DESIGN.md invariant 4). History is never re-rendered, so what the model generated
// stays exactly as generated.
//
// # Errors
//
// The separator could not be detected; render(fake) is not a prefix of render(fake + newMsgs) for any stand-in
// (the template renders the new messages differently depending on the history); or any error of Render.
func (t *ChatTemplate) RenderDelta(newMsgs []Message, o RenderOptions) (string, error) {
	if t.sepErr != nil {
		return "", t.sepErr
	}
	if err := ValidateMessages(newMsgs); err != nil {
		return "", err
	}
	p, err := t.prepare(o)
	if err != nil {
		return "", err
	}
	p.once.Do(func() {
		p.bases = make([]string, len(t.fakePrefixes))
		p.errs = make([]error, len(t.fakePrefixes))
		for i, fake := range t.fakePrefixes {
			p.bases[i], p.errs[i] = t.renderPrepared(fake, p, false)
		}
	})
	var firstErr error
	for i, fake := range t.fakePrefixes {
		if p.errs[i] != nil {
			firstErr = firstErrOf(firstErr, p.errs[i])
			continue
		}
		base := p.bases[i]
		full, err := t.renderPrepared(append(slices.Clip(fake), newMsgs...), p, o.AddGenerationPrompt)
		if err != nil {
			firstErr = firstErrOf(firstErr, err)
			continue
		}
		if rest, ok := strings.CutPrefix(full, base); ok {
			return t.separator + rest, nil
		}
		firstErr = firstErrOf(firstErr, fmt.Errorf("tito: render delta: the template renders the stand-in history differently once new messages follow (render(prefix) = %q is not a prefix of render(prefix + new) = %q)", tmplTail(base), tmplHead(full, len(base))))
	}
	return "", firstErr
}

func firstErrOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func tmplTail(s string) string {
	if len(s) > 80 {
		return "..." + s[len(s)-80:]
	}
	return s
}

func tmplHead(s string, n int) string {
	if len(s) > n+40 {
		return s[:n+40] + "..."
	}
	return s
}

// detect finds the separator (what follows the assistant's end-of-turn token) and the stand-in histories for which
// render(fake) is a prefix of render(fake + new) for a new user message and a new tool message.
func (t *ChatTemplate) detect() {
	user := Message{Role: RoleUser, Content: fakeUser}
	asst := Message{Role: RoleAssistant, Content: fakeAssistant}
	text, err := t.render([]Message{user, asst}, RenderOptions{})
	if err != nil {
		t.sepErr = fmt.Errorf("tito: render delta: cannot detect the message separator: rendering a user and an assistant message failed: %w", err)
		return
	}
	i := strings.LastIndex(text, fakeAssistant)
	if i < 0 {
		t.sepErr = fmt.Errorf("tito: render delta: cannot detect the message separator: the template drops the assistant's content")
		return
	}
	after := text[i+len(fakeAssistant):]
	if t.endOfTurn == "" || !strings.HasPrefix(after, t.endOfTurn) {
		t.sepErr = fmt.Errorf("tito: render delta: cannot detect the message separator: after the assistant's content the template writes %q, which does not start with the end-of-turn token %q (set it with WithEndOfTurn)", after, t.endOfTurn)
		return
	}
	t.separator = after[len(t.endOfTurn):]
	candidates := [][]Message{{user, asst}, {user}}
	probes := [][]Message{{{Role: RoleUser, Content: probeText}}, {{Role: RoleTool, Content: probeText}}}
	var good, rest [][]Message
	for _, c := range candidates {
		ok := true
		for _, p := range probes {
			base, err1 := t.render(c, RenderOptions{})
			full, err2 := t.render(append(slices.Clip(c), p...), RenderOptions{AddGenerationPrompt: true})
			if err1 != nil || err2 != nil || !strings.HasPrefix(full, base) {
				ok = false
				break
			}
		}
		if ok {
			good = append(good, c)
		} else {
			rest = append(rest, c)
		}
	}
	t.fakePrefixes = append(good, rest...)
}

// messageDict turns a message into the ordered dict the template sees, with transformers' aliasing of reasoning
// fields: when the message has reasoning, "thinking" is added first and "reasoning_content" set (appended if absent).
func messageDict(m *Message) (*exec.Dict, error) {
	d, err := fieldsDict(m.fields())
	if err != nil {
		return nil, err
	}
	var reasoning *exec.Value
	for _, name := range []string{"reasoning_content", "thinking", "reasoning"} {
		if v := dictGet(d, name); v != nil && !v.IsNil() {
			reasoning = v
			break
		}
	}
	if reasoning != nil {
		if dictGet(d, "thinking") == nil {
			d.Pairs = append([]*exec.Pair{{Key: exec.AsValue("thinking"), Value: reasoning}}, d.Pairs...)
		}
		setPair(d, "reasoning_content", reasoning)
	}
	return d, nil
}

func dictGet(d *exec.Dict, key string) *exec.Value {
	for _, p := range d.Pairs {
		if p.Key.String() == key {
			return p.Value
		}
	}
	return nil
}

func fieldsDict(fs []kv) (*exec.Dict, error) {
	d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(fs))}
	for _, f := range fs {
		var v any
		switch {
		case f.str != nil:
			v = *f.str
		case f.isSeq:
			list := make([]any, len(f.seq))
			for i, o := range f.seq {
				sub, err := fieldsDict(o)
				if err != nil {
					return nil, err
				}
				list[i] = sub
			}
			v = list
		case f.sub != nil:
			sub, err := fieldsDict(f.sub)
			if err != nil {
				return nil, err
			}
			v = sub
		default:
			c, err := jsonToValue(f.raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.key, err)
			}
			if c == nil {
				continue // None-valued keys are dropped, as transformers does
			}
			v = c
		}
		setPair(d, f.key, v)
	}
	return d, nil
}

// templateName is the name the engine gives the template (it shows in some engine errors).
const templateName = "chat_template"

// sourceLoader serves the template source and nothing else, so that {% include %} and friends cannot read files
// (transformers compiles templates from a string, with no loader).
type sourceLoader struct{ source string }

func (l *sourceLoader) Read(path string) (io.Reader, error) {
	if path != templateName {
		return nil, fmt.Errorf("templates cannot load other templates (%q)", path)
	}
	return strings.NewReader(l.source), nil
}

func (l *sourceLoader) Resolve(path string) (string, error) { return path, nil }

func (l *sourceLoader) Inherit(string) (loaders.Loader, error) { return l, nil }

var _ loaders.Loader = (*sourceLoader)(nil)

var lineRe = regexp.MustCompile(`[Ll]ine[ =:]+(\d+)`)

// parseError turns an engine parse error into a *TemplateError with the line, dropping the template source that
// the engine quotes. When the engine reports no line, the lexer's error token gives it.
func parseError(err error, src string, cfg *config.Config) error {
	inner := err
	if u := errors.Unwrap(err); u != nil {
		inner = u
	}
	msg := inner.Error()
	te := &TemplateError{Message: "syntax error: " + msg}
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		te.Line, _ = strconv.Atoi(m[1])
	}
	if te.Line == 0 {
		s := tokens.LexAll(src, cfg)
		for !s.End() {
			s.Next()
		}
		if s.IsError() {
			pos := min(max(s.Current().Pos, 0), len(src))
			te.Line = 1 + strings.Count(src[:pos], "\n")
			te.Message = "syntax error: " + s.Current().Val
		}
	}
	return te
}

// renderMessage shortens an engine execution error to its useful part.
func renderMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "unable to execute template: ")
	return msg
}
