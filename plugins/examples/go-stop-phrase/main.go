//go:build wasip1

// Command stop_phrase is the Go SDK's example hook (plugins/sdk/go/README.md): it stops the episode once the model
// has written a configured phrase `after` times, counting in the hook's per-episode state.
package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

var (
	phrase string     // config "phrase", required
	after  int64  = 1 // config "after", default 1
)

func init() {
	sdk.RegisterHook(sdk.Hook{
		Info: sdk.Info{Name: "stop_phrase", Version: "1.0.0", Description: "Stops an episode once the model writes a phrase (Go SDK example).",
			ConfigSchema: sdk.RawJSON(`{"type":"object","properties":{"phrase":{"type":"string"},"after":{"type":"integer","minimum":1}},"required":["phrase"]}`)},
		Events:       []string{abi.EventMessageAdded},
		MessageRoles: []string{abi.RoleAssistant}, // only the model's messages: the host skips the others
		Init:         configure,
		Handle:       handle,
	})
}

func configure(cfg sdk.Value) error {
	if !cfg.IsNull() && !cfg.IsObject() {
		return sdk.Errorf("bad_config", "config must be a table")
	}
	var err error
	cfg.Each(func(key string, _ sdk.Value) bool {
		if key != "phrase" && key != "after" {
			err = sdk.Errorf("bad_config", `unknown key "%s" (known: phrase, after)`, key)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if phrase = cfg.Get("phrase").StrOr(""); phrase == "" {
		return sdk.Errorf("bad_config", "phrase must be a non-empty string")
	}
	if a := cfg.Get("after"); a.Exists() {
		n, err := a.Float()
		if err != nil || n < 1 || n != math.Trunc(n) {
			return sdk.Errorf("bad_config", "after must be an integer >= 1")
		}
		after = int64(n)
	}
	return nil
}

func handle(ev sdk.Event) (sdk.Response, error) {
	msg := ev.Message()
	if msg.Get("role").StrOr("") != "assistant" || !strings.Contains(msg.Get("content").StrOr(""), phrase) {
		return sdk.Response{}, nil // carry on
	}
	hits := ev.State().Get("hits").IntOr(0) + 1
	// State comes back as ev.State() on this episode's next event.
	r := sdk.Response{State: sdk.RawJSON(fmt.Sprintf(`{"hits":%d}`, hits))}
	if hits >= after {
		r.Stop = &sdk.Stop{Reason: "stop_phrase", Message: fmt.Sprintf(`the model wrote "%s" (%d of %d)`, phrase, hits, after)}
	}
	return r, nil
}

func main() {}
