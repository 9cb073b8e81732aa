package turn

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/agentrt/agentrt/sglang"
)

// TestSamplingCoversSGLang: turn.Sampling has a field for every key of SGLang's sampling_params
// (sglang.SamplingParamNames, itself compared with SGLang's api_types by sglang's TestSGLangContract) and no
// other, but for "seed" (agentrt's older name of sampling_seed).
func TestSamplingCoversSGLang(t *testing.T) {
	var ours []string
	typ := reflect.TypeFor[Sampling]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != f.Tag.Get("toml") {
			t.Errorf("field %s: json name %q, toml name %q", f.Name, name, f.Tag.Get("toml"))
		}
		if name != "seed" {
			ours = append(ours, name)
		}
	}
	if !slices.Equal(ours, sglang.SamplingParamNames) {
		t.Errorf("turn.Sampling keys\n%v\nSGLang's\n%v", ours, sglang.SamplingParamNames)
	}
}

// TestSamplingForwardsEveryParam: a request that sets every sampling param (from JSON, as a trainer sends it)
// reaches SGLang with each one, verbatim.
func TestSamplingForwardsEveryParam(t *testing.T) {
	in := `{"max_new_tokens": 64, "stop": ["\n\n"], "stop_token_ids": [7, 9], "stop_regex": "^x$", "temperature": 0.7,
	  "top_p": 0.9, "top_k": 20, "min_p": 0.05, "frequency_penalty": 0.1, "presence_penalty": 0.2,
	  "repetition_penalty": 1.05, "min_new_tokens": 2, "n": 1, "json_schema": "{}", "regex": "a+", "ebnf": "root ::= \"a\"",
	  "structural_tag": "{}", "ignore_eos": true, "skip_special_tokens": false, "spaces_between_special_tokens": false,
	  "no_stop_trim": true, "stream_interval": 4, "logit_bias": {"11": -1.5}, "sampling_seed": 42,
	  "custom_params": {"return_top_p_token_ids": true}, "beam_width": 2, "watermark": {"enabled": false},
	  "choice": ["a", "b"]}`
	var s Sampling
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	p := s.Params(64, []int32{9, 151645})
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(in), &want)
	want["stop_regex"] = []any{"^x$"}                                       // SGLang takes a string or a list; the list is sent
	want["stop_token_ids"] = []any{float64(7), float64(9), float64(151645)} // the family's stop ids are added once
	for _, k := range sglang.SamplingParamNames {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s: sent %#v, want %#v", k, got[k], want[k])
		}
	}
	if len(got) != len(sglang.SamplingParamNames) {
		t.Errorf("sent %d keys, want the %d of SGLang", len(got), len(sglang.SamplingParamNames))
	}
}

func TestSamplingValidateAndMerge(t *testing.T) {
	four := 4
	if err := (Sampling{N: &four}).Validate(); err == nil || !strings.Contains(err.Error(), `item's "n"`) {
		t.Errorf("n = 4: %v", err)
	}
	var fromTOML struct{ Sampling Sampling }
	if _, err := toml.Decode("[sampling]\nstop = \"END\"\nseed = 3\nskip_special_tokens = false\n", &fromTOML); err != nil {
		t.Fatal(err)
	}
	base := fromTOML.Sampling
	if !slices.Equal(base.Stop, []string{"END"}) || *base.Seed != 3 || *base.SkipSpecialTokens {
		t.Fatalf("toml: %+v", base)
	}
	seed := int64(5)
	m := base.Merge(Sampling{SamplingSeed: &seed, Stop: StringList{"A", "B"}})
	if p := m.Params(8, nil); *p.SamplingSeed != 5 || !slices.Equal(p.Stop, []string{"A", "B"}) || *p.SkipSpecialTokens {
		t.Errorf("merged: %+v", p)
	}
	if p := base.Params(8, nil); *p.SamplingSeed != 3 {
		t.Errorf("seed is sampling_seed: %+v", p)
	}
}
