package parsers

import "strings"

// mistral: Mistral [TOOL_CALLS] tool calls, in both forms Mistral's templates write.
//
//	[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {}}]
//	[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]search[ARGS]{}
//
// The first (Mistral 7B/Nemo) is one JSON list of call objects; the second (Mistral Small 3.2, Devstral) is one
// [TOOL_CALLS]NAME[ARGS]{json} per call, NAME[CALL_ID]ID[ARGS]{json} where the template writes ids (Small 3.2).
// An id the model wrote (the list form's "id", or [CALL_ID]) becomes the call's ID, verbatim. Text before and after the calls is normal text. A JSON syntax error
// ends the calls: there is no way to know where a malformed value ends, so the rest of the text is the error's
// raw text.

const (
	mistralToolCalls = "[TOOL_CALLS]"
	mistralArgs      = "[ARGS]"
	mistralCallID    = "[CALL_ID]"
)

func scanMistral(st *state, seg segment) {
	t := st.text[:seg.hi]
	i := seg.lo
	for {
		o := strings.Index(t[i:], mistralToolCalls)
		if o < 0 {
			return
		}
		lo := i + o
		j := skipSpace(t, lo+len(mistralToolCalls))
		var ok bool
		if j < len(t) && t[j] == '[' {
			i, ok = st.mistralList(lo, j)
		} else {
			i, ok = st.mistralNamed(lo, j)
		}
		if !ok {
			return
		}
	}
}

// mistralList parses the JSON list of call objects at t[j] (the [TOOL_CALLS] marker starts at lo) and returns
// where the list ends; false when the rest of the text was consumed by an error.
func (st *state) mistralList(lo, j int) (int, bool) {
	t := st.text
	i := skipSpace(t, j+1)
	for n := 0; ; n++ {
		errLo := i // an error's raw text: from the marker for the first call, else from the bad call
		if n == 0 {
			errLo = lo
		}
		if i < len(t) && t[i] == ']' && n == 0 {
			st.cut(lo, i+1)
			st.fail(ReasonInvalidFormat, "", "[TOOL_CALLS] holds an empty list", lo, i+1)
			return i + 1, true
		}
		if i >= len(t) || t[i] != '{' {
			st.cut(lo, len(t))
			st.fail(ReasonMalformedJSON, "", "[TOOL_CALLS] list: want a call object at "+quote(clip(t[i:])), errLo, len(t))
			return len(t), false
		}
		var (
			end int
			err error
		)
		st.mem = st.mem[:0]
		st.buf, end, err = compactValue(st.buf[:0], t, i, &st.mem, 2)
		if err != nil {
			st.cut(lo, len(t))
			st.fail(ReasonMalformedJSON, sniffName(t[i:]), "malformed JSON in tool call: "+err.Error(), errLo, len(t))
			return len(t), false
		}
		calls := len(st.res.Calls)
		st.objectCall(i, end)
		if len(st.res.Calls) > calls {
			st.adoptID(st.listID())
		}
		i = skipSpace(t, end)
		switch {
		case i < len(t) && t[i] == ',':
			i = skipSpace(t, i+1)
		case i < len(t) && t[i] == ']':
			st.cut(lo, i+1)
			return i + 1, true
		case i >= len(t):
			// The list is cut off after a complete call (as Kimi K2's sections): the complete calls stand.
			st.cut(lo, len(t))
			return len(t), false
		default:
			st.cut(lo, len(t))
			st.fail(ReasonInvalidFormat, "", "unexpected text "+quote(clip(t[i:]))+" in the [TOOL_CALLS] list", i, len(t))
			return len(t), false
		}
	}
}

// mistralNamed parses NAME[ARGS]{json} at t[j] (the [TOOL_CALLS] marker starts at lo).
func (st *state) mistralNamed(lo, j int) (int, bool) {
	t := st.text
	a := strings.Index(t[j:], mistralArgs)
	next := strings.Index(t[j:], mistralToolCalls)
	if a < 0 || (next >= 0 && next < a) {
		hi := len(t)
		if next >= 0 {
			hi = j + next
		}
		st.cut(lo, hi)
		st.fail(ReasonInvalidFormat, "", "[TOOL_CALLS] is followed by neither a JSON list nor NAME[ARGS]", lo, hi)
		return hi, true
	}
	name, id := strings.TrimSpace(t[j:j+a]), ""
	if c := strings.Index(name, mistralCallID); c >= 0 { // Small 3.2: NAME[CALL_ID]ID[ARGS]
		name, id = strings.TrimSpace(name[:c]), strings.TrimSpace(name[c+len(mistralCallID):])
	}
	i := skipSpace(t, j+a+len(mistralArgs))
	var (
		end int
		err error
	)
	st.mem = st.mem[:0]
	st.buf, end, err = compactValue(st.buf[:0], t, i, &st.mem, 1)
	if err != nil {
		st.cut(lo, len(t))
		st.fail(ReasonMalformedJSON, name, "malformed JSON in arguments: "+err.Error(), lo, len(t))
		return len(t), false
	}
	st.cut(lo, end)
	switch {
	case name == "":
		st.fail(ReasonMissingName, "", "[TOOL_CALLS] has no function name before [ARGS]", lo, end)
	case !validName(name):
		st.fail(ReasonInvalidFormat, "", "bad function name "+quote(clip(name)), lo, end)
	case st.buf[0] != '{':
		st.fail(ReasonBadArguments, name, "the arguments are a JSON "+jsonKind(bytesView(st.buf))+", not an object", lo, end)
	default:
		calls := len(st.res.Calls)
		st.call(name, bytesView(st.buf), argsMembers{all: st.mem, depth: 1}, lo, end)
		if len(st.res.Calls) > calls {
			st.adoptID(id)
		}
	}
	return end, true
}

// listID is the "id" string of the call object in st.buf (Nemo's list form writes one), or "".
func (st *state) listID() string {
	obj := bytesView(st.buf)
	for _, m := range st.mem {
		if m.depth == 1 && obj[m.keyLo:m.keyHi] == `"id"` && obj[m.valueLo] == '"' {
			return strings.Clone(unquote(obj[m.valueLo:m.valueHi]))
		}
	}
	return ""
}

// adoptID gives the last call the id the model wrote for it (kept verbatim: the tool result the template renders
// next names it), when there is one.
func (st *state) adoptID(id string) {
	if id != "" {
		st.res.Calls[len(st.res.Calls)-1].ID = id
	}
}
