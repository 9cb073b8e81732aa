package system_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// A first prompt past the context window ends the episode before any request, with a clear error, and the
// trajectory does not keep it: by tokens (just past the window) and by bytes (far past it: never tokenized).
func TestPromptPastContextWindowIsNotKept(t *testing.T) {
	ac := defaultAgent()
	ac.ContextWindow = 64
	h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	for _, tc := range []struct {
		name, prompt, want string
	}{
		{"tokens", strings.Repeat("word ", 100), "tokens, past the 64-token context window: not kept"},
		{"bytes", strings.Repeat("x", 64*64+1), "more than 64 bytes per token of the 64-token context window: refused before tokenizing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := h.run(t, tc.name, tc.prompt)
			wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonContextWindow)
			if !strings.Contains(tr.StopMessage, tc.want) || tr.Error != "" {
				t.Errorf("stop message %q, error %q: want a stop message containing %q and no error", tr.StopMessage, tr.Error, tc.want)
			}
			if string(tr.Messages) != "[]" {
				t.Errorf("the trajectory kept the messages (%d bytes)", len(tr.Messages))
			}
			if len(tr.TokenIDs) != 0 || len(tr.Segments) != 0 {
				t.Errorf("the trajectory kept %d tokens in %d segments of a prompt past the window", len(tr.TokenIDs), len(tr.Segments))
			}
		})
	}
	for _, r := range h.log.records(t) {
		if r.Path == "/generate" {
			t.Fatal("a request was sent for a prompt past the context window")
		}
	}
}
