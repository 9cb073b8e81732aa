package parsers

import "strings"

// kimi_k2: Kimi K2 special-token tool calls.
//
//	<|tool_calls_section_begin|>
//	<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>
//	<|tool_calls_section_end|>
//
// The call id must be functions.NAME:INDEX (the index is the model's own counter and is not used; our ids are
// call_0000, ...). Only whitespace may separate the calls of a section. Text outside sections is normal text.

const (
	kimiSectionBegin = "<|tool_calls_section_begin|>"
	kimiSectionEnd   = "<|tool_calls_section_end|>"
	kimiCallBegin    = "<|tool_call_begin|>"
	kimiArgBegin     = "<|tool_call_argument_begin|>"
	kimiCallEnd      = "<|tool_call_end|>"
	kimiFunctions    = "functions."
)

func scanKimiK2(st *state, seg segment) { scanSections(st, seg, &kimiTags, (*state).kimiCall) }

// sectionTags spell a special-token family's markup: a section begin...end holds calls callBegin BODY callEnd
// separated by whitespace. Kimi K2 and DeepSeek V3/V3.1 differ only in these and in the call body.
type sectionTags struct{ begin, end, callBegin, callEnd string }

var kimiTags = sectionTags{kimiSectionBegin, kimiSectionEnd, kimiCallBegin, kimiCallEnd}

// scanSections finds the sections spelt by x and hands each call's body (between callBegin and callEnd) to
// call with the call's span.
func scanSections(st *state, seg segment, x *sectionTags, call func(st *state, body string, lo, hi int)) {
	kimiSectionBegin, kimiSectionEnd, kimiCallBegin, kimiCallEnd := x.begin, x.end, x.callBegin, x.callEnd
	t := st.text[:seg.hi]
	i := seg.lo
	for {
		o := strings.Index(t[i:], kimiSectionBegin)
		if o < 0 {
			return
		}
		secLo := i + o
		i = secLo + len(kimiSectionBegin)
		cutLo := secLo
		sawCall := false
		for {
			j := skipSpace(t, i)
			if strings.HasPrefix(t[j:], kimiSectionEnd) {
				st.cut(cutLo, j+len(kimiSectionEnd))
				i = j + len(kimiSectionEnd)
				break
			}
			if j >= len(t) {
				// The section is never closed. Complete calls in it stand (each has its own end marker); a
				// section without any is an unclosed tag.
				st.cut(cutLo, len(t))
				if !sawCall {
					st.fail(ReasonUnclosedTag, "", kimiSectionBegin+" is never closed by "+kimiSectionEnd, secLo, len(t))
				}
				return
			}
			if !strings.HasPrefix(t[j:], kimiCallBegin) {
				// Stray text inside the section: the rest of the section is one malformed call.
				end := strings.Index(t[j:], kimiSectionEnd)
				hi := len(t)
				if end >= 0 {
					hi = j + end
				}
				st.fail(ReasonInvalidFormat, "", "unexpected text inside the tool-calls section (want "+kimiCallBegin+")", j, hi)
				if end < 0 {
					st.cut(cutLo, len(t))
					return
				}
				i = hi
				continue
			}
			lo := j
			e := strings.Index(t[lo:], kimiCallEnd)
			if e < 0 {
				st.cut(cutLo, len(t))
				st.fail(ReasonUnclosedTag, "", kimiCallBegin+" is never closed by "+kimiCallEnd, lo, len(t))
				return
			}
			hi := lo + e + len(kimiCallEnd)
			call(st, t[lo+len(kimiCallBegin):lo+e], lo, hi)
			sawCall = true
			i = hi
		}
	}
}

// kimiCall parses "functions.NAME:IDX<|tool_call_argument_begin|>{json}".
func (st *state) kimiCall(body string, lo, hi int) {
	a := strings.Index(body, kimiArgBegin)
	if a < 0 {
		st.fail(ReasonInvalidFormat, "", "the tool call has no <|tool_call_argument_begin|>", lo, hi)
		return
	}
	id := strings.TrimSpace(body[:a])
	if allDigits(id) {
		st.fail(ReasonMissingName, "", "tool call id "+quote(id)+" has no function name (want functions.NAME:INDEX)", lo, hi)
		return
	}
	colon := strings.LastIndexByte(id, ':')
	if colon < 0 || !allDigits(id[colon+1:]) {
		st.fail(ReasonInvalidFormat, "", "bad tool call id "+quote(id)+" (want functions.NAME:INDEX)", lo, hi)
		return
	}
	qualified := id[:colon]
	if !strings.HasPrefix(qualified, kimiFunctions) {
		if qualified == "" {
			st.fail(ReasonMissingName, "", "tool call id "+quote(id)+" has no function name (want functions.NAME:INDEX)", lo, hi)
		} else {
			st.fail(ReasonInvalidFormat, "", "bad tool call id "+quote(id)+" (want functions.NAME:INDEX)", lo, hi)
		}
		return
	}
	name := qualified[len(kimiFunctions):]
	if !validName(name) {
		st.fail(ReasonMissingName, "", "tool call id "+quote(id)+" has no valid function name", lo, hi)
		return
	}
	st.jsonObjectCall(name, body[a+len(kimiArgBegin):], lo, hi)
}

// jsonObjectCall records a call whose arguments are the JSON object args (surrounding whitespace allowed).
func (st *state) jsonObjectCall(name, args string, lo, hi int) {
	var err error
	st.mem = st.mem[:0]
	st.buf, err = compactAll(st.buf[:0], args, &st.mem, 1)
	if err != nil {
		st.fail(ReasonMalformedJSON, name, "malformed JSON in arguments: "+err.Error(), lo, hi)
		return
	}
	if st.buf[0] != '{' {
		st.fail(ReasonBadArguments, name, "the arguments are a JSON "+jsonKind(bytesView(st.buf))+", not an object", lo, hi)
		return
	}
	st.call(name, bytesView(st.buf), argsMembers{all: st.mem, depth: 1}, lo, hi)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
