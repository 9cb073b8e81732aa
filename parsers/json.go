package parsers

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// This file holds a small, strict JSON scanner (RFC 8259: no NaN/Infinity, no comments, no trailing commas, no
// single quotes, no control characters in strings). It validates and compacts in one pass without reflection,
// because encoding/json is slow inside a Go Wasm guest and the parsers run there.

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 256

// syntaxError says what is wrong with a JSON text and where (a byte offset into the parsed text).
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return e.msg + " at offset " + strconv.Itoa(e.off)
}

func errAt(off int, msg string) *syntaxError { return &syntaxError{off: off, msg: msg} }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func describe(s string, i int) string {
	if i >= len(s) {
		return "unexpected end of JSON"
	}
	c := s[i]
	if c < 0x20 || c >= 0x7f {
		return "invalid byte " + strconv.Quote(string(c))
	}
	return "invalid character " + strconv.QuoteRune(rune(c))
}

// jmember is an object member found by compactValue: the object's nesting level (1 for the members of the
// top-level object) and the key (quotes included) and value ranges in the compact output.
type jmember struct {
	depth            int
	keyLo, keyHi     int
	valueLo, valueHi int
}

// compactValue validates the JSON value at s[i:] (leading whitespace allowed), appends its compact form to dst
// (strings and numbers copied verbatim, insignificant whitespace dropped) and returns the index just past it.
// When mem is not nil, the members of objects nested at most memDepth (<= 3) deep are appended to *mem.
//
// It is one iterative loop with an explicit stack that copies runs of input between whitespace, with strings
// scanned inline 8 bytes at a time: function calls and per-token appends are expensive in Go compiled to Wasm.
func compactValue(dst []byte, s string, i int, mem *[]jmember, memDepth int) ([]byte, int, error) {
	var objects [maxDepth / 64]uint64 // bit d set: the container open at depth d is an object
	var open [4]int                   // index into *mem of the member whose value is the container at depth d
	depth := 0
	cur := -1 // index into *mem of the member whose value is being read (or -1)
	const (
		wantValue = iota
		wantKey
		afterValue
	)
	state := wantValue
	p := unsafe.Pointer(unsafe.StringData(s))
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	run := i // start of the input not yet copied to dst; input index i lands at dst offset len(dst)+i-run
	for {
		if i < len(s) && isSpace(s[i]) {
			dst = append(dst, s[run:i]...)
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			run = i
		}
		switch state {
		case wantValue:
			if i >= len(s) {
				return dst, i, errAt(i, "unexpected end of JSON")
			}
			c := s[i]
			if cur >= 0 {
				(*mem)[cur].valueLo = len(dst) + i - run
			}
			switch {
			case c == '{' || c == '[':
				if depth >= maxDepth {
					return dst, i, errAt(i, "JSON nested too deeply")
				}
				if c == '{' {
					objects[depth/64] |= 1 << (depth % 64)
				} else {
					objects[depth/64] &^= 1 << (depth % 64)
				}
				if depth < len(open) {
					open[depth] = cur
				}
				depth++
				i++
				cur = -1
				state = wantValue
				if c == '{' {
					state = wantKey
				}
				j := i
				for j < len(s) && isSpace(s[j]) {
					j++
				}
				if j < len(s) && s[j] == c+2 { // '}' == '{'+2, ']' == '['+2: an empty container
					dst = append(dst, s[run:i]...)
					i, run = j+1, j
					depth--
					cur = -1
					if depth < len(open) {
						cur = open[depth]
					}
					state = afterValue
				}
				continue
			case c == '"':
				j := i + 1
			str:
				for {
					for j+8 <= len(s) {
						x := *(*uint64)(unsafe.Add(p, j))
						if ((x-ones*0x20)|((x^ones*'"')-ones)|((x^ones*'\\')-ones))&^x&highs != 0 {
							break
						}
						j += 8
					}
					if j >= len(s) {
						return dst, i, errAt(i, "unterminated string")
					}
					switch c := s[j]; {
					case c == '"':
						j++
						break str
					case c == '\\':
						end, err := scanString(s, i) // escapes: the careful path
						if err != nil {
							return dst, end, err
						}
						j = end
						break str
					case c < 0x20:
						return dst, j, errAt(j, describe(s, j)+" in string literal")
					default:
						j++
					}
				}
				i = j
			case c == '-' || (c >= '0' && c <= '9'):
				// Plain integers inline; fractions, exponents and errors take the careful path.
				j := i
				if c == '-' {
					j++
				}
				k := j
				for k < len(s) && s[k] >= '0' && s[k] <= '9' {
					k++
				}
				if k > j && (s[j] != '0' || k-j == 1) && (k >= len(s) || (s[k] != '.' && s[k] != 'e' && s[k] != 'E')) {
					i = k
				} else {
					end, _, err := scanNumber(s, i)
					if err != nil {
						return dst, end, err
					}
					i = end
				}
			case c == 't' && len(s)-i >= 4 && s[i:i+4] == "true":
				i += 4
			case c == 'f' && len(s)-i >= 5 && s[i:i+5] == "false":
				i += 5
			case c == 'n' && len(s)-i >= 4 && s[i:i+4] == "null":
				i += 4
			default:
				return dst, i, errAt(i, describe(s, i)+" looking for beginning of value")
			}
			state = afterValue
		case wantKey:
			if i >= len(s) || s[i] != '"' {
				return dst, i, errAt(i, describe(s, i)+" looking for beginning of object key string")
			}
			// Keys are short and plain: scan inline, and leave escapes to scanString.
			end := i + 1
			for end < len(s) && s[end] != '"' && s[end] != '\\' && s[end] >= 0x20 {
				end++
			}
			if end < len(s) && s[end] == '"' {
				end++
			} else {
				var err error
				if end, err = scanString(s, i); err != nil {
					return dst, end, err
				}
			}
			if mem != nil && depth <= memDepth {
				*mem = append(*mem, jmember{depth: depth, keyLo: len(dst) + i - run, keyHi: len(dst) + end - run})
				cur = len(*mem) - 1
			}
			i = end
			if i < len(s) && isSpace(s[i]) {
				dst = append(dst, s[run:i]...)
				for i < len(s) && isSpace(s[i]) {
					i++
				}
				run = i
			}
			if i >= len(s) || s[i] != ':' {
				return dst, i, errAt(i, describe(s, i)+" after object key")
			}
			i++
			state = wantValue
		case afterValue:
			if cur >= 0 {
				(*mem)[cur].valueHi = len(dst) + i - run
				cur = -1
			}
			if depth == 0 {
				return append(dst, s[run:i]...), i, nil
			}
			top := byte('[')
			if objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0 {
				top = '{'
			}
			switch {
			case i < len(s) && s[i] == ',':
				i++
				state = wantValue
				if top == '{' {
					state = wantKey
				}
			case i < len(s) && s[i] == top+2:
				i++
				depth--
				cur = -1
				if depth < len(open) {
					cur = open[depth]
				}
			case top == '{':
				return dst, i, errAt(i, describe(s, i)+" after object key:value pair")
			default:
				return dst, i, errAt(i, describe(s, i)+" after array element")
			}
		}
	}
}

// Word-at-a-time (SWAR) helpers: Go compiled to Wasm runs byte loops at ~4 ns/byte, 8-byte words at ~0.3 ns/byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanString validates the JSON string starting at s[i] == '"' and returns the index just past its closing quote.
func scanString(s string, i int) (int, error) {
	start := i
	i++
	p := unsafe.Pointer(unsafe.StringData(s))
	for i < len(s) {
		for i+8 <= len(s) {
			x := *(*uint64)(unsafe.Add(p, i))
			if ((x-ones*0x20)|((x^ones*'"')-ones)|((x^ones*'\\')-ones))&^x&highs != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return i, errAt(i, "unexpected end of JSON in string escape")
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) {
					return i, errAt(i, "unexpected end of JSON in \\u escape")
				}
				for k := i + 2; k < i+6; k++ {
					if unhex(s[k]) < 0 {
						return k, errAt(k, describe(s, k)+" in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				return i + 1, errAt(i+1, describe(s, i+1)+" in string escape code")
			}
		case c < 0x20:
			return i, errAt(i, describe(s, i)+" in string literal")
		default:
			i++
		}
	}
	return start, errAt(start, "unterminated string")
}

// scanNumber validates the JSON number at s[i:] and returns its end and whether it is an integer (no fraction or
// exponent). An error names the byte that breaks the grammar, as encoding/json's do.
func scanNumber(s string, i int) (end int, integer bool, err error) {
	end, integer, ok := jsonw.NumberEnd(s, i)
	if ok {
		return end, integer, nil
	}
	where := " in numeric literal" // the integer part
	if end > i && s[end-1] == '.' {
		where = " after decimal point in numeric literal"
	} else if end > i+1 && strings.IndexByte("eE+-", s[end-1]) >= 0 { // a '-' past the first byte is the exponent's
		where = " in exponent of numeric literal"
	}
	return end, false, errAt(end, describe(s, end)+where)
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unquote decodes a JSON string literal that scanString accepted (quotes included). Lone surrogates and invalid
// UTF-8 become U+FFFD, as in encoding/json.
func unquote(lit string) string {
	body := lit[1 : len(lit)-1]
	k := 0
	for k < len(body) && body[k] != '\\' {
		k++
	}
	if k == len(body) && utf8.ValidString(body) {
		return body
	}
	b := make([]byte, 0, len(body))
	k = 0
	for k < len(body) {
		c := body[k]
		if c != '\\' {
			if c < utf8.RuneSelf {
				b = append(b, c)
				k++
				continue
			}
			r, size := utf8.DecodeRuneInString(body[k:])
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD, one per byte, as in encoding/json
			k += size
			continue
		}
		switch body[k+1] {
		case '"', '\\', '/':
			b = append(b, body[k+1])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(body[k+2 : k+6])
			k += 6
			if r >= 0xD800 && r < 0xDC00 && k+6 <= len(body) && body[k] == '\\' && body[k+1] == 'u' {
				if r2 := hex4(body[k+2 : k+6]); r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					k += 6
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, rune(r))
			continue
		}
		k += 2
	}
	return string(b)
}

func hex4(h string) int {
	return unhex(h[0])<<12 | unhex(h[1])<<8 | unhex(h[2])<<4 | unhex(h[3])
}

// appendQuoted appends s as a JSON string literal, as internal/jsonw writes it (the module's one policy: non-ASCII
// text kept as UTF-8, like Python's ensure_ascii=False; invalid UTF-8 as \ufffd, so the output is always valid JSON).
func appendQuoted(dst []byte, s string) []byte { return jsonw.AppendString(dst, s) }

// value is a decoded JSON value, used for the (small, rarely changing) tool specifications.
type value struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str  string
	arr  []value
	obj  []member
}

type member struct {
	key string
	val value
}

func (v *value) get(key string) *value {
	for i := range v.obj {
		if v.obj[i].key == key {
			return &v.obj[i].val
		}
	}
	return nil
}

// decodeValue decodes the JSON value at s[i:] into a value tree.
func decodeValue(s string, i int, depth int) (value, int, error) {
	i = skipSpace(s, i)
	if i >= len(s) {
		return value{}, i, errAt(i, "unexpected end of JSON")
	}
	if depth >= maxDepth {
		return value{}, i, errAt(i, "JSON nested too deeply")
	}
	switch c := s[i]; {
	case c == '{':
		v := value{kind: 'o'}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == '}' {
			return v, i + 1, nil
		}
		for {
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != '"' {
				return v, i, errAt(i, describe(s, i)+" looking for beginning of object key string")
			}
			end, err := scanString(s, i)
			if err != nil {
				return v, end, err
			}
			key := unquote(s[i:end])
			i = skipSpace(s, end)
			if i >= len(s) || s[i] != ':' {
				return v, i, errAt(i, describe(s, i)+" after object key")
			}
			var el value
			el, i, err = decodeValue(s, i+1, depth+1)
			if err != nil {
				return v, i, err
			}
			v.obj = append(v.obj, member{key, el})
			i = skipSpace(s, i)
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i < len(s) && s[i] == '}' {
				return v, i + 1, nil
			}
			return v, i, errAt(i, describe(s, i)+" after object key:value pair")
		}
	case c == '[':
		v := value{kind: 'a'}
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return v, i + 1, nil
		}
		for {
			el, j, err := decodeValue(s, i, depth+1)
			if err != nil {
				return v, j, err
			}
			v.arr = append(v.arr, el)
			i = skipSpace(s, j)
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i < len(s) && s[i] == ']' {
				return v, i + 1, nil
			}
			return v, i, errAt(i, describe(s, i)+" after array element")
		}
	case c == '"':
		end, err := scanString(s, i)
		if err != nil {
			return value{}, end, err
		}
		return value{kind: 's', str: unquote(s[i:end])}, end, nil
	case c == '-' || (c >= '0' && c <= '9'):
		end, _, err := scanNumber(s, i)
		if err != nil {
			return value{}, end, err
		}
		return value{kind: 'n', str: s[i:end]}, end, nil
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s)-i >= len(lit) && s[i:i+len(lit)] == lit {
				if lit == "null" {
					return value{kind: 'z'}, i + len(lit), nil
				}
				return value{kind: 'b', str: lit}, i + len(lit), nil
			}
		}
		return value{}, i, errAt(i, describe(s, i)+" looking for beginning of value")
	}
}

// compactAll checks that s is exactly one JSON value (surrounding whitespace allowed) and appends its compact
// form to dst.
func compactAll(dst []byte, s string, mem *[]jmember, memDepth int) ([]byte, error) {
	out, i, err := compactValue(dst, s, 0, mem, memDepth)
	if err != nil {
		return dst, err
	}
	if i = skipSpace(s, i); i != len(s) {
		return dst, errAt(i, describe(s, i)+" after top-level value")
	}
	return out, nil
}
