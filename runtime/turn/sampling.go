package turn

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/agentrt/agentrt/sglang"
)

// Sampling holds the sampling params sent to SGLang: every key of SGLang's sampling_params
// (sglang.SamplingParamNames, which a test compares with these fields), forwarded verbatim, plus "seed", an
// older name of sampling_seed. Unset optional values are left to the server's defaults. Params that only shape
// SGLang's text (skip_special_tokens, spaces_between_special_tokens, no_stop_trim) change nothing here: agentrt
// keeps output_ids and decodes them itself.
type Sampling struct {
	MaxNewTokens               int                `toml:"max_new_tokens" json:"max_new_tokens,omitempty"`
	Stop                       StringList         `toml:"stop" json:"stop,omitempty"`
	StopTokenIDs               []int32            `toml:"stop_token_ids" json:"stop_token_ids,omitempty"`
	StopRegex                  StringList         `toml:"stop_regex" json:"stop_regex,omitempty"`
	Temperature                *float64           `toml:"temperature" json:"temperature,omitempty"`
	TopP                       *float64           `toml:"top_p" json:"top_p,omitempty"`
	TopK                       *int               `toml:"top_k" json:"top_k,omitempty"`
	MinP                       *float64           `toml:"min_p" json:"min_p,omitempty"`
	FrequencyPenalty           *float64           `toml:"frequency_penalty" json:"frequency_penalty,omitempty"`
	PresencePenalty            *float64           `toml:"presence_penalty" json:"presence_penalty,omitempty"`
	RepetitionPenalty          *float64           `toml:"repetition_penalty" json:"repetition_penalty,omitempty"`
	MinNewTokens               *int               `toml:"min_new_tokens" json:"min_new_tokens,omitempty"`
	N                          *int               `toml:"n" json:"n,omitempty"` // must be 1: samples come from items[].n
	JSONSchema                 *string            `toml:"json_schema" json:"json_schema,omitempty"`
	Regex                      *string            `toml:"regex" json:"regex,omitempty"`
	EBNF                       *string            `toml:"ebnf" json:"ebnf,omitempty"`
	StructuralTag              *string            `toml:"structural_tag" json:"structural_tag,omitempty"`
	IgnoreEOS                  *bool              `toml:"ignore_eos" json:"ignore_eos,omitempty"`
	SkipSpecialTokens          *bool              `toml:"skip_special_tokens" json:"skip_special_tokens,omitempty"`
	SpacesBetweenSpecialTokens *bool              `toml:"spaces_between_special_tokens" json:"spaces_between_special_tokens,omitempty"`
	NoStopTrim                 *bool              `toml:"no_stop_trim" json:"no_stop_trim,omitempty"`
	StreamInterval             *int               `toml:"stream_interval" json:"stream_interval,omitempty"`
	LogitBias                  map[string]float64 `toml:"logit_bias" json:"logit_bias,omitempty"`
	SamplingSeed               *int64             `toml:"sampling_seed" json:"sampling_seed,omitempty"`
	CustomParams               map[string]any     `toml:"custom_params" json:"custom_params,omitempty"`
	BeamWidth                  *int               `toml:"beam_width" json:"beam_width,omitempty"`
	Watermark                  map[string]any     `toml:"watermark" json:"watermark,omitempty"`
	Choice                     []string           `toml:"choice" json:"choice,omitempty"`
	// Seed is sampling_seed under its older agentrt name; sampling_seed wins when both are set.
	Seed *int `toml:"seed" json:"seed,omitempty"`
}

// Validate reports params that agentrt cannot forward: SGLang's n (several samples per request), since
// agentrt samples each item items[].n times, one episode each.
func (s Sampling) Validate() error {
	if s.N != nil && *s.N != 1 {
		return fmt.Errorf("n = %d: agentrt runs n samples per item from the item's \"n\", not SGLang's sampling n (leave it unset or 1)", *s.N)
	}
	// What SGLang would refuse with a 400 on every call is refused here, once, with SGLang's own message (a
	// request's overrides are checked on their own: an unset field is SGLang's default).
	maxNew := s.MaxNewTokens
	if maxNew <= 0 {
		maxNew = math.MaxInt32 // an override without max_new_tokens: any min_new_tokens may fit the agent's
	}
	p := s.Params(maxNew, nil)
	if err := p.Verify(); err != nil {
		return err
	}
	return nil
}

// Merge returns s with every field set in o replacing its own (per-request overrides).
func (s Sampling) Merge(o Sampling) Sampling {
	dst, src := reflect.ValueOf(&s).Elem(), reflect.ValueOf(o)
	for i := range src.NumField() {
		if f := src.Field(i); !f.IsZero() {
			dst.Field(i).Set(f)
		}
	}
	return s
}

// Params is the one mapping to SGLang's sampling_params: every field of s, with maxNew tokens and the extra stop
// ids (the model family's) added to s's own stop_token_ids.
func (s Sampling) Params(maxNew int, extraStopIDs []int32) sglang.SamplingParams {
	p := sglang.SamplingParams{
		MaxNewTokens:               maxNew,
		Temperature:                s.Temperature,
		TopP:                       s.TopP,
		TopK:                       s.TopK,
		MinP:                       s.MinP,
		RepetitionPenalty:          s.RepetitionPenalty,
		FrequencyPenalty:           s.FrequencyPenalty,
		PresencePenalty:            s.PresencePenalty,
		MinNewTokens:               s.MinNewTokens,
		Stop:                       s.Stop,
		SkipSpecialTokens:          s.SkipSpecialTokens,
		SpacesBetweenSpecialTokens: s.SpacesBetweenSpecialTokens,
		IgnoreEOS:                  s.IgnoreEOS != nil && *s.IgnoreEOS,
		NoStopTrim:                 s.NoStopTrim != nil && *s.NoStopTrim,
		SamplingSeed:               s.SamplingSeed,
	}
	p.StopTokenIDs = extraStopIDs
	if len(s.StopTokenIDs) > 0 {
		p.StopTokenIDs = slices.Clone(s.StopTokenIDs)
		for _, id := range extraStopIDs {
			if !slices.Contains(p.StopTokenIDs, id) {
				p.StopTokenIDs = append(p.StopTokenIDs, id)
			}
		}
	}
	if s.JSONSchema != nil {
		p.JSONSchema = *s.JSONSchema
	}
	if s.Regex != nil {
		p.Regex = *s.Regex
	}
	if p.SamplingSeed == nil && s.Seed != nil {
		v := int64(*s.Seed)
		p.SamplingSeed = &v
	}
	extra := map[string]any{}
	set := func(k string, v any, ok bool) {
		if ok {
			extra[k] = v
		}
	}
	set("stop_regex", []string(s.StopRegex), len(s.StopRegex) > 0)
	set("n", s.N, s.N != nil)
	set("ebnf", s.EBNF, s.EBNF != nil)
	set("structural_tag", s.StructuralTag, s.StructuralTag != nil)
	set("stream_interval", s.StreamInterval, s.StreamInterval != nil)
	set("logit_bias", s.LogitBias, s.LogitBias != nil)
	set("custom_params", s.CustomParams, s.CustomParams != nil)
	set("beam_width", s.BeamWidth, s.BeamWidth != nil)
	set("watermark", s.Watermark, s.Watermark != nil)
	set("choice", s.Choice, s.Choice != nil)
	if len(extra) > 0 {
		p.Extra = extra
	}
	return p
}

// StringList is a list of strings that also decodes from one string (SGLang's stop and stop_regex accept both).
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*l = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*l = many
	return nil
}

// UnmarshalTOML implements toml.Unmarshaler.
func (l *StringList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*l = StringList{v}
		return nil
	case []any:
		out := make(StringList, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want a string or a list of strings, got an element %v", e)
			}
			out = append(out, s)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("want a string or a list of strings, got %T", v)
}
