// Package jsonw holds the module's JSON primitives: string quoting, floats and integer lists, each appending to a
// []byte without reflection (and without allocating when the slice has room), and the number grammar. tito,
// sglang, the SGLang emulator and the built-in parsers write their JSON with it, so that every byte agentrt puts
// on a wire follows one policy.
//
// # Policy
//
// Strings are written as orjson (SGLang's server's encoder) and Python's json.dumps(ensure_ascii=False) write
// them, so a string in the emulator's answers is byte for byte what SGLang would send:
//   - '"' and '\\' are escaped with a backslash; \b, \f, \n, \r and \t in their short forms; every other control
//     character (below U+0020) as \u00xx, lower-case hex.
//   - Everything else is written as it is: non-ASCII text stays UTF-8, '<', '>' and '&' are not HTML-escaped
//     (encoding/json's default escapes them; nothing here embeds JSON in HTML), and U+2028 and U+2029 are not
//     escaped (encoding/json escapes them for JavaScript before ES2019; JSON allows them and no reader here is a
//     JavaScript parser).
//   - Invalid UTF-8 becomes \ufffd, one per invalid byte, as encoding/json does, so the output is always valid
//     UTF-8 and valid JSON. (Python strings cannot hold invalid UTF-8, so orjson has no rule to follow here.)
//
// This is encoding/json's output with SetEscapeHTML(false) but for U+2028 and U+2029; FuzzAppend holds it to that
// byte for byte.
//
// Floats are written as encoding/json writes a float64: the shortest decimal that parses back to the same bits,
// in exponent form below 1e-6 and from 1e21 on ("1e-7", "1e+21"), else plain ("0.000001", "100"). Two values
// differ, as orjson writes them: negative zero is "-0.0" (a Python reader takes "-0" for the integer 0 and loses
// the sign), and NaN and ±Inf, which JSON cannot carry, are null. A caller for which a non-finite value is an
// error (sampling parameters, a trajectory's logprobs) checks before writing.
//
// Integers are written in decimal, by [AppendInts] a list at a time (a prompt is thousands of token ids).
//
// The one reading primitive, [NumberEnd], is the JSON number grammar that the module's hand-written readers share.
//
// The package imports only the standard library, so the parsers, which are compiled to WebAssembly, use it too.
// The Go plugin SDK (plugins/sdk/go/fastjson) cannot import an internal package and keeps its own AppendQuote and
// number scanner; FuzzAppend holds them equal to these.
package jsonw

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// Word-at-a-time (SWAR) constants: Go compiled to Wasm runs byte loops at ~4 ns/byte, 8-byte words at ~0.3 ns/byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun returns how many bytes of s from i on need no escaping (printable ASCII other than '"' and '\\'),
// looking at 8 bytes at a time. On a big-endian machine it may stop up to 7 bytes before the first byte that needs
// attention: the caller looks at the rest one byte at a time.
func plainRun(s string, i int) int {
	start := i
	p := unsafe.Pointer(unsafe.StringData(s))
	for i+8 <= len(s) {
		// An unaligned 8-byte load (Wasm, amd64 and arm64 allow it). A byte below 0x20, equal to '"' or '\\', or
		// at or above 0x80 sets its high bit in m; a borrow can set a later byte's too, never an earlier one's,
		// so the first byte flagged (the lowest, little-endian) is the first that needs attention.
		x := *(*uint64)(unsafe.Add(p, i))
		if m := ((x - ones*0x20) | ((x ^ ones*'"') - ones) | ((x ^ ones*'\\') - ones) | x) & highs; m != 0 {
			if littleEndian {
				i += bits.TrailingZeros64(m) >> 3
			}
			break
		}
		i += 8
	}
	return i - start
}

// littleEndian: plainRun's loads put the string's first byte lowest (true on amd64, arm64 and Wasm).
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// AppendString appends s to b as a JSON string, quotes included, escaped as the package doc says.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is waiting to be copied as it is
	for i := 0; i < len(s); {
		i += plainRun(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f to b as a JSON number: encoding/json's shortest round-trip form, "-0.0" for negative zero,
// null for NaN and ±Inf (see the package doc).
func AppendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// "1e-07" to "1e-7", as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// Integer is the element type of the lists [AppendInts] writes: any signed integer, or an unsigned one that fits
// in an int64.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32
}

// AppendInts appends xs to b as a JSON array of decimal integers ("[]" when xs is empty or nil).
func AppendInts[T Integer](b []byte, xs []T) []byte {
	b = appendElems(append(b, '['), xs, false)
	return append(b, ']')
}

// appendElems appends xs to b as decimal integers separated by commas, with a comma before the first too when
// comma is set.
func appendElems[T Integer](b []byte, xs []T, comma bool) []byte {
	// Digits are written into the slice's spare room rather than appended one by one (appending checks the
	// capacity per byte, and a prompt's ids are most of a request), two at a time.
	const most = len(",-9223372036854775808")
	n := len(b)
	b = grow(b, 1+4*len(xs))
	for i, x := range xs {
		if n+most+1 > len(b) { // room for the longest element and a closing bracket
			b = grow(b[:n], most+1+4*(len(xs)-i))
		}
		if i > 0 || comma {
			b[n] = ','
			n++
		}
		v := int64(x)
		u := uint64(v)
		if v < 0 {
			b[n] = '-'
			n++
			u = -u
		}
		n = putUint(b, n, u)
	}
	return b[:n]
}

// IntList is the JSON array of a list of integers that grows between writes, kept from one write to the next: a
// list that extends the one written last costs only its new integers. A conversation's prompt is sent whole on
// every turn, one turn longer each time, so writing it whole would cost every turn the whole context.
//
// Lists are given either to Open (any slice: the IntList keeps a copy and compares) or to Extend (slices whose
// elements never change: no copy, and no comparison while the caller's array stays where it was).
//
// The zero value is an empty list, ready for use. An IntList is not safe for concurrent use.
type IntList[T Integer] struct {
	xs  []T    // the integers of the last Open (a copy: the caller's slice may change); nil after Extend
	src []T    // the slice given to the last Extend (the caller's, kept for its address and contents); nil after Open
	b   []byte // their array without its closing bracket: "[", "[1", "[1,2", ...
}

// Open returns xs as a JSON array without its closing bracket ("[" for an empty list, "[1,2" for 1, 2); the
// caller writes the ']'. When xs begins with the integers of the last Open only the rest are written; otherwise
// the array is written anew. reused is how many integers were kept.
//
// Knowing that xs extends the last list takes one comparison of the two (memory-speed, a fraction of writing
// them), so a caller that changed an integer it had given before still gets its own list, never a stale one.
//
// The returned bytes stay valid and unchanged after later calls (they only append past the end of earlier
// results, or write a new array), so they may be handed to a writer that outlives the call: an HTTP request body
// that the transport may still be sending after the response came back.
func (l *IntList[T]) Open(xs []T) (open []byte, reused int) {
	k := len(l.xs)
	if l.src != nil || k > len(xs) || !sameInts(l.xs, xs[:k]) {
		// a new array: the old one may still be being read
		k = 0
		l.xs, l.src = l.xs[:0], nil
		l.b = make([]byte, 1, 1+5*len(xs))
		l.b[0] = '['
	} else if l.b == nil {
		l.b = []byte{'['}
	}
	l.b = appendElems(l.b, xs[k:], k > 0)
	l.xs = append(l.xs, xs[k:]...)
	return l.b[:len(l.b):len(l.b)], k
}

// Extend is Open for a caller whose lists are append-only: it never changes an element of a slice it gave, so a
// later list either starts at the same address and extends the last one (the array grew in place), or lies
// elsewhere (the caller's array was moved, or it is another list). tito.Trajectory.NextRequest's token ids are
// such slices. At the same address and at least as long, xs is taken to begin with the last list without
// comparing them: only its new integers are written, in time proportional to them. Elsewhere it is compared with
// the last list (kept: the IntList holds the caller's slice, not a copy, so its memory is neither freed nor
// reused while the IntList holds it) as Open compares. The returned bytes behave as Open's.
//
// A caller that changes a given element in place breaks the contract and may get the array of its old list: give
// such lists to Open.
func (l *IntList[T]) Extend(xs []T) (open []byte, reused int) {
	k := len(l.src)
	if k == 0 || k > len(xs) || (unsafe.SliceData(xs) != unsafe.SliceData(l.src) && !sameInts(l.src, xs[:k])) {
		k = 0
		l.b = make([]byte, 1, 1+5*len(xs))
		l.b[0] = '['
	}
	l.b = appendElems(l.b, xs[k:], k > 0)
	l.xs, l.src = nil, xs[:len(xs):len(xs)]
	return l.b[:len(l.b):len(l.b)], k
}

// sameInts reports whether a and b hold the same integers, comparing their memory (a loop over the elements is
// several times slower).
func sameInts[T Integer](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	size := len(a) * int(unsafe.Sizeof(a[0]))
	return string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), size)) ==
		string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), size))
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// putUint writes u's decimal digits at b[n:] and returns their end.
func putUint(b []byte, n int, u uint64) int {
	end := n + 1
	for p := uint64(10); u >= p; p *= 10 {
		end++
		if p == 1e19 {
			break
		}
	}
	i := end
	for u > math.MaxUint32 { // digits beyond 32 bits (token ids have none) in 64-bit steps
		q := u / 100
		r := 2 * (u - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	v := uint32(u) // 32-bit division is the cheaper
	for v >= 100 {
		q := v / 100
		r := 2 * (v - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[2*v], digitPairs[2*v+1]
	} else {
		b[i-1] = byte('0' + v)
	}
	return end
}

// grow returns b with room for at least n more bytes, extended to its whole capacity.
func grow(b []byte, n int) []byte {
	b = slices.Grow(b, n)
	return b[:cap(b)]
}
