package parsers

import "strings"

// glm45 (also glm47): GLM-4.5/4.6 and GLM-4.7 key/value tool calls.
//
//	<tool_call>get_weather
//	<arg_key>city</arg_key>
//	<arg_value>Paris</arg_value>
//	</tool_call>
//
// GLM-4.7 writes the same without the newlines. The name runs to the first newline or <arg_key>; only
// whitespace may separate the pairs. Values are typed by the tool schema: a string parameter keeps the raw text
// verbatim (the GLM chat templates write strings unquoted); any other declared type must be a JSON value of that
// type (or null); an undeclared parameter is a JSON value when it parses as one, else the raw text.

const (
	argKeyOpen    = "<arg_key>"
	argKeyClose   = "</arg_key>"
	argValueOpen  = "<arg_value>"
	argValueClose = "</arg_value>"
)

func scanGLM45(st *state, seg segment) {
	t := st.text[:seg.hi]
	i := seg.lo
	for {
		o := strings.Index(t[i:], toolCallOpen)
		if o < 0 {
			return
		}
		lo := i + o
		bodyLo := lo + len(toolCallOpen)
		c := strings.Index(t[bodyLo:], toolCallClose)
		if c < 0 {
			st.cut(lo, len(t))
			st.fail(ReasonUnclosedTag, glmName(t[bodyLo:]), "<tool_call> is never closed by </tool_call>", lo, len(t))
			return
		}
		hi := bodyLo + c + len(toolCallClose)
		st.cut(lo, hi)
		st.glmCall(t[bodyLo:bodyLo+c], lo, hi)
		i = hi
	}
}

func glmName(body string) string {
	end := len(body)
	if k := strings.IndexByte(body, '\n'); k >= 0 {
		end = k
	}
	if k := strings.Index(body[:end], argKeyOpen); k >= 0 {
		end = k
	}
	return strings.TrimSpace(body[:end])
}

func (st *state) glmCall(body string, lo, hi int) {
	name := glmName(body)
	if name == "" {
		st.fail(ReasonMissingName, "", "the tool call has no function name", lo, hi)
		return
	}
	if !validName(name) {
		st.fail(ReasonInvalidFormat, "", "bad function name "+quote(name), lo, hi)
		return
	}
	t := st.tools.lookup(name)
	if t == nil && st.tools.Len() > 0 {
		st.fail(ReasonUnknownTool, name, "unknown tool "+quote(name)+" (known: "+strings.Join(st.tools.Names(), ", ")+")", lo, hi)
		return
	}
	i := strings.Index(body, name) + len(name)
	st.buf, st.keys, st.mem = append(st.buf[:0], '{'), st.keys[:0], st.mem[:0]
	for {
		i = skipSpace(body, i)
		if i >= len(body) {
			break
		}
		if !strings.HasPrefix(body[i:], argKeyOpen) {
			st.fail(ReasonInvalidFormat, name, "unexpected text "+quote(clip(body[i:]))+" in tool call (want <arg_key>)", lo, hi)
			return
		}
		kLo := i + len(argKeyOpen)
		kEnd := strings.Index(body[kLo:], argKeyClose)
		if kEnd < 0 {
			st.fail(ReasonUnclosedTag, name, "<arg_key> is never closed by </arg_key>", lo, hi)
			return
		}
		key := strings.TrimSpace(body[kLo : kLo+kEnd])
		i = skipSpace(body, kLo+kEnd+len(argKeyClose))
		if !strings.HasPrefix(body[i:], argValueOpen) {
			st.fail(ReasonInvalidFormat, name, "<arg_key>"+key+"</arg_key> is not followed by <arg_value>", lo, hi)
			return
		}
		vLo := i + len(argValueOpen)
		vEnd := strings.Index(body[vLo:], argValueClose)
		if vEnd < 0 {
			st.fail(ReasonUnclosedTag, name, "<arg_value> is never closed by </arg_value>", lo, hi)
			return
		}
		if st.repeated(key) {
			st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": parameter "+quote(key)+" is given twice", lo, hi)
			return
		}
		if len(st.buf) > 1 {
			st.buf = append(st.buf, ',')
		}
		m := jmember{depth: 1, keyLo: len(st.buf)}
		st.buf = appendQuoted(st.buf, key)
		m.keyHi = len(st.buf)
		st.buf = append(st.buf, ':')
		m.valueLo = len(st.buf)
		k := kindUndeclared
		if t != nil {
			k = t.param(key)
		}
		var msg string
		st.buf, msg = appendTyped(st.buf, body[vLo:vLo+vEnd], k, false)
		if msg != "" {
			st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": parameter "+quote(key)+": "+msg, lo, hi)
			return
		}
		m.valueHi = len(st.buf)
		st.mem = append(st.mem, m)
		i = vLo + vEnd + len(argValueClose)
	}
	st.buf = append(st.buf, '}')
	st.call(name, bytesView(st.buf), argsMembers{all: st.mem, depth: 1}, lo, hi)
}

// appendTyped appends the JSON form of an XML-ish parameter value typed by kind k, or returns a message when the
// value does not fit the declared type. qwen selects SGLang's Qwen3-Coder rules: "null" in any case is null for
// every kind, booleans are true/false in any case, undeclared or untyped parameters stay strings, and an object,
// array or untyped-by-us value that is not JSON may be a Python literal (ast.literal_eval's subset). Otherwise
// (GLM) a string parameter keeps its text, and other values must be JSON.
func appendTyped(dst []byte, raw string, k kind, qwen bool) ([]byte, string) {
	if qwen && strings.EqualFold(raw, "null") {
		return append(dst, "null"...), ""
	}
	switch k {
	case kindString:
		return appendQuoted(dst, raw), ""
	case kindUndeclared, kindUntyped:
		if qwen {
			return appendQuoted(dst, raw), ""
		}
	}
	v := strings.TrimSpace(raw)
	if qwen && k == kindBoolean {
		switch {
		case strings.EqualFold(v, "true"):
			return append(dst, "true"...), ""
		case strings.EqualFold(v, "false"):
			return append(dst, "false"...), ""
		}
		return dst, "want boolean, got " + quote(clip(v))
	}
	out, err := compactAll(dst, v, nil, 0)
	if err != nil && qwen && (k == kindAny || k == kindObject || k == kindArray) {
		// SGLang's qwen3_coder (and vLLM's seed_oss) read what json.loads refuses with ast.literal_eval: Seed-OSS's
		// template writes dict and list arguments as Python prints them ({'a': 1, 'b': True}).
		if py, end, msg := pyValue(dst, v, 0, 0); msg == "" && skipSpace(v, end) == len(v) {
			out, err = py, nil
		}
	}
	if err != nil {
		if k <= kindAny {
			// Nothing declared (or nothing we model) and not JSON: it is text.
			return appendQuoted(dst, raw), ""
		}
		return dst, "want " + k.String() + ", got " + quote(clip(v)) + " (not JSON)"
	}
	if k > kindAny {
		if msg := checkValue(k, string(out[len(dst):])); msg != "" {
			return dst, msg
		}
	}
	return out, ""
}
