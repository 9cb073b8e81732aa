package sglang

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// ParamError is a sampling param that SGLang would refuse; Param is its name in sampling_params.
type ParamError struct {
	Param, Msg string
}

func (e *ParamError) Error() string { return "sglang: sampling_params." + e.Param + ": " + e.Msg }

// maxStops is SGLang's limit on stop strings (sampling_params.py MAX_STOP_COUNT).
const maxStops = 32

// Verify checks the params as SGLang's SamplingParams does before it accepts a request (its __post_init__
// defaults, then verify, and normalize's stop count), so that a caller can refuse a request that SGLang would
// answer with a 400 without sending it. The messages are SGLang's. It checks the typed fields and the grammar keys
// of Extra; other Extra values (logit_bias, custom_params) are left to the server, which needs the vocabulary.
func (p *SamplingParams) Verify() error {
	f := func(v *float64, def float64) float64 {
		if v == nil {
			return def
		}
		return *v
	}
	temp, topP, minP := f(p.Temperature, 1), f(p.TopP, 1), f(p.MinP, 0)
	freq, pres, rep := f(p.FrequencyPenalty, 0), f(p.PresencePenalty, 0), f(p.RepetitionPenalty, 1)
	topK := -1
	if p.TopK != nil {
		topK = *p.TopK
	}
	if 0 <= temp && temp < 1e-6 {
		topK = 1 // greedy
	}
	if topK == -1 {
		topK = 1 << 30
	}
	minNew := 0
	if p.MinNewTokens != nil {
		minNew = *p.MinNewTokens
	}
	bad := func(param, format string, args ...any) error {
		return &ParamError{param, fmt.Sprintf(format, args...)}
	}
	if bw, ok := p.Extra["beam_width"].(int); ok && bw < 1 {
		return bad("beam_width", "beam_width must be at least 1, got %d.", bw)
	}
	switch {
	case math.IsNaN(temp) || math.IsInf(temp, 0) || temp < 0:
		return bad("temperature", "temperature must be a non-negative finite number, got %s.", pyFloat(temp))
	case !(0 < topP && topP <= 1):
		return bad("top_p", "top_p must be in (0, 1], got %s.", pyFloat(topP))
	case !(0 <= minP && minP <= 1):
		return bad("min_p", "min_p must be in [0, 1], got %s.", pyFloat(minP))
	case topK < 1:
		return bad("top_k", "top_k must be -1 (disable) or at least 1, got %d.", topK)
	case !(-2 <= freq && freq <= 2):
		return bad("frequency_penalty", "frequency_penalty must be in [-2, 2], got %s.", pyFloat(freq))
	case !(-2 <= pres && pres <= 2):
		return bad("presence_penalty", "presence_penalty must be in [-2, 2], got %s.", pyFloat(pres))
	case !(0 < rep && rep <= 2):
		return bad("repetition_penalty", "repetition_penalty must be in (0, 2] (1.0 = no penalty), got %s.", pyFloat(rep))
	case minNew < 0:
		return bad("min_new_tokens", "min_new_tokens must be in [0, max_new_tokens], got %d.", minNew)
	case p.MaxNewTokens < 0:
		return bad("max_new_tokens", "max_new_tokens must be at least 0, got %d.", p.MaxNewTokens)
	case minNew > p.MaxNewTokens:
		return bad("min_new_tokens", "min_new_tokens must be in [0, max_new_tokens(%d)], got %d.", p.MaxNewTokens, minNew)
	}
	grammars := 0
	last := ""
	for _, g := range []struct {
		name string
		set  bool
	}{{"json_schema", p.JSONSchema != ""}, {"regex", p.Regex != ""}, {"ebnf", p.Extra["ebnf"] != nil}, {"structural_tag", p.Extra["structural_tag"] != nil}} {
		if g.set {
			grammars++
			last = g.name
		}
	}
	if grammars > 1 {
		return bad(last, "Only one of json_schema, regex, ebnf, or structural_tag can be set.")
	}
	if len(p.Stop) > maxStops { // normalize, after verify
		return bad("stop", "at most %d stop strings are allowed, got %d", maxStops, len(p.Stop))
	}
	return nil
}

// pyFloat writes a float param as SGLang's message shows it: Python's repr of what it read from agentrt's JSON,
// which writes integral values without a fraction (-1, read as an int) and others as floats (0.5, 1e-07).
func pyFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	s := string(jsonw.AppendFloat(nil, v))
	if v == 0 || !strings.ContainsAny(s, ".eE") {
		return s // -0.0 reads back as Python's -0.0
	}
	if abs := math.Abs(v); abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		return strconv.FormatFloat(v, 'e', -1, 64) // Python: 1e-07, 1.5e+16
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
