package emulator

import (
	"strconv"
	"unicode/utf8"
)

// appendResponse writes r as encoding/json would (without HTML escaping), without reflection: the /generate
// hot path. A test checks it against encoding/json.
func appendResponse(b []byte, r *genResponse) []byte {
	b = append(b, `{"text":`...)
	b = appendString(b, r.Text)
	b = append(b, `,"output_ids":`...)
	b = appendIDs(b, r.OutputIDs)
	if len(r.PromptTokenIDs) > 0 {
		b = append(b, `,"prompt_token_ids":`...)
		b = appendIDs(b, r.PromptTokenIDs)
	}
	b = append(b, `,"meta_info":`...)
	switch m := r.MetaInfo.(type) {
	case *metaInfo:
		b = appendMeta(b, m)
	case *waitingAbortMeta:
		b = append(b, `{"id":`...)
		b = appendString(b, m.ID)
		b = append(b, `,"finish_reason":`...)
		fr, _ := m.FinishReason.MarshalJSON()
		b = append(b, fr...)
		b = append(b, `,"weight_version":`...)
		b = appendString(b, m.WeightVersion)
		b = append(b, `,"e2e_latency":`...)
		b = appendFloat(b, m.E2ELatency)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
		b = append(b, `,"response_sent_to_client_ts":`...)
		b = appendFloat(b, m.ResponseSentToClientTS)
		b = append(b, '}')
	default:
		b = append(b, "null"...)
	}
	if r.Index != nil {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(*r.Index), 10)
	}
	return append(b, '}')
}

func appendMeta(b []byte, m *metaInfo) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"finish_reason":`...)
	if m.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		fr, _ := m.FinishReason.MarshalJSON()
		b = append(b, fr...)
	}
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, `,"weight_version":`...)
	b = appendString(b, m.WeightVersion)
	for i, w := range m.WeightVersions {
		if i == 0 {
			b = append(b, `,"weight_versions":[`...)
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"version":`...)
		b = appendString(b, w.Version)
		b = append(b, `,"start":`...)
		b = strconv.AppendInt(b, int64(w.Start), 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, int64(w.End), 10)
		b = append(b, '}')
		if i == len(m.WeightVersions)-1 {
			b = append(b, ']')
		}
	}
	b = append(b, `,"num_retractions":`...)
	b = strconv.AppendInt(b, int64(m.NumRetractions), 10)
	if m.InputTokenLogprobs != nil {
		b = append(b, `,"input_token_logprobs":`...)
		b = m.InputTokenLogprobs.appendJSON(b)
	}
	if m.OutputTokenLogprobs != nil {
		b = append(b, `,"output_token_logprobs":`...)
		b = m.OutputTokenLogprobs.appendJSON(b)
	}
	if m.OutputTokenLogprobsLen != nil {
		b = append(b, `,"output_token_logprobs_length":`...)
		b = strconv.AppendInt(b, int64(*m.OutputTokenLogprobsLen), 10)
	}
	for _, f := range []struct {
		key string
		v   *topLists
	}{
		{`,"input_top_logprobs":`, m.InputTopLogprobs}, {`,"output_top_logprobs":`, m.OutputTopLogprobs},
		{`,"input_token_ids_logprobs":`, m.InputTokenIDsLogprobs}, {`,"output_token_ids_logprobs":`, m.OutputTokenIDsLogprobs},
	} {
		if f.v != nil {
			b = append(b, f.key...)
			t, _ := f.v.MarshalJSON()
			b = append(b, t...)
		}
	}
	b = append(b, `,"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(m.ReasoningTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CachedTokens), 10)
	b = append(b, `,"cached_tokens_details":`...)
	if d := m.CachedTokensDetails; d == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"device":`...)
		b = strconv.AppendInt(b, int64(d.Device), 10)
		b = append(b, `,"host":`...)
		b = strconv.AppendInt(b, int64(d.Host), 10)
		b = append(b, '}')
	}
	b = append(b, `,"dp_rank":`...)
	if m.DPRank == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*m.DPRank), 10)
	}
	if m.E2ELatency != nil {
		b = append(b, `,"e2e_latency":`...)
		b = appendFloat(b, *m.E2ELatency)
	}
	if m.ResponseSentToClientTS != nil {
		b = append(b, `,"response_sent_to_client_ts":`...)
		b = appendFloat(b, *m.ResponseSentToClientTS)
	}
	return append(b, '}')
}

func appendIDs(b []byte, ids []int32) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s like encoding/json with HTML escaping off: control characters, quote and backslash
// escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
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
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
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
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
