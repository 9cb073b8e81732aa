package emulator

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// The JSON shapes of SGLang's /generate responses (sglang@8905cbd tokenizer_manager._handle_batch_output and
// convert_logprob_style), with keys in SGLang's order. The fixtures in sglang/testdata/fixtures are the arbiter.
//
// These types repeat package sglang's (MetaInfo, FinishReason, LogprobEntry, ModelInfo) on purpose: the emulator
// is an independent implementation of SGLang's side of the wire, so that a bug shared with the client cannot hide
// (the contract test judges both against SGLang's own types); it shares only the JSON primitives (internal/jsonw).

// lpEntry is one [logprob, token_id, text] triple; null marks the null logprob of input_token_logprobs[0].
type lpEntry struct {
	lp   float64
	null bool
	id   int32
	text *string
}

// lpList marshals as a list of triples ([] when empty).
type lpList []lpEntry

// MarshalJSON writes the triples without reflection.
func (l lpList) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(l)*28)
	return l.appendJSON(b), nil
}

func (l lpList) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, e := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		if e.null {
			b = append(b, "null"...)
		} else {
			b = jsonw.AppendFloat(b, e.lp)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e.id), 10)
		b = append(b, ',')
		if e.text == nil {
			b = append(b, "null"...)
		} else {
			b = jsonw.AppendString(b, *e.text)
		}
		b = append(b, ']')
	}
	return append(b, ']')
}

// topLists is a per-position list of triple lists; a nil position is null (input_top_logprobs[0]).
type topLists []lpList

// MarshalJSON writes the nested lists.
func (t topLists) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

func (t topLists) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, l := range t {
		if i > 0 {
			b = append(b, ',')
		}
		if l == nil {
			b = append(b, "null"...)
		} else {
			b = l.appendJSON(b)
		}
	}
	return append(b, ']')
}

// finishReason is SGLang's finish_reason object.
type finishReason struct {
	kind       string // "stop", "length", "abort"
	matchedID  int32
	matchedStr string
	matchedIsS bool
	length     int
	message    string
	statusCode int    // abort: 0 means null
	errType    string // abort: "" means null
	waiting    bool   // abort in the waiting queue: {"type","message"} only
}

// MarshalJSON writes the shape of the finish kind.
func (f *finishReason) MarshalJSON() ([]byte, error) { return f.appendJSON(nil), nil }

func (f *finishReason) appendJSON(b []byte) []byte {
	switch f.kind {
	case "stop":
		b = append(b, `{"type":"stop","matched":`...)
		if f.matchedIsS {
			b = jsonw.AppendString(b, f.matchedStr)
		} else {
			b = strconv.AppendInt(b, int64(f.matchedID), 10)
		}
	case "length":
		b = append(b, `{"type":"length","length":`...)
		b = strconv.AppendInt(b, int64(f.length), 10)
	default:
		b = append(b, `{"type":"abort","message":`...)
		b = jsonw.AppendString(b, f.message)
		if !f.waiting {
			b = append(b, `,"status_code":`...)
			if f.statusCode == 0 {
				b = append(b, "null"...)
			} else {
				b = strconv.AppendInt(b, int64(f.statusCode), 10)
			}
			b = append(b, `,"err_type":`...)
			if f.errType == "" {
				b = append(b, "null"...)
			} else {
				b = jsonw.AppendString(b, f.errType)
			}
		}
	}
	return append(b, '}')
}

type cacheDetails struct {
	Device int `json:"device"`
	Host   int `json:"host"`
}

// metaInfo is meta_info of a finished (or streamed) request.
type metaInfo struct {
	ID                     string        `json:"id"`
	FinishReason           *finishReason `json:"finish_reason"`
	PromptTokens           int           `json:"prompt_tokens"`
	WeightVersion          string        `json:"weight_version"`
	WeightVersions         []versionSpan `json:"weight_versions,omitempty"`
	NumRetractions         int           `json:"num_retractions"`
	InputTokenLogprobs     *lpList       `json:"input_token_logprobs,omitempty"`
	OutputTokenLogprobs    *lpList       `json:"output_token_logprobs,omitempty"`
	OutputTokenLogprobsLen *int          `json:"output_token_logprobs_length,omitempty"`
	InputTopLogprobs       *topLists     `json:"input_top_logprobs,omitempty"`
	OutputTopLogprobs      *topLists     `json:"output_top_logprobs,omitempty"`
	InputTokenIDsLogprobs  *topLists     `json:"input_token_ids_logprobs,omitempty"`
	OutputTokenIDsLogprobs *topLists     `json:"output_token_ids_logprobs,omitempty"`
	ReasoningTokens        int           `json:"reasoning_tokens"`
	CompletionTokens       int           `json:"completion_tokens"`
	CachedTokens           int           `json:"cached_tokens"`
	CachedTokensDetails    *cacheDetails `json:"cached_tokens_details"`
	DPRank                 *int          `json:"dp_rank"`
	E2ELatency             *float64      `json:"e2e_latency,omitempty"`
	ResponseSentToClientTS *float64      `json:"response_sent_to_client_ts,omitempty"`
}

// waitingAbortMeta is meta_info of a request aborted while it waited in the queue (_handle_abort_req).
type waitingAbortMeta struct {
	ID                     string        `json:"id"`
	FinishReason           *finishReason `json:"finish_reason"`
	WeightVersion          string        `json:"weight_version"`
	E2ELatency             float64       `json:"e2e_latency"`
	CompletionTokens       int           `json:"completion_tokens"`
	ResponseSentToClientTS float64       `json:"response_sent_to_client_ts"`
}

// genResponse is one /generate result (an SSE chunk has the same shape; batch streams add "index").
type genResponse struct {
	Text           string  `json:"text"`
	OutputIDs      []int32 `json:"output_ids"`
	PromptTokenIDs []int32 `json:"prompt_token_ids,omitempty"`
	MetaInfo       any     `json:"meta_info"`
	Index          *int    `json:"index,omitempty"`
}

// Error bodies.

// writeValueError is a ValueError in the tokenizer manager: 400 {"error":{"message":...}}.
func writeValueError(w http.ResponseWriter, msg string) []byte {
	return writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": msg}})
}

// writeValidationError is a pydantic validation failure: 400 {"object":"error",...,"type":"Bad Request"}.
func writeValidationError(w http.ResponseWriter, msg string) []byte {
	return writeJSON(w, http.StatusBadRequest, orderedError{Object: "error", Message: msg, Type: "Bad Request", Code: 400})
}

// writeHTTPException is an HTTPException (503 queue full, 500, 404 deprecated endpoint).
func writeHTTPException(w http.ResponseWriter, code int, msg string) []byte {
	return writeJSON(w, code, orderedError{Object: "error", Message: msg, Type: strconv.Itoa(code), Code: code})
}

type orderedError struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// streamError is the SSE event of a ValueError in a streaming request.
func streamErrorEvent(msg string) []byte {
	b, _ := marshal(struct {
		Error struct {
			Message   string `json:"message"`
			Type      string `json:"type"`
			Code      int    `json:"code"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}{Error: struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		Retryable bool   `json:"retryable"`
	}{msg, "invalid_request_error", 400, false}})
	return b
}

// marshal is json.Marshal without HTML escaping (SGLang's orjson writes '<' as is).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) []byte {
	b, err := marshal(v)
	if err != nil {
		b = []byte(`{"error":{"message":"emulator: cannot encode response"}}`)
		code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
	return b
}

func writeText(w http.ResponseWriter, code int, s string) []byte {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
	return []byte(s)
}

// writeInternalError is what an uncaught Python exception gives: 500 with a plain-text body.
func writeInternalError(w http.ResponseWriter) []byte {
	return writeText(w, http.StatusInternalServerError, "Internal Server Error")
}

// pyNum formats a number the way a Python f-string would: ints stay ints, floats use repr (1.0, 1e-05).
type pyNum struct {
	f     float64
	isInt bool
}

func (n pyNum) String() string {
	if n.isInt {
		return strconv.FormatInt(int64(n.f), 10)
	}
	return pyFloat(n.f)
}

func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.LastIndexByte(e, 'e')
	x, _ := strconv.Atoi(e[i+1:])
	if x >= -4 && x < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		return s
	}
	return e
}
