package system_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// TestFamilyInProvenance: an agent without family or parser keys detects Qwen3, runs with its parser (hermes),
// and its trajectories say which family they ran as.
func TestFamilyInProvenance(t *testing.T) {
	ac := defaultAgent()
	ac.Parser, ac.Family = "", ""
	h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	tr := h.run(t, "fam-1", "What is 12 * 7?")
	if got := tr.Provenance[system.ProvFamily]; got != "qwen3" {
		t.Errorf("provenance family = %v, want qwen3", got)
	}
	if _, ok := tr.Provenance["plugins"].(map[string]string)["parser:hermes"]; !ok {
		t.Errorf("provenance plugins = %v, want the family's parser hermes", tr.Provenance["plugins"])
	}
}

// TestBuildAgentRefusesFailedFamily: an agent whose family profile, parser or kwargs fail the family self-test
// does not start, and the error says why.
func TestBuildAgentRefusesFailedFamily(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*config.Agent)
		want string
	}{
		{"parser that cannot read the template's calls", func(a *config.Agent) { a.Parser = "llama3" },
			"(family qwen3, by chat template): family qwen3 self-test failed: round trip: parser llama3 found 0 calls"},
		{"misspelt kwarg", func(a *config.Agent) { a.ChatTemplateKwargs = map[string]any{"enable_thinkng": false} },
			"chat_template_kwargs: the chat template never reads enable_thinkng"},
		{"family whose stop tokens the vocabulary lacks", func(a *config.Agent) { a.Family = "glm-4.6" },
			`(family glm-4.6, by family = glm-4.6): family glm-4.6 self-test failed: stop tokens: ["<|user|>" "<|observation|>"]: not in the vocabulary of`},
		{"family without a tool-call format", func(a *config.Agent) { a.Family = "phi-4" },
			"(family phi-4, by family = phi-4): family phi-4 self-test failed: parser: the chat template ignores tools and tool calls"},
		{"unknown family", func(a *config.Agent) { a.Family = "qwen9" }, `unknown model family "qwen9"`},
	} {
		ac := defaultAgent()
		ac.ContextWindow = 4096
		c.edit(&ac)
		_, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Model: qwen3})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: BuildAgent error %v, want one with %q", c.name, err, c.want)
		}
	}
}
