package parsers

import "strings"

// qwen3_coder: Qwen3-Coder (and Qwen3.5) XML tool calls.
//
//	<tool_call>
//	<function=search>
//	<parameter=query>
//	weather in Paris
//	</parameter>
//	<parameter=topn>
//	3
//	</parameter>
//	</function>
//	</tool_call>
//
// A block holds one or more <function=NAME>...</function> elements separated by whitespace; a function holds
// <parameter=NAME>value</parameter> elements separated by whitespace. One leading and one trailing newline of
// each value are markup (as in SGLang); the rest is coerced by the tool schema as SGLang's detector does:
// string types keep the text, integer/number types need a JSON number, booleans are true/false in any case,
// object/array need JSON of that kind, "null" (any case) is null for every type, and parameters the schema does
// not declare stay strings. Unlike SGLang, a value that does not fit its declared type is an error, not a string.

const (
	functionOpen   = "<function="
	functionClose  = "</function>"
	parameterOpen  = "<parameter="
	parameterClose = "</parameter>"
)

func scanQwen3Coder(st *state, seg segment) { scanFunctionBlocks(st, seg, toolCallOpen, toolCallClose) }

// scanFunctionBlocks scans the blocks open...close that hold <function=NAME> elements: Qwen3-Coder's <tool_call>
// and Seed-OSS's <seed:tool_call> share this body.
func scanFunctionBlocks(st *state, seg segment, open, close string) {
	t := st.text[:seg.hi]
	i := seg.lo
	for {
		o := strings.Index(t[i:], open)
		if o < 0 {
			return
		}
		lo := i + o
		bodyLo := lo + len(open)
		c := strings.Index(t[bodyLo:], close)
		if c < 0 {
			st.cut(lo, len(t))
			st.fail(ReasonUnclosedTag, functionName(t[bodyLo:]), open+" is never closed by "+close, lo, len(t))
			return
		}
		hi := bodyLo + c + len(close)
		st.cut(lo, hi)
		st.qwenBlock(bodyLo, bodyLo+c, lo, hi, open)
		i = hi
	}
}

func functionName(body string) string {
	i := strings.Index(body, functionOpen)
	if i < 0 {
		return ""
	}
	body = body[i+len(functionOpen):]
	if e := strings.IndexByte(body, '>'); e >= 0 && validName(body[:e]) {
		return body[:e]
	}
	return ""
}

// qwenBlock parses the functions in text[bLo:bHi], the body of the block text[lo:hi]. A block with one function
// reports the block's span; a block with several reports each function's span.
func (st *state) qwenBlock(bLo, bHi, lo, hi int, open string) {
	t := st.text[:bHi]
	i := skipSpace(t, bLo)
	if i >= bHi {
		st.fail(ReasonInvalidFormat, "", "empty "+open+" block", lo, hi)
		return
	}
	if !strings.HasPrefix(t[i:], functionOpen) {
		st.fail(ReasonInvalidFormat, "", open+" does not start with <function=NAME>", lo, hi)
		return
	}
	single := strings.Count(t[bLo:], functionOpen) == 1
	for i < bHi {
		if !strings.HasPrefix(t[i:], functionOpen) {
			st.fail(ReasonInvalidFormat, "", "unexpected text "+quote(clip(t[i:]))+" between functions (want <function=NAME>)", i, bHi)
			return
		}
		fLo := i
		e := strings.Index(t[fLo:], functionClose)
		fHi := bHi
		if e >= 0 {
			fHi = fLo + e + len(functionClose)
		}
		cLo, cHi := fLo, fHi
		if single {
			cLo, cHi = lo, hi
		}
		if e < 0 {
			st.fail(ReasonUnclosedTag, functionName(t[fLo:]), "<function=...> is never closed by </function>", cLo, cHi)
			return
		}
		st.qwenFunction(t[fLo+len(functionOpen):fLo+e], cLo, cHi)
		i = skipSpace(t, fHi)
	}
}

// qwenFunction parses "NAME>" followed by parameters (the text between "<function=" and "</function>").
func (st *state) qwenFunction(body string, lo, hi int) {
	gt := strings.IndexByte(body, '>')
	if gt < 0 {
		st.fail(ReasonInvalidFormat, "", "<function= is not closed by '>'", lo, hi)
		return
	}
	name := body[:gt]
	if name == "" {
		st.fail(ReasonMissingName, "", "the function has an empty name", lo, hi)
		return
	}
	if !validName(name) {
		st.fail(ReasonInvalidFormat, "", "bad function name "+quote(clip(name)), lo, hi)
		return
	}
	t := st.tools.lookup(name)
	if t == nil && st.tools.Len() > 0 {
		st.fail(ReasonUnknownTool, name, "unknown tool "+quote(name)+" (known: "+strings.Join(st.tools.Names(), ", ")+")", lo, hi)
		return
	}
	st.buf, st.keys = append(st.buf[:0], '{'), st.keys[:0]
	i := gt + 1
	for {
		i = skipSpace(body, i)
		if i >= len(body) {
			break
		}
		if !strings.HasPrefix(body[i:], parameterOpen) {
			st.fail(ReasonInvalidFormat, name, "unexpected text "+quote(clip(body[i:]))+" in function (want <parameter=NAME>)", lo, hi)
			return
		}
		pLo := i + len(parameterOpen)
		pgt := strings.IndexByte(body[pLo:], '>')
		if pgt < 0 {
			st.fail(ReasonInvalidFormat, name, "<parameter= is not closed by '>'", lo, hi)
			return
		}
		pname := body[pLo : pLo+pgt]
		vLo := pLo + pgt + 1
		vEnd := strings.Index(body[vLo:], parameterClose)
		if vEnd < 0 {
			st.fail(ReasonUnclosedTag, name, "<parameter="+pname+"> is never closed by </parameter>", lo, hi)
			return
		}
		v := body[vLo : vLo+vEnd]
		if strings.Contains(v, parameterOpen) {
			st.fail(ReasonUnclosedTag, name, "<parameter="+pname+"> is not closed before the next <parameter=", lo, hi)
			return
		}
		v = strings.TrimPrefix(v, "\n")
		v = strings.TrimSuffix(v, "\n")
		if st.repeated(pname) {
			st.fail(ReasonBadArguments, name, "parameter "+quote(pname)+" is given twice", lo, hi)
			return
		}
		if len(st.buf) > 1 {
			st.buf = append(st.buf, ',')
		}
		st.buf = appendQuoted(st.buf, pname)
		st.buf = append(st.buf, ':')
		k := kindUndeclared
		if t != nil {
			k = t.param(pname)
		}
		var msg string
		st.buf, msg = appendTyped(st.buf, v, k, true)
		if msg != "" {
			st.fail(ReasonBadArguments, name, "parameter "+quote(pname)+": "+msg, lo, hi)
			return
		}
		i = vLo + vEnd + len(parameterClose)
	}
	st.buf = append(st.buf, '}')
	st.call(name, bytesView(st.buf), argsMembers{}, lo, hi)
}
