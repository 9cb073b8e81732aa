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

// xmlTags spell one family's XML-ish call markup: a block open...close holds functions fnOpen NAME nameEnd
// ... fnClose, which hold parameters pOpen NAME nameEnd value pClose. Qwen3-Coder, Seed-OSS and MiniMax-M2 differ
// only in these strings.
type xmlTags struct {
	open, close, fnOpen, fnClose, pOpen, pClose, nameEnd string
}

var qwenTags = xmlTags{open: toolCallOpen, close: toolCallClose, fnOpen: "<function=", fnClose: "</function>",
	pOpen: "<parameter=", pClose: "</parameter>", nameEnd: ">"}

func scanQwen3Coder(st *state, seg segment) { scanFunctionBlocks(st, seg, &qwenTags) }

// scanFunctionBlocks scans the blocks of XML-ish function calls spelt by x.
func scanFunctionBlocks(st *state, seg segment, x *xmlTags) {
	open, close := x.open, x.close
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
			st.fail(ReasonUnclosedTag, x.functionName(t[bodyLo:]), open+" is never closed by "+close, lo, len(t))
			return
		}
		hi := bodyLo + c + len(close)
		st.cut(lo, hi)
		st.qwenBlock(bodyLo, bodyLo+c, lo, hi, x)
		i = hi
	}
}

func (x *xmlTags) functionName(body string) string {
	i := strings.Index(body, x.fnOpen)
	if i < 0 {
		return ""
	}
	body = body[i+len(x.fnOpen):]
	if e := strings.Index(body, x.nameEnd); e >= 0 && validName(body[:e]) {
		return body[:e]
	}
	return ""
}

// qwenBlock parses the functions in text[bLo:bHi], the body of the block text[lo:hi]. A block with one function
// reports the block's span; a block with several reports each function's span.
func (st *state) qwenBlock(bLo, bHi, lo, hi int, x *xmlTags) {
	open, functionOpen, functionClose := x.open, x.fnOpen, x.fnClose
	t := st.text[:bHi]
	i := skipSpace(t, bLo)
	if i >= bHi {
		st.fail(ReasonInvalidFormat, "", "empty "+open+" block", lo, hi)
		return
	}
	if !strings.HasPrefix(t[i:], functionOpen) {
		st.fail(ReasonInvalidFormat, "", open+" does not start with "+functionOpen+"NAME"+x.nameEnd, lo, hi)
		return
	}
	// The block's span is the call's only when the function is all the block holds: otherwise stray text after it
	// would be an error overlapping the call.
	single := strings.Count(t[bLo:], functionOpen) == 1
	if e := strings.Index(t[i:], functionClose); single && e >= 0 && skipSpace(t, i+e+len(functionClose)) < bHi {
		single = false
	}
	for i < bHi {
		if !strings.HasPrefix(t[i:], functionOpen) {
			st.fail(ReasonInvalidFormat, "", "unexpected text "+quote(clip(t[i:]))+" between functions (want "+functionOpen+"NAME"+x.nameEnd+")", i, bHi)
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
			st.fail(ReasonUnclosedTag, x.functionName(t[fLo:]), functionOpen+"...> is never closed by "+functionClose, cLo, cHi)
			return
		}
		st.qwenFunction(t[fLo+len(functionOpen):fLo+e], cLo, cHi, x)
		i = skipSpace(t, fHi)
	}
}

// qwenFunction parses "NAME>" followed by parameters (the text between "<function=" and "</function>", in
// Qwen's spelling).
func (st *state) qwenFunction(body string, lo, hi int, x *xmlTags) {
	parameterOpen, parameterClose := x.pOpen, x.pClose
	gt := strings.Index(body, x.nameEnd)
	if gt < 0 {
		st.fail(ReasonInvalidFormat, "", x.fnOpen+" is not closed by "+quote(x.nameEnd), lo, hi)
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
	st.buf, st.keys, st.mem = append(st.buf[:0], '{'), st.keys[:0], st.mem[:0]
	i := gt + len(x.nameEnd)
	for {
		i = skipSpace(body, i)
		if i >= len(body) {
			break
		}
		if !strings.HasPrefix(body[i:], parameterOpen) {
			st.fail(ReasonInvalidFormat, name, "unexpected text "+quote(clip(body[i:]))+" in function (want "+parameterOpen+"NAME"+x.nameEnd+")", lo, hi)
			return
		}
		pLo := i + len(parameterOpen)
		pgt := strings.Index(body[pLo:], x.nameEnd)
		if pgt < 0 {
			st.fail(ReasonInvalidFormat, name, parameterOpen+" is not closed by "+quote(x.nameEnd), lo, hi)
			return
		}
		pname := body[pLo : pLo+pgt]
		vLo := pLo + pgt + len(x.nameEnd)
		vEnd := strings.Index(body[vLo:], parameterClose)
		if vEnd < 0 {
			st.fail(ReasonUnclosedTag, name, parameterOpen+pname+x.nameEnd+" is never closed by "+parameterClose, lo, hi)
			return
		}
		v := body[vLo : vLo+vEnd]
		if strings.Contains(v, parameterOpen) {
			st.fail(ReasonUnclosedTag, name, parameterOpen+pname+x.nameEnd+" is not closed before the next "+parameterOpen, lo, hi)
			return
		}
		v = strings.TrimPrefix(v, "\n")
		v = strings.TrimSuffix(v, "\n")
		if st.repeated(pname) {
			st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": parameter "+quote(pname)+" is given twice", lo, hi)
			return
		}
		if len(st.buf) > 1 {
			st.buf = append(st.buf, ',')
		}
		m := jmember{depth: 1, keyLo: len(st.buf)}
		st.buf = appendQuoted(st.buf, pname)
		m.keyHi = len(st.buf)
		st.buf = append(st.buf, ':')
		m.valueLo = len(st.buf)
		k := kindUndeclared
		if t != nil {
			k = t.param(pname)
		}
		var msg string
		st.buf, msg = appendTyped(st.buf, v, k, true)
		if msg != "" {
			st.fail(ReasonBadArguments, name, "arguments of "+quote(name)+": parameter "+quote(pname)+": "+msg, lo, hi)
			return
		}
		m.valueHi = len(st.buf)
		st.mem = append(st.mem, m)
		i = vLo + vEnd + len(parameterClose)
	}
	st.buf = append(st.buf, '}')
	st.call(name, bytesView(st.buf), argsMembers{all: st.mem, depth: 1}, lo, hi)
}
