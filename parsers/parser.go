package parsers

import (
	"fmt"
	"strings"
)

// Parser parses one model family's tool-call syntax. Its methods are pure functions: a Parser is immutable and
// safe for concurrent use.
type Parser struct {
	name string
	scan func(st *state, seg segment)
}

// Name returns the format name the parser was created with.
func (p *Parser) Name() string { return p.name }

// Names lists the formats New accepts, sorted. Aliases: qwen25 is hermes (Qwen2.5 and Qwen3 emit the same
// <tool_call> JSON blocks), glm47 is glm45 (GLM-4.7 drops the newlines, which glm45 accepts).
func Names() []string {
	return []string{"glm45", "glm47", "hermes", "kimi_k2", "llama3", "qwen25", "qwen3_coder"}
}

// New returns the parser for a format (one of Names).
//
// # Errors
//
// ErrUnknownParser (wrapped, with the list of valid names) for any other name.
func New(name string) (*Parser, error) {
	var scan func(*state, segment)
	switch name {
	case "hermes", "qwen25":
		scan = scanHermes
	case "qwen3_coder":
		scan = scanQwen3Coder
	case "llama3":
		scan = scanLlama3
	case "glm45", "glm47":
		scan = scanGLM45
	case "kimi_k2":
		scan = scanKimiK2
	default:
		return nil, fmt.Errorf("parsers: %w %q (known: %s)", ErrUnknownParser, name, strings.Join(Names(), ", "))
	}
	return &Parser{name: name, scan: scan}, nil
}

// Parse extracts the tool calls of one completion. text must be exactly what the model generated, decoded with
// special tokens kept. tools may be nil (no name check, no schema coercion).
//
// Calls inside a complete <think>...</think> block are ignored, and so is everything before a lone </think>
// (the generation prompt opened the think block) and everything after an unclosed <think> (reasoning cut off).
// Malformed calls are never repaired: each becomes an Error carrying its raw text.
func (p *Parser) Parse(text string, tools *Tools) Result {
	st := state{text: text, tools: tools}
	for _, seg := range activeSegments(text) {
		p.scan(&st, seg)
	}
	st.finish()
	return st.res
}

// segment is a byte range [lo, hi) of the text where tool calls count (outside reasoning).
type segment struct{ lo, hi int }

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// activeSegments returns the parts of text outside reasoning blocks.
func activeSegments(text string) []segment {
	if !strings.Contains(text, thinkClose) && !strings.Contains(text, thinkOpen) {
		return []segment{{0, len(text)}}
	}
	var segs []segment
	lo := 0
	// A lone </think> before any <think>: everything up to it was reasoning.
	if c := strings.Index(text, thinkClose); c >= 0 {
		if o := strings.Index(text, thinkOpen); o < 0 || c < o {
			lo = c + len(thinkClose)
		}
	}
	for lo <= len(text) {
		o := strings.Index(text[lo:], thinkOpen)
		if o < 0 {
			segs = append(segs, segment{lo, len(text)})
			break
		}
		segs = append(segs, segment{lo, lo + o})
		c := strings.Index(text[lo+o+len(thinkOpen):], thinkClose)
		if c < 0 {
			break // unclosed <think>: the rest is reasoning
		}
		lo = lo + o + len(thinkOpen) + c + len(thinkClose)
	}
	return segs
}

// state accumulates one Parse.
type state struct {
	text  string
	tools *Tools
	res   Result
	n     int       // next call id
	cuts  []segment // tool-call markup removed from the normal text
	buf   []byte    // scratch
}

func (st *state) cut(lo, hi int) {
	st.cuts = append(st.cuts, segment{lo, hi})
}

// call records a well-formed call after checking the name and the arguments (a compact JSON object) against the
// tool specs.
func (st *state) call(name string, args string, lo, hi int) {
	if name == "" {
		st.fail(ReasonMissingName, "", "the call has an empty tool name", lo, hi)
		return
	}
	var t *tool
	if st.tools.Len() > 0 {
		if t = st.tools.lookup(name); t == nil {
			st.fail(ReasonUnknownTool, name, "unknown tool "+quote(name)+" (known: "+strings.Join(st.tools.Names(), ", ")+")", lo, hi)
			return
		}
	}
	if msg := checkArgs(t, args); msg != "" {
		st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": "+msg, lo, hi)
		return
	}
	a := make([]byte, len(args))
	copy(a, args)
	st.res.Calls = append(st.res.Calls, Call{ID: callID(st.n), Name: name, Arguments: a, Span: [2]int{lo, hi}})
	st.n++
}

func (st *state) fail(reason Reason, name, detail string, lo, hi int) {
	st.res.Errors = append(st.res.Errors, Error{
		ID: callID(st.n), Reason: reason, Name: name, Message: detail, Raw: st.text[lo:hi], Span: [2]int{lo, hi},
	})
	st.n++
}

func (st *state) finish() {
	if len(st.cuts) == 0 {
		st.res.NormalText = strings.TrimSpace(st.text)
		return
	}
	var b strings.Builder
	b.Grow(len(st.text))
	at := 0
	for _, c := range st.cuts {
		b.WriteString(st.text[at:c.lo])
		at = c.hi
	}
	b.WriteString(st.text[at:])
	st.res.NormalText = strings.TrimSpace(b.String())
}

func quote(s string) string { return string(appendQuoted(nil, s)) }

// validName reports whether s can be a tool name: non-empty, no whitespace, no markup or quoting characters.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ', c == '<', c == '>', c == '"', c == '\\', c == '\'', c == 0x7f:
			return false
		}
	}
	return true
}
