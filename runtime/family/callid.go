package family

import (
	"crypto/sha256"
	"fmt"
	"strings"
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
	// CallIDKimi: functions.NAME:N, N counting the conversation's calls from 0, as SGLang's OpenAI server names
	// Kimi K2's calls (kimi_k2: the calls in the request's history plus the call's index in the turn) and as Moonshot
	// documents them. Kimi K2's template renders a tool result as "## Return of ID": the model was trained on these
	// ids, not on call_0000.
	CallIDKimi
)

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Valid reports whether id has the style's form.
func (s CallIDStyle) Valid(id string) bool {
	switch s {
	case CallIDKimi:
		rest, ok := strings.CutPrefix(id, "functions.")
		colon := strings.LastIndexByte(rest, ':')
		return ok && colon > 0 && colon < len(rest)-1 && strings.Trim(rest[colon+1:], "0123456789") == ""
	case CallIDAlnum9:
	default:
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

// ID makes the id of the i-th call of a model turn, a call to name after prior calls in the conversation's
// earlier messages. It is a function of its arguments (seed: the episode id and turn), so a rerun of the same
// episode writes the same ids and its tokens are reproducible; CallIDAlnum9 ids are the first 9 base-62 digits
// of sha256(seed/i), unique enough within one conversation; CallIDKimi ids are functions.NAME:(prior+i).
func (s CallIDStyle) ID(seed string, i int, name string, prior int) string {
	switch s {
	case CallIDKimi:
		return fmt.Sprintf("functions.%s:%d", name, prior+i)
	case CallIDAlnum9:
	default:
		return fmt.Sprintf("call_%04d", i)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", seed, i))
	var id [9]byte
	for k := range id {
		id[k] = alnum[int(sum[k])%len(alnum)]
	}
	return string(id[:])
}
