package tito

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// PieceCache encodes exactly like Tokenizer.Encode (without special tokens added) but remembers the ids of
// the text between added tokens, so the parts of prompts that repeat across episodes (system prompt, tool
// specs, template glue) are tokenized once.
//
// It is exact because Hugging Face tokenizers split the input on added tokens before normalizing and
// pre-tokenizing: each piece between two added tokens is encoded on its own, whatever surrounds it. That holds
// when every added token is matched verbatim (no single_word, lstrip, rstrip or normalized flag), which
// NewPieceCache checks; otherwise, and for text with U+0000 or invalid UTF-8, Encode falls back to the
// tokenizer. Added tokens are matched leftmost-longest, as the library does. Safe for concurrent use.
type PieceCache struct {
	tok      *Tokenizer
	verbatim bool // every added token is matched verbatim: pieces can be cached
	// byFirst are the candidates by first byte, longest first: an array, since Encode looks up every byte of
	// the text (a map lookup per byte was most of a cached encode's time)
	byFirst [256][]AddedToken
	max     int

	mu     sync.RWMutex
	pieces map[string][]int32
}

// NewPieceCache returns a cache of at most maxPieces pieces over tok (it is cleared when full). Pieces longer
// than 64 KiB are not kept.
func NewPieceCache(tok *Tokenizer, maxPieces int) *PieceCache {
	c := &PieceCache{tok: tok, max: maxPieces, pieces: map[string][]int32{}}
	for _, a := range tok.AddedTokens() {
		if a.SingleWord || a.LStrip || a.RStrip || a.Normalized || a.Content == "" {
			return c // not a verbatim split: always use the tokenizer
		}
		c.byFirst[a.Content[0]] = append(c.byFirst[a.Content[0]], a)
	}
	c.verbatim = true
	for _, list := range c.byFirst {
		sort.SliceStable(list, func(i, j int) bool { return len(list[i].Content) > len(list[j].Content) })
	}
	return c
}

// Decode is Tokenizer.Decode.
func (c *PieceCache) Decode(ids []int32, skipSpecialTokens bool) string {
	return c.tok.Decode(ids, skipSpecialTokens)
}

// Encode returns what c's tokenizer's Encode returns.
func (c *PieceCache) Encode(text string, addSpecialTokens bool) []int32 {
	if !c.verbatim || addSpecialTokens || strings.IndexByte(text, 0) >= 0 || !utf8.ValidString(text) {
		return c.tok.Encode(text, addSpecialTokens)
	}
	var out []int32
	start := 0
	for i := 0; i < len(text); {
		a, ok := c.match(text[i:])
		if !ok {
			i++
			continue
		}
		out = append(out, c.piece(text[start:i])...)
		out = append(out, a.ID)
		i += len(a.Content)
		start = i
	}
	return append(out, c.piece(text[start:])...)
}

func (c *PieceCache) match(s string) (AddedToken, bool) {
	for _, a := range c.byFirst[s[0]] {
		if strings.HasPrefix(s, a.Content) {
			return a, true
		}
	}
	return AddedToken{}, false
}

func (c *PieceCache) piece(p string) []int32 {
	if p == "" {
		return nil
	}
	c.mu.RLock()
	ids, ok := c.pieces[p]
	c.mu.RUnlock()
	if ok {
		return ids
	}
	ids = c.tok.Encode(p, false)
	if len(p) <= 64<<10 {
		c.mu.Lock()
		if len(c.pieces) >= c.max {
			clear(c.pieces)
		}
		c.pieces[strings.Clone(p)] = ids
		c.mu.Unlock()
	}
	return ids
}
