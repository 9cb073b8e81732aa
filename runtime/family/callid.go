package family

import (
	"crypto/sha256"
	"fmt"
)

// CallIDStyle is the form of tool call ids a family's template accepts. The agent loop keeps an id the parser
// read from the model's output when it has this form, and otherwise makes one with [CallIDStyle.ID].
type CallIDStyle int

const (
	// CallIDDefault: any id; made ones are call_0000, call_0001, ... (the built-in parsers' numbering).
	CallIDDefault CallIDStyle = iota
	// CallIDAlnum9: exactly 9 ASCII letters and digits, as Mistral's templates require (they raise "Tool call IDs
	// should be alphanumeric strings with length 9!") and as vLLM and mistral-common generate them.
	CallIDAlnum9
)

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Valid reports whether id has the style's form.
func (s CallIDStyle) Valid(id string) bool {
	if s != CallIDAlnum9 {
		return id != ""
	}
	if len(id) != 9 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// ID makes the id of the i-th call of a model turn. It is a function of seed (the episode id and turn) and i, so
// a rerun of the same episode writes the same ids and its tokens are reproducible; CallIDAlnum9 ids are the
// first 9 base-62 digits of sha256(seed/i), unique enough within one conversation.
func (s CallIDStyle) ID(seed string, i int) string {
	if s != CallIDAlnum9 {
		return fmt.Sprintf("call_%04d", i)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", seed, i))
	var id [9]byte
	for k := range id {
		id[k] = alnum[int(sum[k])%len(alnum)]
	}
	return string(id[:])
}
