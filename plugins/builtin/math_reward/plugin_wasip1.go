//go:build wasip1

package main

import (
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

// cfg is set once per instance by Init; it is configuration, not per-episode state.
var cfg = defaultConfig()

func init() {
	sdk.RegisterHook(sdk.Hook{
		Info: sdk.Info{
			Name:        "math_reward",
			Version:     "1.0.0",
			Description: "Scores a math answer (last \\boxed{}, else the last number) against the label: reward 1 or 0, with the rule in metrics.",
			ConfigSchema: sdk.RawJSON(`{"type":"object","additionalProperties":false,"properties":{` +
				`"tolerance":{"type":"number","minimum":0},"boxed_only":{"type":"boolean"}}}`),
		},
		Events: []string{abi.EventEpisodeEnd},
		Init:   configure,
		Handle: handle,
	})
}

func configure(v sdk.Value) error {
	cfg = defaultConfig()
	if v.IsNull() {
		return nil
	}
	var err error
	perr := v.Each(func(k string, val sdk.Value) bool {
		switch k {
		case "tolerance":
			f, e := val.Float()
			if e != nil || f < 0 {
				err = fmt.Errorf("tolerance must be a non-negative number, got %s", val.Raw())
				return false
			}
			cfg.tolerance = f
		case "boxed_only":
			b, e := val.Bool()
			if e != nil {
				err = fmt.Errorf("boxed_only must be true or false, got %s", val.Raw())
				return false
			}
			cfg.boxedOnly = b
		default:
			err = fmt.Errorf("unknown key %q (want tolerance, boxed_only)", k)
			return false
		}
		return true
	})
	if perr != nil {
		return fmt.Errorf("config must be a JSON object: %w", perr)
	}
	return err
}

func handle(e sdk.Event) (sdk.Response, error) {
	zero := 0.0
	label := e.Get("label")
	var text string
	if s, err := label.Str(); err == nil {
		text = s
	} else if f, err := label.Float(); err == nil {
		text = strconv.FormatFloat(f, 'f', -1, 64)
	} else if label.Exists() && !label.IsNull() {
		text = string(label.Raw())
	}
	if text == "" {
		return sdk.Response{Reward: &zero, Metrics: map[string]float64{"math_correct": 0, "math_no_label": 1}}, nil
	}
	var last string
	_ = e.Get("messages").Elems(func(m sdk.Value) bool {
		if m.Get("role").StrOr("") == abi.RoleAssistant {
			last = m.Get("content").StrOr("")
		}
		return true
	})
	v := cfg.score(last, text)
	r := 0.0
	if v.correct() {
		r = 1
	}
	return sdk.Response{Reward: &r, Metrics: v.metrics()}, nil
}
