package parsers

import (
	"fmt"
	"strings"
	"unsafe"
)

// Parser parses one model family's tool-call syntax. Its methods are pure functions: a Parser is immutable and
// safe for concurrent use.
type Parser struct {
	name  string
	scan  func(st *state, seg segment)
	think thinkTags // the family's reasoning markup
}

// thinkTags are the tags around a family's reasoning.
type thinkTags struct{ open, close string }

// Name returns the format name the parser was created with.
func (p *Parser) Name() string { return p.name }

// Names lists the formats New accepts, sorted. Aliases: qwen25 is hermes (Qwen2.5 and Qwen3 emit the same
// <tool_call> JSON blocks), glm47 is glm45 (GLM-4.7 drops the newlines, which glm45 accepts).
func Names() []string {
	return []string{"deepseekv3", "deepseekv31", "glm45", "glm47", "gpt-oss", "hermes", "kimi_k2", "llama3", "minimax-m2", "mistral", "pythonic", "qwen25", "qwen3_coder", "seed_oss"}
}

// New returns the parser for a format (one of Names).
//
// # Errors
//
// ErrUnknownParser (wrapped, with the list of valid names) for any other name.
func New(name string) (*Parser, error) {
	var scan func(*state, segment)
	think := thinkTags{thinkOpen, thinkClose}
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
	case "deepseekv3":
		scan = scanDeepSeekV3
	case "deepseekv31":
		scan = scanDeepSeekV31
	case "mistral":
		scan = scanMistral
	case "minimax-m2":
		scan = scanMiniMaxM2
	case "pythonic":
		scan = scanPythonic
	case "gpt-oss":
		scan, think = scanGPTOSS, gptOSSThink
	case "seed_oss":
		scan, think = scanSeedOSS, thinkTags{seedThinkOpen, seedThinkClose}
	default:
		return nil, fmt.Errorf("parsers: %w %q (known: %s)", ErrUnknownParser, name, strings.Join(Names(), ", "))
	}
	return &Parser{name: name, scan: scan, think: think}, nil
}

// Parse extracts the tool calls of one completion. text must be exactly what the model generated, decoded with
// special tokens kept. tools may be nil (no name check, no schema coercion). The Result owns its memory.
//
// Calls inside a complete <think>...</think> block are ignored, and so is everything before a lone </think>
// (the generation prompt opened the think block) and everything after an unclosed <think> (reasoning cut off).
// Malformed calls are never repaired: each becomes an Error carrying its raw text.
func (p *Parser) Parse(text string, tools *Tools) Result {
	var r Result
	p.ParseInto(&r, text, tools)
	r.sc = nil
	return r
}

// ParseInto is Parse reusing r's memory: its slices and an internal arena are recycled, so that a hot loop (the
// Wasm guest, a runtime worker) allocates almost nothing. Everything r held before the call, including the
// strings and Arguments of earlier results, is overwritten: use a Result from ParseInto only until the next
// ParseInto with the same r. r must not be used concurrently.
func (p *Parser) ParseInto(r *Result, text string, tools *Tools) {
	sc := r.sc
	if sc == nil {
		sc = &scratch{}
		r.sc = sc
	}
	r.Calls, r.Errors, r.NormalText = r.Calls[:0], r.Errors[:0], ""
	st := &sc.st
	*st = state{text: text, tools: tools, res: r, buf: st.buf[:0], mem: st.mem[:0], keys: st.keys[:0],
		cuts: st.cuts[:0], arena: st.arena[:0]}
	if p.think.open == "" {
		sc.segs = append(sc.segs[:0], segment{0, len(text)}) // the scan handles reasoning itself
	} else {
		sc.segs = activeSegments(sc.segs[:0], text, p.think)
	}
	for _, seg := range sc.segs {
		p.scan(st, seg)
	}
	st.finish()
}

// scratch is the reusable memory of ParseInto.
type scratch struct {
	st   state
	segs []segment
}

// segment is a byte range [lo, hi) of the text where tool calls count (outside reasoning).
type segment struct{ lo, hi int }

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// activeSegments appends the parts of text outside reasoning blocks to segs. One forward pass: it visits each '<'.
func activeSegments(segs []segment, text string, tags thinkTags) []segment {
	thinkOpen, thinkClose := tags.open, tags.close
	lo, i := 0, 0
	seenOpen := false
	for {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			break
		}
		i += j
		switch {
		case strings.HasPrefix(text[i:], thinkOpen):
			seenOpen = true
			segs = append(segs, segment{lo, i})
			c := strings.Index(text[i+len(thinkOpen):], thinkClose)
			if c < 0 {
				return segs // unclosed <think>: the rest is reasoning
			}
			lo = i + len(thinkOpen) + c + len(thinkClose)
			i = lo
		case !seenOpen && strings.HasPrefix(text[i:], thinkClose):
			// A lone </think> before any <think>: everything up to it was reasoning.
			seenOpen = true
			i += len(thinkClose)
			lo = i
		default:
			i++
		}
	}
	return append(segs, segment{lo, len(text)})
}

// state accumulates one Parse.
type state struct {
	text  string
	tools *Tools
	res   *Result
	n     int       // next call id
	cuts  []segment // tool-call markup removed from the normal text
	buf   []byte    // scratch for one call's JSON
	mem   []jmember // members found in buf
	keys  []string  // parameter names of one XML call, for the repeated-key check
	arena []byte    // the result's arguments and normal text
}

func (st *state) cut(lo, hi int) {
	st.cuts = append(st.cuts, segment{lo, hi})
}

// call records a well-formed call after checking the name and the arguments (a compact JSON object whose
// members are given; none when the caller checked them) against the tool specs.
func (st *state) call(name string, args string, members argsMembers, lo, hi int) {
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
	if msg := checkArgs(t, args, members); msg != "" {
		st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": "+msg, lo, hi)
		return
	}
	// name may be a view into scratch memory: keep the spec's own string, or a copy.
	if t != nil {
		name = t.name
	} else {
		name = strings.Clone(name)
	}
	start := len(st.arena)
	st.arena = append(st.arena, args...)
	a := st.arena[start:len(st.arena):len(st.arena)]
	st.res.Calls = append(st.res.Calls, Call{ID: callID(st.n), Name: name, Arguments: a, Span: [2]int{lo, hi}})
	st.n++
}

// repeated reports whether an XML call already has a parameter key, and records it.
func (st *state) repeated(key string) bool {
	for _, k := range st.keys {
		if k == key {
			return true
		}
	}
	st.keys = append(st.keys, key)
	return false
}

func (st *state) fail(reason Reason, name, detail string, lo, hi int) {
	if t := st.tools.lookup(name); t != nil {
		name = t.name
	} else {
		name = strings.Clone(name) // may be a view into scratch memory
	}
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
	start := len(st.arena)
	at := 0
	for _, c := range st.cuts {
		st.arena = append(st.arena, st.text[at:c.lo]...)
		at = c.hi
	}
	st.arena = append(st.arena, st.text[at:]...)
	st.res.NormalText = strings.TrimSpace(bytesView(st.arena[start:]))
}

// bytesView returns b as a string without copying; b must not change while the string is in use (the arena is
// only rewritten by the next ParseInto with the same Result, as documented).
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
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
