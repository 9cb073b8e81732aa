package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// DeepSeek V3's own template renders no tools, so its agent does not start and says how to get one that does; with
// chat_template = SGLang's tool template (the file SGLang is launched with) episodes run, checked against the
// emulator's request log like every family's.
func TestAgentChatTemplateOverrideDeepSeek(t *testing.T) {
	dir := os.Getenv("AGENTRT_DEEPSEEK_V3_MODEL")
	if dir == "" {
		t.Fatal("$AGENTRT_DEEPSEEK_V3_MODEL is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`")
	}
	m, err := tito.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ac := defaultAgent()
	ac.Model, ac.ChatTemplateKwargs = m.Dir, nil
	_, err = system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: &alwaysAborting{}, Model: m, Server: "fake",
		MaxModelLen: func(context.Context) (int, error) { return 4096, nil }})
	if err == nil || !strings.Contains(err.Error(), "tool_chat_template_deepseekv3.jinja") || !strings.Contains(err.Error(), "chat_template") {
		t.Fatalf("stock template: %v; want a refusal naming chat_template and SGLang's template", err)
	}

	// V3's template with V3's vocabulary and format; R1 (same vocabulary, same SGLang template and parser) reasoning
	// in <think> before every reply; V3.1's template (family deepseek-v3.1, its deepseekv31 format) on the same
	// vocabulary, which has all of V3.1's markers.
	for _, tc := range []struct {
		family, file, format string
		think                bool
	}{
		{"deepseek-v3", "tool_chat_template_deepseekv3.jinja", "deepseekv3", false},
		{"deepseek-r1", "tool_chat_template_deepseekv3.jinja", "deepseekv3", true},
		{"deepseek-v3.1", "tool_chat_template_deepseekv31.jinja", "deepseekv31", false},
	} {
		t.Run(tc.family, func(t *testing.T) {
			ac := ac
			var err error
			if ac.ChatTemplate, err = filepath.Abs(filepath.Join("..", "family", "testdata", "sglang-templates", tc.file)); err != nil {
				t.Fatal(err)
			}
			ac.Family = tc.family
			ec := emulator.DefaultConfig()
			ec.ToolFormat = tc.format
			if tc.think {
				ec.ThinkRate = 1
			}
			h := newModelHarness(t, ec, ac, m)
			calls := 0
			for i, task := range []string{"What is 12*7+3?", "Compute (17+25)*3 and 144/12."} {
				tr := h.run(t, fmt.Sprintf("%s-%d", tc.family, i), task)
				wantStatus(t, tr, runtime.StatusCompleted, "")
				if tr.Provenance[tito.ProvTemplateSHA256] == m.TemplateSHA256 || tr.Provenance[system.ProvFamily] != tc.family {
					t.Errorf("provenance %v: want the chat_template file's sha256 and family %s", tr.Provenance, tc.family)
				}
				calls += int(tr.Metrics["tool_calls.ok"])
				if tc.think {
					for _, msg := range messages(t, tr) {
						if msg.Role == "assistant" && !strings.HasPrefix(msg.Content, "<think>\n") {
							t.Errorf("%s: assistant turn %q does not reason first", tr.ID, msg.Content)
						}
					}
				}
			}
			if calls == 0 {
				t.Error("no tool call was made and answered")
			}
		})
	}
}
