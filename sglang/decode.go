package sglang

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// fastDecode decodes a /generate response body without reflection for its bulky parts (output_ids and the
// token logprob lists; a 4k-token answer has 8k numbers in them). It handles exactly what SGLang sends;
// anything it is not sure about (escapes in keys, numbers of the wrong kind, a value of an unexpected
// type, trailing data) makes it give up (ok false), and the caller decodes with encoding/json instead,
// which then produces the result or the error. finish_reason is read here too (its usual keys); rare fields (top
// logprobs, cached token details, weight spans, dp_rank) are handed to encoding/json unless null, so their
// semantics are encoding/json's.
//
// FuzzDecodeResponse checks that whenever fastDecode succeeds, encoding/json gives the same value.
func fastDecode(b []byte) (w responseWire, ok bool) {
	s := scanner{b: b}
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "text":
			return s.stringInto(&w.Text)
		case "output_ids":
			return s.int32sInto(&w.OutputIDs)
		case "meta_info":
			if s.null() {
				w.MetaInfo = nil
				return true
			}
			if w.MetaInfo == nil {
				w.MetaInfo = new(MetaInfo)
			}
			return s.metaInfo(w.MetaInfo)
		}
		return s.unknownKey(key, "text", "output_ids", "meta_info")
	})
	if !ok {
		return responseWire{}, false
	}
	s.ws()
	return w, s.i == len(s.b)
}

func (s *scanner) metaInfo(m *MetaInfo) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.stringInto(&m.ID)
		case "weight_version":
			return s.stringInto(&m.WeightVersion)
		case "weight_versions":
			return nullOrDelegate(s, &m.WeightVersions)
		case "prompt_tokens":
			return s.intInto(&m.PromptTokens)
		case "completion_tokens":
			return s.intInto(&m.CompletionTokens)
		case "cached_tokens":
			return s.intInto(&m.CachedTokens)
		case "reasoning_tokens":
			return s.intInto(&m.ReasoningTokens)
		case "num_retractions":
			return s.intInto(&m.NumRetractions)
		case "output_token_logprobs_length":
			return s.intInto(&m.OutputTokenLogprobsLength)
		case "e2e_latency":
			return s.floatInto(&m.E2ELatency)
		case "response_sent_to_client_ts":
			return s.floatInto(&m.ResponseSentToClientTS)
		case "output_token_logprobs":
			return s.entriesInto(&m.OutputTokenLogprobs)
		case "input_token_logprobs":
			return s.entriesInto(&m.InputTokenLogprobs)
		case "finish_reason":
			return s.finishReason(&m.FinishReason)
		case "input_top_logprobs":
			return nullOrDelegate(s, &m.InputTopLogprobs)
		case "output_top_logprobs":
			return nullOrDelegate(s, &m.OutputTopLogprobs)
		case "cached_tokens_details":
			return nullOrDelegate(s, &m.CachedTokensDetails)
		case "dp_rank":
			return nullOrDelegate(s, &m.DPRank)
		}
		return s.unknownKey(key, metaInfoKeys...)
	})
}

// finishReason decodes finish_reason as FinishReason.UnmarshalJSON does (null leaves *dst nil), for the keys
// SGLang writes; any other key that encoding/json would match to a field (case-insensitively) gives up, and the
// rest are skipped, as encoding/json ignores them. Every response has one: handing it to encoding/json cost a
// turn ~10-20 µs of reflection (bench/results/long-horizon.md, Phase 4).
func (s *scanner) finishReason(dst **FinishReason) bool {
	if s.null() {
		*dst = nil
		return true
	}
	var out FinishReason
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return s.stringInto(&out.Type)
		case "matched": // null, a stop token id (int32) or a stop string; the last one given counts
			out.MatchedTokenID, out.MatchedText = 0, ""
			switch s.peek() {
			case 'n':
				return s.null()
			case '"':
				return s.stringInto(&out.MatchedText)
			}
			id, ok := s.integer(32)
			out.MatchedTokenID = int32(id)
			return ok
		case "length":
			return s.intInto(&out.Length)
		case "message":
			return s.stringInto(&out.Message)
		case "status_code": // null is 0
			out.StatusCode = 0
			return s.intInto(&out.StatusCode)
		case "err_type": // null is ""
			out.ErrType = ""
			return s.stringInto(&out.ErrType)
		}
		return s.unknownKey(key, "type", "matched", "length", "message", "status_code", "err_type")
	})
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = new(FinishReason)
	}
	**dst = out
	return true
}

// nullOrDelegate decodes a value that SGLang usually sends as null into *dst (a pointer, slice or map: null is its
// zero value, as encoding/json sets it), and hands anything else to encoding/json.
func nullOrDelegate[T any](s *scanner, dst *T) bool {
	if s.null() {
		var zero T
		*dst = zero
		return true
	}
	return s.delegate(dst)
}

var metaInfoKeys = []string{"id", "weight_version", "weight_versions", "prompt_tokens", "completion_tokens", "cached_tokens",
	"reasoning_tokens", "num_retractions", "output_token_logprobs_length", "e2e_latency",
	"response_sent_to_client_ts", "output_token_logprobs", "input_token_logprobs", "finish_reason",
	"input_top_logprobs", "output_top_logprobs", "cached_tokens_details", "dp_rank"}

// scanner is a minimal JSON reader over b.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\n', '\t', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object walks an object, calling f with each key (escape-free keys only) positioned at the value.
func (s *scanner) object(f func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, ok := s.rawString()
		if !ok || !s.eat(':') {
			return false
		}
		if !f(key) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// rawString returns the contents of a string without escapes or invalid UTF-8 (ok false otherwise).
func (s *scanner) rawString() ([]byte, bool) {
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			if !utf8.Valid(s.b[start:j]) {
				return nil, false
			}
			return s.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// unknownKey skips the value of a key the Go types do not have. A key that encoding/json would match
// case-insensitively to a known one is left to encoding/json.
func (s *scanner) unknownKey(key []byte, known ...string) bool {
	for _, k := range known {
		if len(k) == len(key) && equalFoldASCII(k, key) {
			return false
		}
	}
	return s.skip(0)
}

func equalFoldASCII(a string, b []byte) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y || b[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// skip steps over one value of any type.
func (s *scanner) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch s.peek() {
	case '{':
		return s.object(func([]byte) bool { return s.skip(depth + 1) })
	case '[':
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case '"':
		s.i++
		for s.i < len(s.b) {
			c := s.b[s.i]
			s.i++
			switch {
			case c == '"':
				return true
			case c == '\\':
				if !s.escape() {
					return false
				}
			case c < 0x20:
				return false
			}
		}
		return false
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	_, ok := s.number()
	return ok
}

// escape checks and steps over the escape after a backslash.
func (s *scanner) escape() bool {
	if s.i >= len(s.b) {
		return false
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if len(s.b)-s.i < 4 {
			return false
		}
		for _, h := range s.b[s.i : s.i+4] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number scans a JSON number (RFC 8259 grammar) and returns its text.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	end, _, ok := jsonw.NumberEnd(s.b, s.i)
	if !ok {
		return nil, false
	}
	tok := s.b[s.i:end]
	s.i = end
	return tok, true
}

// integer scans a JSON integer (no fraction or exponent) that fits in bits.
func (s *scanner) integer(bits int) (int64, bool) {
	tok, ok := s.number()
	if !ok {
		return 0, false
	}
	var v int64
	neg := tok[0] == '-'
	digits := tok
	if neg {
		digits = tok[1:]
	}
	if len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false // fraction or exponent: encoding/json rejects it for an int
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	if bits < 64 {
		lim := int64(1) << (bits - 1)
		if v < -lim || v >= lim {
			return 0, false
		}
	}
	return v, true
}

func (s *scanner) intInto(dst *int) bool {
	if s.null() {
		return true
	}
	v, ok := s.integer(64)
	*dst = int(v)
	return ok
}

func (s *scanner) floatInto(dst *float64) bool {
	if s.null() {
		return true
	}
	tok, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	*dst = f
	return err == nil
}

func (s *scanner) stringInto(dst *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	start := s.i
	if raw, ok := s.rawString(); ok {
		*dst = string(raw)
		return true
	}
	// escapes (common in generated text) or invalid UTF-8: unquoted as encoding/json does
	v, end, ok := jsonw.Unquote(s.b[start:])
	if !ok {
		return false
	}
	*dst, s.i = v, start+end
	return true
}

func (s *scanner) int32sInto(dst *[]int32) bool {
	if s.null() {
		*dst = nil
		return true
	}
	if !s.eat('[') {
		return false
	}
	out := make([]int32, 0, s.countHint())
	if s.eat(']') {
		*dst = out
		return true
	}
	for {
		v, ok := s.integer(32)
		if !ok {
			return false
		}
		out = append(out, int32(v))
		if s.eat(',') {
			continue
		}
		if !s.eat(']') {
			return false
		}
		*dst = out
		return true
	}
}

// countHint estimates the elements of the array starting at s.i by counting commas up to its first ']'
// (exact for flat arrays; an overestimate is harmless).
func (s *scanner) countHint() int {
	n := 1
	for j := s.i; j < len(s.b) && j < s.i+1<<20; j++ {
		switch s.b[j] {
		case ',':
			n++
		case ']':
			return n
		}
	}
	return n
}

// entriesInto reads a list of [logprob|null, token_id, text|null] triples.
func (s *scanner) entriesInto(dst *[]LogprobEntry) bool {
	if s.null() {
		*dst = nil
		return true
	}
	if !s.eat('[') {
		return false
	}
	out := make([]LogprobEntry, 0, s.countHint()/3+1)
	if s.eat(']') {
		*dst = out
		return true
	}
	for {
		var e LogprobEntry
		if !s.null() { // a null element leaves a zero entry, as encoding/json does
			if !s.eat('[') {
				return false
			}
			if s.null() {
				e.Null = true
			} else {
				tok, ok := s.number()
				if !ok {
					return false
				}
				f, err := strconv.ParseFloat(string(tok), 64)
				if err != nil {
					return false
				}
				e.Logprob = f
			}
			if !s.eat(',') {
				return false
			}
			id, ok := s.integer(32)
			if !ok {
				return false
			}
			e.TokenID = int32(id)
			if s.eat(',') {
				if !s.null() {
					var t string
					if !s.stringInto(&t) {
						return false
					}
					e.Text = &t
				}
			}
			if !s.eat(']') {
				return false
			}
		}
		out = append(out, e)
		if s.eat(',') {
			continue
		}
		if !s.eat(']') {
			return false
		}
		*dst = out
		return true
	}
}

// delegate decodes the next value into v with encoding/json.
func (s *scanner) delegate(v any) bool {
	s.ws()
	start := s.i
	if !s.skip(0) {
		return false
	}
	return json.Unmarshal(s.b[start:s.i], v) == nil
}
