package jsonw

import (
	"unicode/utf16"
	"unicode/utf8"
)

// NumberEnd scans the JSON number (RFC 8259: an optional '-', an integer part without leading zeros, an optional
// fraction and exponent) that starts at s[i]. It returns the offset just past it and whether it is an integer (no
// fraction, no exponent). When s[i:] does not start with a number, ok is false and end is the offset of the byte
// that breaks the grammar (len(s) when the text ends too early), for an error message to point at.
//
// It is the number grammar of the module's hand-written readers (sglang's response decoder, the parsers' JSON
// scanner); the Go plugin SDK's fastjson keeps its own, held equal by this package's tests.
func NumberEnd[T ~string | ~[]byte](s T, i int) (end int, integer, ok bool) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsEnd(s, i)
	default:
		return i, false, false
	}
	integer = true
	if i < len(s) && s[i] == '.' {
		integer = false
		if i = digitsEnd(s, i+1); s[i-1] == '.' {
			return i, false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		integer = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		if i = digitsEnd(s, i); i == d {
			return i, false, false
		}
	}
	return i, integer, true
}

// digitsEnd returns the offset of the first byte from i on that is not a decimal digit.
func digitsEnd[T ~string | ~[]byte](s T, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Unquote reads the JSON string literal at the start of s: its value, and the offset just past its closing quote.
// ok is false when s does not start with one (a control character, an unknown escape, no closing quote); end is
// then where reading stopped. The value is encoding/json's: invalid UTF-8 and lone surrogates (\ud800) become
// U+FFFD, one per invalid byte (FuzzUnquote holds it to encoding/json).
func Unquote(s []byte) (v string, end int, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", 0, false
	}
	var b []byte
	i := 1
	for {
		j := i
		for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= 0x20 && s[j] < utf8.RuneSelf {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i >= len(s) {
			return "", i, false
		}
		switch c := s[i]; {
		case c == '"':
			return string(b), i + 1, true
		case c < 0x20:
			return "", i, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\ufffd"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		if i+1 >= len(s) {
			return "", i, false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
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
			r, good := hex4(s, i+2)
			if !good {
				return "", i, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, good := hex4(s, i+2)
				if r < 0xDC00 && good && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' && r2 >= 0xDC00 && r2 < 0xE000 {
					r = utf16.DecodeRune(r, r2)
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", i, false
		}
		i += 2
	}
}

// hex4 reads the four hex digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
