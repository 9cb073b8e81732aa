package tito

import (
	"strings"
	"unicode/utf8"
)

// byteLevelTable is GPT-2's bytes_to_unicode map, used by Hugging Face's ByteLevel pre-tokenizer and decoder:
// printable Latin-1 bytes map to themselves, the other bytes to U+0100 upwards in byte order.
type byteLevelTable struct {
	toRune [256]rune
	toByte map[rune]byte
}

func newByteLevelTable() *byteLevelTable {
	t := &byteLevelTable{toByte: make(map[rune]byte, 256)}
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := range 256 {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		t.toRune[b] = r
		t.toByte[r] = byte(b)
	}
	return t
}

// lossyUTF8 converts bytes to a string the way Rust's String::from_utf8_lossy (and Python's
// bytes.decode("utf-8", "replace")) does: each maximal prefix of an invalid sequence becomes one U+FFFD.
// Go's strings.ToValidUTF8 differs: it folds whole runs of bad bytes into one replacement.
func lossyUTF8(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); {
		c := p[i]
		if c < 0x80 {
			b.WriteByte(c)
			i++
			continue
		}
		width, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			width = 2
		case c == 0xE0:
			width, lo = 3, 0xA0
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			width = 3
		case c == 0xED:
			width, hi = 3, 0x9F
		case c == 0xF0:
			width, lo = 4, 0x90
		case c >= 0xF1 && c <= 0xF3:
			width = 4
		case c == 0xF4:
			width, hi = 4, 0x8F
		}
		if width == 0 {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		for k := 1; k < width && j < len(p); k++ {
			l, h := byte(0x80), byte(0xBF)
			if k == 1 {
				l, h = lo, hi
			}
			if p[j] < l || p[j] > h {
				break
			}
			j++
		}
		if j-i == width {
			b.Write(p[i:j])
		} else {
			b.WriteRune(utf8.RuneError)
		}
		i = j
	}
	return b.String()
}
