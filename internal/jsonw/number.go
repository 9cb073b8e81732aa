package jsonw

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
