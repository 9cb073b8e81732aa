package parsers

import "strings"

// hermes: Qwen2.5, Qwen3 (non-coder) and Hermes models.
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// The body between the tags is one JSON object with a string "name" and an object "arguments" ("parameters" is
// accepted as an alias, as SGLang does; a missing "arguments" means no arguments). Blocks may follow each other
// with any text in between; that text is normal text.

const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

func scanHermes(st *state, seg segment) {
	t := st.text
	i := seg.lo
	for {
		o := strings.Index(t[i:seg.hi], toolCallOpen)
		if o < 0 {
			return
		}
		lo := i + o
		bodyLo := lo + len(toolCallOpen)
		c := strings.Index(t[bodyLo:seg.hi], toolCallClose)
		if c < 0 {
			st.cut(lo, seg.hi)
			st.fail(ReasonUnclosedTag, sniffName(t[bodyLo:seg.hi]), "<tool_call> is never closed by </tool_call>", lo, seg.hi)
			return
		}
		hi := bodyLo + c + len(toolCallClose)
		st.cut(lo, hi)
		st.jsonCall(t[bodyLo:bodyLo+c], lo, hi)
		i = hi
	}
}

// jsonCall parses body as one JSON call object {"name": ..., "arguments"|"parameters": {...}} whose markup spans
// text[lo:hi].
func (st *state) jsonCall(body string, lo, hi int) {
	var err error
	st.mem = st.mem[:0]
	st.buf, err = compactAll(st.buf[:0], body, &st.mem, 2)
	if err != nil {
		st.fail(ReasonMalformedJSON, sniffName(body), "malformed JSON in tool call: "+err.Error(), lo, hi)
		return
	}
	st.objectCall(lo, hi)
}

// objectCall handles the compact, valid JSON value in st.buf (members in st.mem) that should be a call object.
func (st *state) objectCall(lo, hi int) {
	obj := bytesView(st.buf)
	if obj[0] != '{' {
		st.fail(ReasonInvalidFormat, "", "the tool call is a JSON "+jsonKind(obj)+", not an object", lo, hi)
		return
	}
	var name, argsKey string
	argsAt := -1
	hasName := false
	for k := range st.mem {
		m := &st.mem[k]
		if m.depth != 1 {
			continue
		}
		v := obj[m.valueLo:m.valueHi]
		key := obj[m.keyLo+1 : m.keyHi-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unquote(obj[m.keyLo:m.keyHi])
		}
		switch key {
		case "name":
			if hasName {
				st.fail(ReasonInvalidFormat, "", `the tool call has two "name" keys`, lo, hi)
				return
			}
			hasName = true
			if v[0] != '"' {
				st.fail(ReasonMissingName, "", `"name" is a JSON `+jsonKind(v)+", not a string", lo, hi)
				return
			}
			name = unquote(v)
		case "arguments", "parameters":
			if argsKey != "" {
				st.fail(ReasonBadArguments, "", `the tool call has both "`+argsKey+`" and "`+key+`"`, lo, hi)
				return
			}
			argsKey, argsAt = key, k
		}
	}
	if !hasName {
		st.fail(ReasonMissingName, "", `the tool call has no "name"`, lo, hi)
		return
	}
	if argsAt < 0 {
		st.call(name, "{}", argsMembers{}, lo, hi)
		return
	}
	a := st.mem[argsAt]
	args := obj[a.valueLo:a.valueHi]
	if args[0] != '{' {
		st.fail(ReasonBadArguments, name, `"`+argsKey+`" is a JSON `+jsonKind(args)+", not an object", lo, hi)
		return
	}
	// The arguments' own members are the depth-2 members inside the arguments value.
	st.call(name, args, argsMembers{all: st.mem, depth: 2, base: a.valueLo}, lo, hi)
}

func jsonKind(v string) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// sniffName finds "name": "..." in a malformed call so that its error can be attributed to a tool. It is used
// for error reports only, never to build a call.
func sniffName(s string) string {
	i := strings.Index(s, `"name"`)
	if i < 0 {
		return ""
	}
	i = skipSpace(s, i+len(`"name"`))
	if i >= len(s) || s[i] != ':' {
		return ""
	}
	i = skipSpace(s, i+1)
	if i >= len(s) || s[i] != '"' {
		return ""
	}
	end, err := scanString(s, i)
	if err != nil {
		return ""
	}
	return unquote(s[i:end])
}
