//go:build wasip1

// Command compact is a before_generate hook for the runtime's tests: once the context passes max_tokens it answers
// with the conversation's first messages (up to and including the first user message) and its last keep turns (an
// assistant message and the messages after it), the compaction a context policy would make, written as a hook.
//
// Rebuild: scripts/wasm.d/10-go-plugins.sh.
package main

import (
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

var maxTokens, keep int64 = 3000, 3

func init() {
	sdk.RegisterHook(sdk.Hook{
		Info:   sdk.Info{Name: "compact", Version: "0.0.1", Description: "Keeps the first messages and the last turns past a threshold (test hook)."},
		Events: []string{abi.EventBeforeGenerate},
		Init: func(cfg sdk.Value) error {
			maxTokens = cfg.Get("max_tokens").IntOr(maxTokens)
			keep = cfg.Get("keep_turns").IntOr(keep)
			if maxTokens <= 0 || keep < 1 {
				return sdk.Errorf("bad_config", "max_tokens must be > 0 and keep_turns >= 1")
			}
			return nil
		},
		Handle: func(ev sdk.Event) (sdk.Response, error) {
			if ev.Get("context_tokens").IntOr(0) <= maxTokens {
				return sdk.Response{}, nil
			}
			var msgs []abi.Message
			if err := ev.Get("messages").Elems(func(v sdk.Value) bool { msgs = append(msgs, sdk.MessageOf(v)); return true }); err != nil {
				return sdk.Response{}, err
			}
			head := 0
			for head < len(msgs) && msgs[head].Role != "user" {
				head++
			}
			head++ // the task
			var starts []int
			for i := head; i < len(msgs); i++ {
				if msgs[i].Role == "assistant" {
					starts = append(starts, i)
				}
			}
			if int64(len(starts)) <= keep {
				return sdk.Response{}, nil
			}
			out := append(append([]abi.Message{}, msgs[:head]...), msgs[starts[int64(len(starts))-keep]:]...)
			return sdk.Response{Messages: out}, nil
		},
	})
}

func main() {}
