package emulator

import (
	"strconv"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// appendResponse writes r as SGLang's orjson does (strings, floats and id lists by internal/jsonw, whose policy is
// orjson's), without reflection: the /generate hot path. A test checks it against encoding/json.
func appendResponse(b []byte, r *genResponse) []byte {
	b = append(b, `{"text":`...)
	b = jsonw.AppendString(b, r.Text)
	b = append(b, `,"output_ids":`...)
	b = jsonw.AppendInts(b, r.OutputIDs)
	if len(r.PromptTokenIDs) > 0 {
		b = append(b, `,"prompt_token_ids":`...)
		b = jsonw.AppendInts(b, r.PromptTokenIDs)
	}
	b = append(b, `,"meta_info":`...)
	switch m := r.MetaInfo.(type) {
	case *metaInfo:
		b = appendMeta(b, m)
	case *waitingAbortMeta:
		b = append(b, `{"id":`...)
		b = jsonw.AppendString(b, m.ID)
		b = append(b, `,"finish_reason":`...)
		b = m.FinishReason.appendJSON(b)
		b = append(b, `,"weight_version":`...)
		b = jsonw.AppendString(b, m.WeightVersion)
		b = append(b, `,"e2e_latency":`...)
		b = jsonw.AppendFloat(b, m.E2ELatency)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
		b = append(b, `,"response_sent_to_client_ts":`...)
		b = jsonw.AppendFloat(b, m.ResponseSentToClientTS)
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
	b = jsonw.AppendString(b, m.ID)
	b = append(b, `,"finish_reason":`...)
	if m.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = m.FinishReason.appendJSON(b)
	}
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, `,"weight_version":`...)
	b = jsonw.AppendString(b, m.WeightVersion)
	for i, w := range m.WeightVersions {
		if i == 0 {
			b = append(b, `,"weight_versions":[`...)
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"version":`...)
		b = jsonw.AppendString(b, w.Version)
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
			b = f.v.appendJSON(b)
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
		b = jsonw.AppendFloat(b, *m.E2ELatency)
	}
	if m.ResponseSentToClientTS != nil {
		b = append(b, `,"response_sent_to_client_ts":`...)
		b = jsonw.AppendFloat(b, *m.ResponseSentToClientTS)
	}
	return append(b, '}')
}
