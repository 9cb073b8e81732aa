package fastjson

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the (small) guest stack.
const maxDepth = 1000

// SyntaxError reports invalid JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("fastjson: %s at offset %d", e.Msg, e.Offset)
}

func synErr(i int, msg string) error { return &SyntaxError{Offset: i, Msg: msg} }

// ErrNotFound is returned by [Get] and friends when a key or index is absent.
var ErrNotFound = errors.New("fastjson: not found")

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipWS returns the index of the first non-whitespace byte at or after i.
func SkipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// Skip validates the JSON value that starts at b[i] (after optional whitespace) and returns the index just past it.
func Skip(b []byte, i int) (int, error) {
	return skip(b, SkipWS(b, i), 0)
}

func skip(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, synErr(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		if depth >= maxDepth {
			return i, synErr(i, "nesting too deep")
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, synErr(i, "expected object key")
			}
			var err error
			if i, err = skipString(b, i); err != nil {
				return i, err
			}
			i = SkipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, synErr(i, "expected ':' after object key")
			}
			if i, err = skip(b, SkipWS(b, i+1), depth+1); err != nil {
				return i, err
			}
			i = SkipWS(b, i)
			if i >= len(b) {
				return i, synErr(i, "unterminated object")
			}
			if b[i] == '}' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, synErr(i, "expected ',' or '}' in object")
			}
			i = SkipWS(b, i+1)
		}
	case c == '[':
		if depth >= maxDepth {
			return i, synErr(i, "nesting too deep")
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skip(b, i, depth+1); err != nil {
				return i, err
			}
			i = SkipWS(b, i)
			if i >= len(b) {
				return i, synErr(i, "unterminated array")
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, synErr(i, "expected ',' or ']' in array")
			}
			i = SkipWS(b, i+1)
		}
	case c == 't':
		return skipLit(b, i, "true")
	case c == 'f':
		return skipLit(b, i, "false")
	case c == 'n':
		return skipLit(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	default:
		return i, synErr(i, fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func skipLit(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, synErr(i, "invalid literal, expected "+lit)
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, synErr(start, "invalid number")
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, synErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, synErr(start, "invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, synErr(start, "invalid number: no digits in exponent")
		}
	}
	return i, nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipString validates the string starting at b[i] == '"' and returns the index past its closing quote.
func skipString(b []byte, i int) (int, error) {
	start := i
	i++
	for i < len(b) {
		// Fast path, 8 bytes at a time while none is '"', '\\' or a control character (exact SWAR tests:
		// hasless(x, 0x20) | haszero(x ^ '"') | haszero(x ^ '\\')); UTF-8 bytes pass.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q, bs := x^0x2222222222222222, x^0x5c5c5c5c5c5c5c5c
			if ((x-0x2020202020202020)&^x|(q-0x0101010101010101)&^q|(bs-0x0101010101010101)&^bs)&0x8080808080808080 != 0 {
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, synErr(i, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, synErr(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, synErr(i, fmt.Sprintf("invalid escape %q", b[i+1]))
			}
		case c < 0x20:
			return i, synErr(i, "control character in string")
		default:
			i++
		}
	}
	return start, synErr(start, "unterminated string")
}

// Valid reports whether b is exactly one JSON value, with optional surrounding whitespace.
func Valid(b []byte) bool {
	i, err := Skip(b, 0)
	return err == nil && SkipWS(b, i) == len(b)
}

// Check is [Valid] with a reason: nil, or a *[SyntaxError].
func Check(b []byte) error {
	i, err := Skip(b, 0)
	if err != nil {
		return err
	}
	if j := SkipWS(b, i); j != len(b) {
		return synErr(j, "unexpected data after the value")
	}
	return nil
}

// IsObject reports whether b (whitespace trimmed) is a valid JSON object.
func IsObject(b []byte) bool {
	i := SkipWS(b, 0)
	return i < len(b) && b[i] == '{' && Valid(b)
}

// Each calls fn for every member of the JSON object obj, in order, with the raw key token (quotes included) and the
// raw value. It stops early when fn returns false. It validates as it goes.
func Each(obj []byte, fn func(key, val []byte) bool) error {
	_, err := EachEnd(obj, fn)
	return err
}

// EachEnd is [Each] that also returns the index just past the object (when fn never stopped early), so that a
// caller can reject trailing data without scanning twice.
func EachEnd(obj []byte, fn func(key, val []byte) bool) (int, error) {
	i := SkipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return i, synErr(i, "expected an object")
	}
	i = SkipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return i, synErr(i, "expected object key")
		}
		ks := i
		var err error
		if i, err = skipString(obj, i); err != nil {
			return i, err
		}
		key := obj[ks:i]
		i = SkipWS(obj, i)
		if i >= len(obj) || obj[i] != ':' {
			return i, synErr(i, "expected ':' after object key")
		}
		vs := SkipWS(obj, i+1)
		if i, err = skip(obj, vs, 1); err != nil {
			return i, err
		}
		if !fn(key, obj[vs:i]) {
			return i, nil
		}
		i = SkipWS(obj, i)
		if i >= len(obj) {
			return i, synErr(i, "unterminated object")
		}
		if obj[i] == '}' {
			return i + 1, nil
		}
		if obj[i] != ',' {
			return i, synErr(i, "expected ',' or '}' in object")
		}
		i = SkipWS(obj, i+1)
	}
}

// EachElem calls fn for every element of the JSON array arr, in order. It stops early when fn returns false.
func EachElem(arr []byte, fn func(val []byte) bool) error {
	i := SkipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return synErr(i, "expected an array")
	}
	i = SkipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for {
		vs := i
		var err error
		if i, err = skip(arr, vs, 1); err != nil {
			return err
		}
		if !fn(arr[vs:i]) {
			return nil
		}
		i = SkipWS(arr, i)
		if i >= len(arr) {
			return synErr(i, "unterminated array")
		}
		if arr[i] == ']' {
			return nil
		}
		if arr[i] != ',' {
			return synErr(i, "expected ',' or ']' in array")
		}
		i = SkipWS(arr, i+1)
	}
}

// KeyEquals reports whether the raw key token (quotes included) decodes to name.
func KeyEquals(tok []byte, name string) bool {
	if len(tok) < 2 {
		return false
	}
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' {
			s, err := Unquote(tok)
			return err == nil && s == name
		}
	}
	return string(inner) == name
}

// Get returns the raw value of key in the JSON object obj, or [ErrNotFound]. With several equal keys the last one
// wins, as in encoding/json.
func Get(obj []byte, key string) ([]byte, error) {
	var found []byte
	err := Each(obj, func(k, v []byte) bool {
		if KeyEquals(k, key) {
			found = v
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, ErrNotFound
	}
	return found, nil
}

// Unquote decodes the JSON string token tok (quotes included). Invalid UTF-8 and lone surrogates become U+FFFD, as
// in encoding/json.
func Unquote(tok []byte) (string, error) {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
		inner := tok[1 : len(tok)-1]
		plain := true
		for _, c := range inner {
			if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
		if plain {
			return string(inner), nil
		}
	}
	b, err := AppendUnquote(make([]byte, 0, len(tok)), tok)
	if err != nil || len(b) == 0 {
		return "", err
	}
	// b is freshly allocated and never used again: hand it over instead of copying it into a string.
	return unsafe.String(&b[0], len(b)), nil
}

// AppendUnquote appends the decoded JSON string token tok (quotes included) to dst.
func AppendUnquote(dst, tok []byte) ([]byte, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return dst, synErr(0, "expected a string")
	}
	s := tok[1 : len(tok)-1]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return dst, synErr(i+1, "unterminated escape")
			}
			switch s[i+1] {
			case '"', '\\', '/':
				dst = append(dst, s[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return dst, synErr(i+1, "invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok2 := hex4(s, i+2); ok2 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, synErr(i+1, fmt.Sprintf("invalid escape %q", s[i+1]))
			}
			i += 2
		case c == '"' || c < 0x20:
			return dst, synErr(i+1, "invalid character in string")
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '\\' && s[j] != '"' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst, nil
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

const hexDigits = "0123456789abcdef"

// safeASCII[c] is true for ASCII bytes that need no escaping inside a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendQuote appends s as a JSON string (quotes included) to dst, as orjson and Python's json.dumps write it:
// control characters escaped (\b, \f, \n, \r, \t short, others as \u00xx), invalid UTF-8 as \ufffd (as
// encoding/json does), '<', '>', '&', U+2028 and U+2029 as they are. The host's writer (the module's
// internal/jsonw, which a guest cannot import) follows the same policy; a test there holds the two equal.
func AppendQuote(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	p := unsafe.Pointer(unsafe.StringData(s))
	for i := 0; i < len(s); {
		// Fast path, 8 bytes at a time while none needs attention (non-ASCII, control, '"' or '\\'): byte loops
		// cost ~4 ns/byte in a Go Wasm guest, this ~0.3 ns/byte. The unaligned load is fine on Wasm, amd64, arm64.
		for i+8 <= len(s) {
			x := *(*uint64)(unsafe.Add(p, i))
			if ((x-0x2020202020202020)|((x^0x2222222222222222)-0x0101010101010101)|
				((x^0x5c5c5c5c5c5c5c5c)-0x0101010101010101)|x)&0x8080808080808080 != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendQuoteBytes is [AppendQuote] for a byte slice.
func AppendQuoteBytes(dst []byte, s []byte) []byte {
	if len(s) == 0 {
		return AppendQuote(dst, "")
	}
	// A view, not a copy (string(s) allocates for anything over 32 bytes): AppendQuote does not retain s.
	return AppendQuote(dst, unsafe.String(&s[0], len(s)))
}

// String decodes the JSON string value v, or errors when v is not a string.
func String(v []byte) (string, error) {
	i := SkipWS(v, 0)
	if i >= len(v) || v[i] != '"' {
		return "", synErr(i, "expected a string")
	}
	return Unquote(trimWS(v))
}

// Int decodes the JSON number v as an int64; a number with a fraction or exponent is an error unless it is integral.
func Int(v []byte) (int64, error) {
	t := trimWS(v)
	// Fast path: a plain integer of up to 18 digits, without strconv's string conversion.
	if d := t; len(d) > 0 && len(d) <= 19 {
		neg := d[0] == '-'
		if neg {
			d = d[1:]
		}
		if len(d) > 0 && len(d) <= 18 && (d[0] != '0' || len(d) == 1) {
			var n int64
			ok := true
			for _, c := range d {
				if c < '0' || c > '9' {
					ok = false
					break
				}
				n = n*10 + int64(c-'0')
			}
			if ok {
				if neg {
					n = -n
				}
				return n, nil
			}
		}
	}
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, synErr(0, "expected a number")
	}
	if end, err := skipNumber(t, 0); err != nil || end != len(t) {
		return 0, synErr(0, "expected a number, got "+string(t))
	}
	if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
		return n, nil
	}
	f, err := Float(t)
	if err != nil {
		return 0, err
	}
	if f != float64(int64(f)) {
		return 0, synErr(0, "expected an integer, got "+string(t))
	}
	return int64(f), nil
}

// Float decodes the JSON number v.
func Float(v []byte) (float64, error) {
	t := trimWS(v)
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, synErr(0, "expected a number")
	}
	if end, err := skipNumber(t, 0); err != nil || end != len(t) {
		return 0, synErr(0, "expected a number, got "+string(t))
	}
	return strconv.ParseFloat(string(t), 64)
}

// Bool decodes the JSON literal true or false.
func Bool(v []byte) (bool, error) {
	switch string(trimWS(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, synErr(0, "expected true or false")
}

// IsNull reports whether v is the literal null (or empty).
func IsNull(v []byte) bool {
	t := trimWS(v)
	return len(t) == 0 || string(t) == "null"
}

func trimWS(b []byte) []byte {
	i := SkipWS(b, 0)
	j := len(b)
	for j > i && isWS(b[j-1]) {
		j--
	}
	return b[i:j]
}

// SkipWSBytes returns b without leading whitespace.
func SkipWSBytes(b []byte) []byte { return b[SkipWS(b, 0):] }
