package parsers

import "strings"

// llama3: Llama 3.1 / 3.2 JSON tool calls.
//
//	<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}
//	{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}
//
// Calls start at the first <|python_tag|>, or at the start of the completion when it begins with "{" (as in
// SGLang). Each call is one JSON object ("parameters", or "arguments" as an alias); calls are separated by ";" or
// by another <|python_tag|>. Text after the last call is normal text. A JSON syntax error ends the call list:
// there is no way to know where a malformed object ends, so the rest of the text is the error's raw text.

const pythonTag = "<|python_tag|>"

func scanLlama3(st *state, seg segment) {
	t := st.text[:seg.hi]
	i := skipSpace(t, seg.lo)
	if i >= len(t) || t[i] != '{' {
		p := strings.Index(t[seg.lo:], pythonTag)
		if p < 0 {
			return
		}
		i = seg.lo + p
	}
	for {
		lo := i
		tagged := strings.HasPrefix(t[i:], pythonTag)
		if tagged {
			i = skipSpace(t, i+len(pythonTag))
		}
		if i >= len(t) || t[i] != '{' {
			if tagged {
				st.cut(lo, len(t))
				st.fail(ReasonInvalidFormat, "", "<|python_tag|> is not followed by a JSON tool call object", lo, len(t))
			}
			return
		}
		var (
			end int
			err error
		)
		st.mem = st.mem[:0]
		st.buf, end, err = compactValue(st.buf[:0], t, i, &st.mem, 2)
		if err != nil {
			st.cut(lo, len(t))
			st.fail(ReasonMalformedJSON, sniffName(t[i:]), "malformed JSON in tool call: "+err.Error(), lo, len(t))
			return
		}
		st.cut(lo, end)
		st.objectCall(lo, end)
		i = skipSpace(t, end)
		switch {
		case i < len(t) && t[i] == ';':
			st.cut(end, i+1)
			i = skipSpace(t, i+1)
		case strings.HasPrefix(t[i:], pythonTag):
		default:
			return
		}
	}
}
