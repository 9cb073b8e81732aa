//go:build wasip1

// Command label_reward is the Go SDK's example reward hook (plugins/sdk/go/README.md). At episode_end it sets the
// trajectory's reward: reward_correct if the last assistant message contains the episode's label (a string),
// reward_wrong otherwise (ASCII case and surrounding white space ignored unless case_sensitive); no reward without
// a string label. Metrics: turns, tool_calls and, with a label, correct (1 or 0).
package main

import (
	"strings"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

var (
	rewardCorrect, rewardWrong = 1.0, 0.0
	caseSensitive              = false
)

func init() {
	sdk.RegisterHook(sdk.Hook{
		Info: sdk.Info{Name: "label_reward", Version: "1.0.0", Description: "Label-match reward at episode end (Go SDK example).",
			ConfigSchema: sdk.RawJSON(`{"type":"object","properties":{"reward_correct":{"type":"number"},"reward_wrong":{"type":"number"},"case_sensitive":{"type":"boolean"}},"additionalProperties":false}`)},
		Events: []string{abi.EventEpisodeEnd},
		Init:   configure,
		Handle: score,
	})
}

func configure(cfg sdk.Value) error {
	if cfg.IsNull() {
		return nil
	}
	if !cfg.IsObject() {
		return sdk.Errorf("bad_config", "config must be a table")
	}
	var err error
	cfg.Each(func(key string, v sdk.Value) bool {
		var ferr error
		switch key {
		case "reward_correct":
			rewardCorrect, ferr = v.Float()
		case "reward_wrong":
			rewardWrong, ferr = v.Float()
		case "case_sensitive":
			if caseSensitive, ferr = v.Bool(); ferr != nil {
				err = sdk.Errorf("bad_config", "case_sensitive must be a boolean")
			}
		default:
			err = sdk.Errorf("bad_config", `unknown key "%s" (known: reward_correct, reward_wrong, case_sensitive)`, key)
		}
		if ferr != nil && err == nil {
			err = sdk.Errorf("bad_config", "%s must be a number", key)
		}
		return err == nil
	})
	return err
}

// normalize trims ASCII white space and, unless case_sensitive, lower-cases ASCII letters.
func normalize(s string) string {
	s = strings.Trim(s, " \t\n\r")
	if caseSensitive {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

func score(ev sdk.Event) (sdk.Response, error) {
	r := sdk.Response{Metrics: map[string]float64{"turns": float64(ev.Turn()), "tool_calls": float64(ev.Counts().ToolCalls)}}
	label, err := ev.Get("label").Str()
	if err != nil {
		return r, nil // no string label: no reward
	}
	answer := ""
	ev.Get("messages").Elems(func(m sdk.Value) bool {
		if m.Get("role").StrOr("") == "assistant" {
			answer = m.Get("content").StrOr("")
		}
		return true
	})
	want := normalize(label)
	hit := want != "" && strings.Contains(normalize(answer), want)
	reward, correct := rewardWrong, 0.0
	if hit {
		reward, correct = rewardCorrect, 1
	}
	r.Reward = &reward // *float64: nil means "no reward"
	r.Metrics["correct"] = correct
	return r, nil
}

func main() {}
