package parsers

import (
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// pythonic: Llama 4 (and Llama 3.2 with a pythonic template) tool calls, a Python list of keyword-argument calls.
//
//	[get_weather(city="Paris", days=3), search(query='x', tags=['a', 'b'])]
//	<|python_start|>[get_weather(city="Paris")]<|python_end|>
//
// The list starts at "[" followed by a function name and "(" (or right after <|python_start|>). Arguments are
// keyword arguments whose values are Python literals (strings, numbers, True/False/None, lists, tuples, dicts
// with string keys), turned into JSON. As in SGLang (which runs Python's ast.literal_eval), anything else, a
// positional argument or an expression, is not a call; we report it as an error with its raw text instead of
// dropping it. Text around the list is normal text.

const (
	pyStart = "<|python_start|>"
	pyEnd   = "<|python_end|>"
)

func scanPythonic(st *state, seg segment) {
	t := st.text[:seg.hi]
	i := seg.lo
	for i < len(t) {
		lo, open, tagged := pythonicListStart(t, i)
		if lo < 0 {
			return
		}
		end, err := st.pythonicList(t, open)
		if err != "" {
			hi := len(t)
			if tagged {
				if k := strings.Index(t[open:], pyEnd); k >= 0 {
					hi = open + k + len(pyEnd)
				}
			}
			st.cut(lo, hi)
			st.fail(ReasonInvalidFormat, "", "pythonic tool call list: "+err, lo, hi)
			i = hi
			continue
		}
		if tagged {
			if j := skipSpace(t, end); strings.HasPrefix(t[j:], pyEnd) {
				end = j + len(pyEnd)
			}
		}
		st.cut(lo, end)
		i = end
	}
}

// pythonicListStart finds the next call list at or after i: its start (the tag or "["), the "[" and whether
// <|python_start|> opened it; lo is -1 when there is none.
func pythonicListStart(t string, i int) (lo, open int, tagged bool) {
	for i < len(t) {
		b := strings.IndexByte(t[i:], '[')
		p := strings.Index(t[i:], pyStart)
		if p >= 0 && (b < 0 || p < b) {
			lo = i + p
			open = skipSpace(t, lo+len(pyStart))
			if open < len(t) && t[open] == '[' {
				return lo, open, true
			}
			i = lo + len(pyStart)
			continue
		}
		if b < 0 {
			return -1, 0, false
		}
		open = i + b
		j := skipSpace(t, open+1)
		if n := pyIdent(t[j:]); n > 0 && j+n < len(t) && t[j+n] == '(' {
			return open, open, false
		}
		i = open + 1
	}
	return -1, 0, false
}

func pyIdent(s string) int {
	n := 0
	for n < len(s) {
		c := s[n]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || n > 0 && c >= '0' && c <= '9' {
			n++
			continue
		}
		break
	}
	return n
}

// pythonicList parses "[call, call, ...]" at t[open] and records each call; it returns the index after "]",
// or a description of what is wrong (then it recorded nothing).
func (st *state) pythonicList(t string, open int) (int, string) {
	type span struct {
		name       string
		args       []byte
		lo, hi, at int
	}
	var calls []span
	var buf []byte
	i := skipSpace(t, open+1)
	for {
		if i < len(t) && t[i] == ']' && len(calls) > 0 {
			i++
			break
		}
		lo := i
		n := pyIdent(t[i:])
		if n == 0 || i+n >= len(t) || t[i+n] != '(' {
			return 0, "expected a function call at offset " + strconv.Itoa(i)
		}
		name := t[i : i+n]
		i += n + 1
		at := len(buf)
		buf = append(buf, '{')
		first := true
		for {
			i = skipSpace(t, i)
			if i < len(t) && t[i] == ')' {
				i++
				break
			}
			k := pyIdent(t[i:])
			j := skipSpace(t, i+k)
			if k == 0 || j >= len(t) || t[j] != '=' {
				return 0, "argument of " + quote(clip(name)) + " is not keyword=value"
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			key := t[i : i+k]
			buf = append(appendQuoted(buf, key), ':')
			var err string
			if buf, i, err = pyValue(buf, t, skipSpace(t, j+1), 0); err != "" {
				return 0, "argument " + quote(key) + " of " + quote(clip(name)) + ": " + err
			}
			i = skipSpace(t, i)
			if i < len(t) && t[i] == ',' {
				i++
			} else if i >= len(t) || t[i] != ')' {
				return 0, "expected , or ) after an argument of " + quote(clip(name))
			}
		}
		buf = append(buf, '}')
		calls = append(calls, span{name: name, lo: lo, hi: i, at: at})
		calls[len(calls)-1].args = buf[at:]
		i = skipSpace(t, i)
		switch {
		case i < len(t) && t[i] == ',':
			i = skipSpace(t, i+1)
		case i < len(t) && t[i] == ']':
		default:
			return 0, "the call list is not closed with ]"
		}
	}
	for _, c := range calls {
		st.jsonObjectCall(c.name, string(buf[c.at:c.at+len(c.args)]), c.lo, c.hi)
	}
	return i, ""
}

// pyValue appends the JSON of the Python literal at t[i] to buf and returns the index after it.
func pyValue(buf []byte, t string, i, depth int) ([]byte, int, string) {
	if depth > 64 {
		return buf, i, "nested too deeply"
	}
	if i >= len(t) {
		return buf, i, "missing value"
	}
	switch c := t[i]; {
	case c == '\'' || c == '"':
		s, end, err := pyString(t, i)
		if err != "" {
			return buf, i, err
		}
		return appendQuoted(buf, s), end, ""
	case c == '[' || c == '(':
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		buf = append(buf, '[')
		i = skipSpace(t, i+1)
		for n := 0; ; n++ {
			if i < len(t) && t[i] == closer {
				return append(buf, ']'), i + 1, ""
			}
			if n > 0 {
				buf = append(buf, ',')
			}
			var err string
			if buf, i, err = pyValue(buf, t, i, depth+1); err != "" {
				return buf, i, err
			}
			if i = skipSpace(t, i); i < len(t) && t[i] == ',' {
				i = skipSpace(t, i+1)
			} else if i >= len(t) || t[i] != closer {
				return buf, i, "unclosed list or tuple"
			}
		}
	case c == '{':
		buf = append(buf, '{')
		i = skipSpace(t, i+1)
		for n := 0; ; n++ {
			if i < len(t) && t[i] == '}' {
				return append(buf, '}'), i + 1, ""
			}
			if n > 0 {
				buf = append(buf, ',')
			}
			if i >= len(t) || t[i] != '\'' && t[i] != '"' {
				return buf, i, "dict keys must be strings"
			}
			k, end, err := pyString(t, i)
			if err != "" {
				return buf, i, err
			}
			buf = append(appendQuoted(buf, k), ':')
			if i = skipSpace(t, end); i >= len(t) || t[i] != ':' {
				return buf, i, "expected : in a dict"
			}
			if buf, i, err = pyValue(buf, t, skipSpace(t, i+1), depth+1); err != "" {
				return buf, i, err
			}
			if i = skipSpace(t, i); i < len(t) && t[i] == ',' {
				i = skipSpace(t, i+1)
			} else if i >= len(t) || t[i] != '}' {
				return buf, i, "unclosed dict"
			}
		}
	default:
		n := 0
		for i+n < len(t) && (pyIdent(t[i+n:i+n+1]) == 1 || strings.IndexByte("+-.0123456789", t[i+n]) >= 0) {
			n++
		}
		w := t[i : i+n]
		switch w {
		case "True":
			return append(buf, "true"...), i + n, ""
		case "False":
			return append(buf, "false"...), i + n, ""
		case "None":
			return append(buf, "null"...), i + n, ""
		}
		if f, err := strconv.ParseFloat(w, 64); err == nil && !strings.ContainsAny(w, "_xXoObBiInN") {
			if strings.ContainsAny(w, ".eE") {
				return jsonw.AppendFloat(buf, f), i + n, ""
			}
			return append(buf, strings.TrimPrefix(w, "+")...), i + n, ""
		}
		return buf, i, "not a Python literal: " + quote(clip(t[i:min(len(t), i+max(n, 1))]))
	}
}

// pyString decodes the Python string literal at t[i] (single or double quotes, not triple, no prefix).
func pyString(t string, i int) (string, int, string) {
	q := t[i]
	if strings.HasPrefix(t[i:], string([]byte{q, q, q})) {
		return "", i, "triple-quoted strings are not supported"
	}
	var b strings.Builder
	for j := i + 1; j < len(t); j++ {
		c := t[j]
		switch {
		case c == q:
			return b.String(), j + 1, ""
		case c == '\n':
			return "", i, "newline in a string"
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if j+1 >= len(t) {
			break
		}
		j++
		switch e := t[j]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'x', 'u', 'U':
			w := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if j+w >= len(t) {
				return "", i, "short \\" + string(e) + " escape"
			}
			r, err := strconv.ParseUint(t[j+1:j+1+w], 16, 32)
			if err != nil {
				return "", i, "bad \\" + string(e) + " escape"
			}
			b.WriteRune(rune(r))
			j += w
		default: // Python keeps unknown escapes as written
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", i, "unterminated string"
}
