package sglang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// Finish reason types, the values of FinishReason.Type.
const (
	FinishStop   = "stop"   // a stop token or stop string was generated (FinishReason.Matched*)
	FinishLength = "length" // max_new_tokens (or the context limit) was reached (FinishReason.Length)
	FinishAbort  = "abort"  // the request was aborted (FinishReason.Message, StatusCode, ErrType)
)

// GenerateRequest is the body of one non-batch POST /generate (SGLang's GenerateReqInput).
//
// Its JSON form follows SGLang exactly: unset optional fields are omitted so the server's defaults apply,
// sampling_params.max_new_tokens is always sent (the server default is 128), and Extra is merged into the
// top-level object. Decoding (for servers such as the emulator) accepts what SGLang accepts for a single
// request: unknown top-level keys land in Extra, and an absent logprob_start_len decodes as -1.
type GenerateRequest struct {
	// InputIDs are the prompt token ids. Exactly one of InputIDs and Text must be set.
	InputIDs []int32 `json:"input_ids,omitempty"`
	// Text is a text prompt, tokenized by the server (with special tokens added). TITO clients use InputIDs.
	Text string `json:"text,omitempty"`
	// SamplingParams are the sampling parameters.
	SamplingParams SamplingParams `json:"sampling_params"`
	// ReturnLogprob asks for meta_info.output_token_logprobs (and input logprobs from LogprobStartLen).
	ReturnLogprob bool `json:"return_logprob,omitempty"`
	// LogprobStartLen is the first prompt position that gets an input logprob; -1 means none. It is sent only
	// when ReturnLogprob is set (SGLang ignores it otherwise), so its zero value 0 means "the whole prompt".
	LogprobStartLen int `json:"logprob_start_len"`
	// TopLogprobsNum asks for that many top alternatives per position (0: none).
	TopLogprobsNum int `json:"top_logprobs_num,omitempty"`
	// ReturnTextInLogprobs asks for the decoded text of each logprob entry.
	ReturnTextInLogprobs bool `json:"return_text_in_logprobs,omitempty"`
	// RID is the request id (SGLang's default is a uuid4 hex). It is what /abort_request matches.
	RID string `json:"rid,omitempty"`
	// Stream asks for SSE streaming. Client.Generate always sends false.
	Stream bool `json:"stream"`
	// Extra holds further top-level keys (for example "extra_key", "session_params"), merged into the JSON
	// object. A key that names a field above is an error when encoding.
	Extra map[string]any `json:"-"`
	// IDsCache, if set, keeps InputIDs' JSON from one request to the next, so that a request whose InputIDs extend
	// the previous one's (a conversation's next turn) encodes only the new ids. The body is the same bytes with
	// it or without. Never on the wire.
	IDsCache *IDsCache `json:"-"`
	// IDsAppendOnly promises the IDsCache that InputIDs are append-only: the caller never changes an element of
	// ids it gave, so a later request's InputIDs at the same address extend them (tito.Trajectory.NextRequest's
	// are). The cache then takes the kept ids as they are instead of comparing them (jsonw.IntList.Extend): a
	// turn's cost no longer includes reading the whole context. Without it (or for ids that moved) they are
	// compared. Never on the wire.
	IDsAppendOnly bool `json:"-"`
}

// IDsCache keeps a conversation's input_ids encoded between its requests (GenerateRequest.IDsCache): each turn
// sends the whole conversation again, one turn longer, and encoding all of it every turn made a turn's cost grow
// with the context. A request whose InputIDs begin with the previous request's encodes only the rest; any other is
// encoded anew, so a cache shared by mistake, or ids changed in place, cost time but never send stale ids. Knowing
// that they begin with the previous ids takes a comparison of the two (memory-speed), unless the request is
// IDsAppendOnly and its ids lie where the previous ones did. Prompts under 8,192 ids are encoded whole and leave
// the cache alone.
//
// The zero value is ready for use. An IDsCache is for one conversation's requests, one at a time (as a
// conversation makes them): it is not safe for concurrent use. It holds the ids' JSON (about 5 bytes a token) and
// a copy of the ids (4 bytes a token; for IDsAppendOnly requests the caller's slice instead) until it is dropped.
type IDsCache struct {
	list jsonw.IntList[int32]
}

// SamplingParams is SGLang's sampling_params object. Pointer fields and empty values are omitted, so the
// server's defaults apply; MaxNewTokens is always sent.
type SamplingParams struct {
	// MaxNewTokens bounds the number of generated tokens. Always sent; 0 generates nothing.
	MaxNewTokens int `json:"max_new_tokens"`
	// Temperature (server default 1.0); below 1e-6 SGLang samples greedily.
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP in (0, 1] (server default 1.0).
	TopP *float64 `json:"top_p,omitempty"`
	// TopK, -1 for all (server default all).
	TopK *int `json:"top_k,omitempty"`
	// MinP in [0, 1] (server default 0).
	MinP *float64 `json:"min_p,omitempty"`
	// FrequencyPenalty in [-2, 2] (server default 0).
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	// PresencePenalty in [-2, 2] (server default 0).
	PresencePenalty *float64 `json:"presence_penalty,omitempty"`
	// RepetitionPenalty in (0, 2] (server default 1).
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	// MinNewTokens (server default 0).
	MinNewTokens *int `json:"min_new_tokens,omitempty"`
	// Stop are stop strings. Sent as a JSON list; a single string decodes too.
	Stop []string `json:"stop,omitempty"`
	// StopTokenIDs are stop token ids, added to the model's EOS ids.
	StopTokenIDs []int32 `json:"stop_token_ids,omitempty"`
	// IgnoreEOS disables every token-based stop, stop_token_ids included.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
	// SkipSpecialTokens affects text only, never output_ids (server default true).
	SkipSpecialTokens *bool `json:"skip_special_tokens,omitempty"`
	// SpacesBetweenSpecialTokens affects text only (server default true).
	SpacesBetweenSpecialTokens *bool `json:"spaces_between_special_tokens,omitempty"`
	// NoStopTrim keeps the matched stop in text; output_ids always keep it.
	NoStopTrim bool `json:"no_stop_trim,omitempty"`
	// JSONSchema is a JSON-encoded schema string for constrained decoding.
	JSONSchema string `json:"json_schema,omitempty"`
	// Regex constrains decoding to a regular expression.
	Regex string `json:"regex,omitempty"`
	// SamplingSeed is SGLang's sampling_seed (there is no "seed" key); it takes effect only on servers
	// started with --enable-deterministic-inference.
	SamplingSeed *int64 `json:"sampling_seed,omitempty"`
	// Extra holds further keys of SamplingParamNames (for example "logit_bias", "stop_regex"), merged into the
	// JSON object. SGLang answers a key outside SamplingParamNames with HTTP 400. Decoding puts unknown keys here.
	Extra map[string]any `json:"-"`
}

// GenerateResponse is the non-stream response to one /generate request.
type GenerateResponse struct {
	// Text is the detokenized output (stop trimmed unless no_stop_trim).
	Text string `json:"text"`
	// OutputIDs are the generated ids, the stop token included.
	OutputIDs []int32 `json:"output_ids"`
	// MetaInfo is SGLang's meta_info.
	MetaInfo MetaInfo `json:"meta_info"`

	// Server is the base URL of the worker (or gateway) that answered. Set by Client, never on the wire.
	Server string `json:"-"`
	// Attempts is how many HTTP attempts the Client made (1 without retries). Set by Client.
	Attempts int `json:"-"`
	// ClientTime is the Client's own work on the answered attempt (encoding the request, decoding the
	// response), as opposed to waiting on the network and the server. Set by Client.
	ClientTime time.Duration `json:"-"`
}

// WeightSpan says output positions [Start, End) were generated by weights Version (meta_info.weight_versions).
type WeightSpan struct {
	Version string `json:"version"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
}

// MetaInfo is the meta_info object of a /generate response. Fields SGLang sends that are not listed are
// ignored when decoding.
type MetaInfo struct {
	// ID is the request id (rid).
	ID string `json:"id"`
	// FinishReason is nil only in unfinished stream chunks.
	FinishReason *FinishReason `json:"finish_reason"`
	// PromptTokens is the prompt length (absent for requests aborted while waiting).
	PromptTokens int `json:"prompt_tokens"`
	// WeightVersion is the server's weight version ("default" unless set).
	WeightVersion string `json:"weight_version"`
	// WeightVersions lists the weight versions that generated the output, one span per version: a request
	// generated across a weight update has two, and WeightVersion is then the last one's.
	WeightVersions []WeightSpan `json:"weight_versions,omitzero"`
	// NumRetractions counts how often the request was retracted.
	NumRetractions int `json:"num_retractions"`
	// InputTokenLogprobs cover prompt positions logprob_start_len.. (the first entry's logprob is null).
	InputTokenLogprobs []LogprobEntry `json:"input_token_logprobs,omitzero"`
	// OutputTokenLogprobs has one entry per element of output_ids.
	OutputTokenLogprobs []LogprobEntry `json:"output_token_logprobs,omitzero"`
	// OutputTokenLogprobsLength is len(OutputTokenLogprobs) as the server reports it.
	OutputTokenLogprobsLength int `json:"output_token_logprobs_length,omitzero"`
	// InputTopLogprobs has top_logprobs_num entries per prompt position (nil where the server sent null).
	InputTopLogprobs [][]LogprobEntry `json:"input_top_logprobs,omitzero"`
	// OutputTopLogprobs has top_logprobs_num entries per output position.
	OutputTopLogprobs [][]LogprobEntry `json:"output_top_logprobs,omitzero"`
	// ReasoningTokens counts reasoning tokens.
	ReasoningTokens int `json:"reasoning_tokens"`
	// CompletionTokens equals len(output_ids).
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens is the number of prompt tokens served from the radix cache.
	CachedTokens int `json:"cached_tokens"`
	// CachedTokensDetails is null unless there was a cache hit.
	CachedTokensDetails *CachedTokensDetails `json:"cached_tokens_details"`
	// DPRank is null at data-parallel size 1.
	DPRank *int `json:"dp_rank"`
	// E2ELatency is the end-to-end latency in seconds.
	E2ELatency float64 `json:"e2e_latency"`
	// ResponseSentToClientTS is a unix time in seconds.
	ResponseSentToClientTS float64 `json:"response_sent_to_client_ts,omitzero"`
}

// CachedTokensDetails splits cached_tokens by cache tier.
type CachedTokensDetails struct {
	Device         int    `json:"device"`
	Host           int    `json:"host"`
	Storage        int    `json:"storage,omitzero"`
	StorageBackend string `json:"storage_backend,omitzero"`
}

// FinishReason is meta_info.finish_reason: {"type":"stop","matched":id|"str"}, {"type":"length","length":n}
// or {"type":"abort","message":...,"status_code":n|null,"err_type":s|null}.
type FinishReason struct {
	// Type is FinishStop, FinishLength or FinishAbort.
	Type string
	// MatchedTokenID is the stop token id for a stop on a token (when MatchedText is empty).
	MatchedTokenID int32
	// MatchedText is the stop string (or regex, or "NaN happened") for a stop on text.
	MatchedText string
	// Length is the effective max_new_tokens of a length finish.
	Length int
	// Message is an abort's message ("Aborted", "Abort in waiting queue", or the error).
	Message string
	// StatusCode is an abort's HTTP status (0 when the server sent null).
	StatusCode int
	// ErrType is an abort's error type ("" when the server sent null).
	ErrType string
}

// LogprobEntry is one [logprob, token_id, text] triple of SGLang's logprob lists.
type LogprobEntry struct {
	// Logprob is the log probability; meaningless when Null is set.
	Logprob float64
	// TokenID is the token.
	TokenID int32
	// Null reports that the server sent null for the logprob (the first input logprob always is).
	Null bool
	// Text is the token's text, or nil when the server sent null (return_text_in_logprobs unset).
	Text *string
}

// ModelInfo is the response of GET /model_info.
type ModelInfo struct {
	ModelPath               string         `json:"model_path"`
	TokenizerPath           string         `json:"tokenizer_path"`
	IsGeneration            bool           `json:"is_generation"`
	PreferredSamplingParams map[string]any `json:"preferred_sampling_params"`
	WeightVersion           string         `json:"weight_version"`
	HasImageUnderstanding   bool           `json:"has_image_understanding"`
	HasAudioUnderstanding   bool           `json:"has_audio_understanding"`
	ModelType               string         `json:"model_type"`
	Architectures           []string       `json:"architectures"`
}

// ModelList is the response of GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelCard `json:"data"`
}

// ModelCard is one entry of ModelList.
type ModelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len"`
}

// UpdateWeightsFromDiskRequest is the body of POST /update_weights_from_disk. Pointer fields left nil are
// omitted so the server defaults apply.
type UpdateWeightsFromDiskRequest struct {
	ModelPath          string  `json:"model_path"`
	LoadFormat         *string `json:"load_format,omitempty"`
	AbortAllRequests   bool    `json:"abort_all_requests,omitempty"`
	WeightVersion      *string `json:"weight_version,omitempty"`
	IsAsync            bool    `json:"is_async,omitempty"`
	TorchEmptyCache    bool    `json:"torch_empty_cache,omitempty"`
	KeepPause          bool    `json:"keep_pause,omitempty"`
	RecaptureCUDAGraph bool    `json:"recapture_cuda_graph,omitempty"`
	TokenStep          int     `json:"token_step,omitempty"`
	FlushCache         *bool   `json:"flush_cache,omitempty"`
}

// UpdateWeightsResponse is the response of the /update_weights_* endpoints.
type UpdateWeightsResponse struct {
	Success           bool   `json:"success"`
	Message           string `json:"message"`
	NumPausedRequests int    `json:"num_paused_requests"`
}

// Pause modes for Client.PauseGeneration (the "mode" of POST /pause_generation).
const (
	PauseAbort   = "abort"    // abort running and waiting requests, then block new ones
	PauseRetract = "retract"  // move running requests back to the waiting queue
	PauseInPlace = "in_place" // keep running requests and their KV cache
)

// --- JSON encoding -------------------------------------------------------------------------------------

var generateRequestKeys = []string{"input_ids", "text", "sampling_params", "return_logprob", "logprob_start_len",
	"top_logprobs_num", "return_text_in_logprobs", "rid", "stream"}

// SamplingParamNames are the keys of SGLang's sampling_params object, in the order of SGLang 0.5.23's
// SamplingParams (sglang/api/v1/api_types.py, which TestSGLangContract compares this list with). SGLang refuses
// any other key with HTTP 400 ("unknown field"). SamplingParams sends the common ones from typed fields and the
// rest from Extra.
var SamplingParamNames = []string{"max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p",
	"top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
	"json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
	"spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias", "sampling_seed",
	"custom_params", "beam_width", "watermark", "choice"}

var samplingParamsKeys = []string{"max_new_tokens", "temperature", "top_p", "top_k", "min_p", "frequency_penalty",
	"presence_penalty", "repetition_penalty", "min_new_tokens", "stop", "stop_token_ids", "ignore_eos",
	"skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim", "json_schema", "regex", "sampling_seed"}

// MarshalJSON encodes r as SGLang expects it (see GenerateRequest).
func (r *GenerateRequest) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 256+8*len(r.InputIDs)))
}

// appendJSON appends r's JSON encoding to b. It is the client's hot path: no reflection for the ids.
func (r *GenerateRequest) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	if r.InputIDs != nil {
		b = append(b, `"input_ids":`...)
		b = jsonw.AppendInts(b, r.InputIDs)
		b = append(b, ',')
	}
	return r.appendRest(b)
}

// idsCacheFrom is the prompt length from which an IDsCache is used: a shorter prompt is encoded whole, which costs
// little (tens of µs), and a conversation that stays short (most agent episodes) holds no cache memory.
const idsCacheFrom = 8 << 10

// idsHead opens a request body that starts with input_ids.
const idsHead = `{"input_ids":`

// body returns r's JSON encoding in parts, to be sent one after the other, and their total length. With an
// IDsCache and InputIDs the parts are idsHead, the ids' array (kept in the cache between requests: it must not be
// written to) and the rest; without, the whole encoding, appended to buf.
func (r *GenerateRequest) body(buf []byte) (parts [][]byte, n int, err error) {
	if r.IDsCache == nil || len(r.InputIDs) < idsCacheFrom {
		b, err := r.appendJSON(buf)
		return [][]byte{b}, len(b), err
	}
	var ids []byte
	if r.IDsAppendOnly {
		ids, _ = r.IDsCache.list.Extend(r.InputIDs)
	} else {
		ids, _ = r.IDsCache.list.Open(r.InputIDs)
	}
	rest, err := r.appendRest(append(buf, "],"...))
	if err != nil {
		return nil, 0, err
	}
	return [][]byte{[]byte(idsHead), ids, rest}, len(idsHead) + len(ids) + len(rest), nil
}

// appendRest appends what follows input_ids in r's encoding (the object's '{' and input_ids written before it).
func (r *GenerateRequest) appendRest(b []byte) ([]byte, error) {
	if r.Text != "" {
		b = append(b, `"text":`...)
		b = jsonw.AppendString(b, r.Text)
		b = append(b, ',')
	}
	b = append(b, `"sampling_params":`...)
	var err error
	if b, err = r.SamplingParams.appendJSON(b); err != nil {
		return nil, err
	}
	if r.ReturnLogprob {
		b = append(b, `,"return_logprob":true,"logprob_start_len":`...)
		b = strconv.AppendInt(b, int64(r.LogprobStartLen), 10)
		if r.TopLogprobsNum != 0 {
			b = append(b, `,"top_logprobs_num":`...)
			b = strconv.AppendInt(b, int64(r.TopLogprobsNum), 10)
		}
		if r.ReturnTextInLogprobs {
			b = append(b, `,"return_text_in_logprobs":true`...)
		}
	}
	if r.RID != "" {
		b = append(b, `,"rid":`...)
		b = jsonw.AppendString(b, r.RID)
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	} else {
		b = append(b, `,"stream":false`...)
	}
	if b, err = appendExtra(b, r.Extra, generateRequestKeys, "request"); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// MarshalJSON encodes p with unset fields omitted and Extra merged in.
func (p *SamplingParams) MarshalJSON() ([]byte, error) {
	return p.appendJSON(nil)
}

func (p *SamplingParams) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"max_new_tokens":`...)
	b = strconv.AppendInt(b, int64(p.MaxNewTokens), 10)
	b = appendField(b, "temperature", p.Temperature, jsonw.AppendFloat)
	b = appendField(b, "top_p", p.TopP, jsonw.AppendFloat)
	b = appendField(b, "top_k", p.TopK, appendInt)
	b = appendField(b, "min_p", p.MinP, jsonw.AppendFloat)
	b = appendField(b, "frequency_penalty", p.FrequencyPenalty, jsonw.AppendFloat)
	b = appendField(b, "presence_penalty", p.PresencePenalty, jsonw.AppendFloat)
	b = appendField(b, "repetition_penalty", p.RepetitionPenalty, jsonw.AppendFloat)
	b = appendField(b, "min_new_tokens", p.MinNewTokens, appendInt)
	if len(p.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range p.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if len(p.StopTokenIDs) > 0 {
		b = append(b, `,"stop_token_ids":`...)
		b = jsonw.AppendInts(b, p.StopTokenIDs)
	}
	if p.IgnoreEOS {
		b = append(b, `,"ignore_eos":true`...)
	}
	b = appendField(b, "skip_special_tokens", p.SkipSpecialTokens, strconv.AppendBool)
	b = appendField(b, "spaces_between_special_tokens", p.SpacesBetweenSpecialTokens, strconv.AppendBool)
	if p.NoStopTrim {
		b = append(b, `,"no_stop_trim":true`...)
	}
	if p.JSONSchema != "" {
		b = append(b, `,"json_schema":`...)
		b = jsonw.AppendString(b, p.JSONSchema)
	}
	if p.Regex != "" {
		b = append(b, `,"regex":`...)
		b = jsonw.AppendString(b, p.Regex)
	}
	if p.SamplingSeed != nil {
		b = append(b, `,"sampling_seed":`...)
		b = strconv.AppendInt(b, *p.SamplingSeed, 10)
	}
	for _, f := range []*float64{p.Temperature, p.TopP, p.MinP, p.FrequencyPenalty, p.PresencePenalty, p.RepetitionPenalty} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return nil, fmt.Errorf("sglang: sampling_params: non-finite value %v", *f)
		}
	}
	var err error
	if b, err = appendExtra(b, p.Extra, samplingParamsKeys, "sampling_params"); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendField appends `,"key":` and the value v points to, written by put; nothing when v is nil (unset).
func appendField[T any](b []byte, key string, v *T, put func([]byte, T) []byte) []byte {
	if v == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return put(b, *v)
}

func appendInt(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) }

// appendExtra appends the keys of extra in sorted order, rejecting keys that typed fields own.
func appendExtra(b []byte, extra map[string]any, reserved []string, where string) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("sglang: %s: Extra key %q duplicates a typed field; set the field instead", where, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("sglang: %s: Extra key %q: %w", where, k, err)
		}
		b = append(b, ',')
		b = jsonw.AppendString(b, k)
		b = append(b, ':')
		b = append(b, v...)
	}
	return b, nil
}

// --- JSON decoding (for servers that receive requests, such as the emulator) ------------------------------

// UnmarshalJSON decodes a single (non-batch) request. An absent logprob_start_len becomes -1 (SGLang's
// default) and unknown keys are kept in Extra.
func (r *GenerateRequest) UnmarshalJSON(data []byte) error {
	type plain GenerateRequest
	p := plain{LogprobStartLen: -1}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := unknownKeys(data, generateRequestKeys)
	if err != nil {
		return err
	}
	p.Extra = extra
	*r = GenerateRequest(p)
	return nil
}

// UnmarshalJSON decodes sampling params; stop may be a string or a list, and unknown keys go to Extra.
func (p *SamplingParams) UnmarshalJSON(data []byte) error {
	type plain SamplingParams
	var w struct {
		plain
		Stop json.RawMessage `json:"stop"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	out := SamplingParams(w.plain)
	out.Stop = nil
	if s := bytes.TrimSpace(w.Stop); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		if s[0] == '"' {
			var one string
			if err := json.Unmarshal(s, &one); err != nil {
				return fmt.Errorf("sglang: sampling_params.stop: %w", err)
			}
			out.Stop = []string{one}
		} else if err := json.Unmarshal(s, &out.Stop); err != nil {
			return fmt.Errorf("sglang: sampling_params.stop: %w", err)
		}
	}
	extra, err := unknownKeys(data, samplingParamsKeys)
	if err != nil {
		return err
	}
	out.Extra = extra
	*p = out
	return nil
}

func unknownKeys(data []byte, known []string) (map[string]any, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var extra map[string]any
	for k, raw := range all {
		if slices.Contains(known, k) {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		if extra == nil {
			extra = make(map[string]any)
		}
		extra[k] = v
	}
	return extra, nil
}

// MarshalJSON encodes f in SGLang's shape for its Type.
func (f FinishReason) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64)
	b = append(b, `{"type":`...)
	b = jsonw.AppendString(b, f.Type)
	switch f.Type {
	case FinishStop:
		b = append(b, `,"matched":`...)
		if f.MatchedText != "" {
			b = jsonw.AppendString(b, f.MatchedText)
		} else {
			b = strconv.AppendInt(b, int64(f.MatchedTokenID), 10)
		}
	case FinishLength:
		b = append(b, `,"length":`...)
		b = strconv.AppendInt(b, int64(f.Length), 10)
	case FinishAbort:
		b = append(b, `,"message":`...)
		b = jsonw.AppendString(b, f.Message)
		b = append(b, `,"status_code":`...)
		if f.StatusCode != 0 {
			b = strconv.AppendInt(b, int64(f.StatusCode), 10)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"err_type":`...)
		if f.ErrType != "" {
			b = jsonw.AppendString(b, f.ErrType)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes any of SGLang's finish_reason shapes; unknown keys are ignored.
func (f *FinishReason) UnmarshalJSON(data []byte) error {
	var w struct {
		Type       string          `json:"type"`
		Matched    json.RawMessage `json:"matched"`
		Length     int             `json:"length"`
		Message    string          `json:"message"`
		StatusCode *int            `json:"status_code"`
		ErrType    *string         `json:"err_type"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	out := FinishReason{Type: w.Type, Length: w.Length, Message: w.Message}
	if w.StatusCode != nil {
		out.StatusCode = *w.StatusCode
	}
	if w.ErrType != nil {
		out.ErrType = *w.ErrType
	}
	if m := bytes.TrimSpace(w.Matched); len(m) > 0 && !bytes.Equal(m, []byte("null")) {
		if m[0] == '"' {
			if err := json.Unmarshal(m, &out.MatchedText); err != nil {
				return fmt.Errorf("finish_reason.matched: %w", err)
			}
		} else {
			id, err := strconv.ParseInt(string(m), 10, 32)
			if err != nil {
				return fmt.Errorf("finish_reason.matched: %q is neither a token id nor a string", m)
			}
			out.MatchedTokenID = int32(id)
		}
	}
	*f = out
	return nil
}

// MarshalJSON encodes e as [logprob|null, token_id, text|null].
func (e LogprobEntry) MarshalJSON() ([]byte, error) {
	return e.appendJSON(make([]byte, 0, 32))
}

func (e LogprobEntry) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '[')
	if e.Null {
		b = append(b, "null"...)
	} else {
		b = jsonw.AppendFloat(b, e.Logprob) // a non-finite logprob is null, as orjson writes it
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(e.TokenID), 10)
	b = append(b, ',')
	if e.Text == nil {
		b = append(b, "null"...)
	} else {
		b = jsonw.AppendString(b, *e.Text)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON decodes a [logprob|null, token_id, text|null] triple. The logprob is parsed with
// strconv.ParseFloat, so it is bit-exact with the server's decimal.
func (e *LogprobEntry) UnmarshalJSON(data []byte) error {
	// Fast path: hand-parse the triple; fall back to encoding/json for escaped text.
	p := skipSpace(data)
	if len(p) >= 4 && string(p[:4]) == "null" && len(skipSpace(p[4:])) == 0 {
		return nil // encoding/json convention: null is a no-op
	}
	if len(p) == 0 || p[0] != '[' {
		return fmt.Errorf("logprob entry: want [logprob, token_id, text], got %.40q", data)
	}
	p = skipSpace(p[1:])
	var out LogprobEntry
	tok, rest, ok := scanScalar(p)
	if !ok {
		return fmt.Errorf("logprob entry: bad logprob in %.60q", data)
	}
	if string(tok) == "null" {
		out.Null = true
	} else {
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return fmt.Errorf("logprob entry: bad logprob %q", tok)
		}
		out.Logprob = f
	}
	p = skipSpace(rest)
	if len(p) == 0 || p[0] != ',' {
		return fmt.Errorf("logprob entry: want 3 elements in %.60q", data)
	}
	p = skipSpace(p[1:])
	tok, rest, ok = scanScalar(p)
	if !ok {
		return fmt.Errorf("logprob entry: bad token id in %.60q", data)
	}
	id, err := strconv.ParseInt(string(tok), 10, 32)
	if err != nil {
		return fmt.Errorf("logprob entry: bad token id %q", tok)
	}
	out.TokenID = int32(id)
	p = skipSpace(rest)
	if len(p) > 0 && p[0] == ']' { // tolerate [logprob, id]
		*e = out
		return nil
	}
	if len(p) == 0 || p[0] != ',' {
		return fmt.Errorf("logprob entry: want 3 elements in %.60q", data)
	}
	p = skipSpace(p[1:])
	if len(p) >= 4 && string(p[:4]) == "null" {
		p = p[4:]
	} else if len(p) > 0 && p[0] == '"' {
		end := bytes.IndexByte(p[1:], '"')
		if end >= 0 && bytes.IndexByte(p[1:1+end], '\\') < 0 && utf8.Valid(p[1:1+end]) {
			s := string(p[1 : 1+end])
			out.Text = &s
			p = p[end+2:]
		} else {
			var w []json.RawMessage // a slice: an array of [3] would drop a fourth element without a word
			if err := json.Unmarshal(data, &w); err != nil {
				return fmt.Errorf("logprob entry: %w", err)
			}
			if len(w) != 3 {
				return fmt.Errorf("logprob entry: want 3 elements in %.60q", data)
			}
			var s string
			if err := json.Unmarshal(w[2], &s); err != nil {
				return fmt.Errorf("logprob entry: text: %w", err)
			}
			out.Text = &s
			*e = out
			return nil
		}
	} else {
		return fmt.Errorf("logprob entry: text must be a string or null in %.60q", data)
	}
	p = skipSpace(p)
	if len(p) == 0 || p[0] != ']' {
		return fmt.Errorf("logprob entry: want 3 elements in %.60q", data)
	}
	*e = out
	return nil
}

func skipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\n' || p[0] == '\t' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}

// scanScalar returns the bare scalar (number or literal) at the start of p.
func scanScalar(p []byte) (tok, rest []byte, ok bool) {
	i := 0
	for i < len(p) {
		c := p[i]
		if c == ',' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			break
		}
		i++
	}
	if i == 0 {
		return nil, p, false
	}
	return p[:i], p[i:], true
}
