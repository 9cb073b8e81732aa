package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestSubAgentConfig: a sub-agent tool entry is checked at load, errors naming the file, line and key.
func TestSubAgentConfig(t *testing.T) {
	model := "models/qwen3" // a folder name: Validate does not read it
	base := fmt.Sprintf(`
[sglang]
workers = ["emulator"]

[[agent]]
name = "lead"
model = %q

[[agent.tools]]
%%s

[[agent]]
name = "coder"
model = %q
%%s
`, model, model)
	for _, c := range []struct{ entry, coder, want string }{
		{`agent = { name = "coder", max_depth = 2, max_turns = 8, max_tokens = 512 }`, "", ""},
		{"agent = { name = \"coder\", tool = \"coder\", description = \"Hands a sub-task to the coder.\", max_depth = 1, max_turns = 16, max_tokens = 8192 }\ntimeout = \"10m\"", "", ""},
		{`agent = { name = "lead" }`, "", ""}, // a cycle: max_depth ends it at run time
		{`agent = { name = "nobody" }`, "", `:10: agent.tools.agent.name: `},
		{`agent = { name = "coder" }`, `chat_template_kwargs = { enable_thinking = true }`, "must use the same model"},
		{`agent = { name = "coder", max_turns = -1 }`, "", "agent.tools.agent.max_turns"},
		{`agent = { name = "coder", max_depth = -1 }`, "", "agent.tools.agent.max_depth"},
		{`agent = { name = "coder", tool = "two words" }`, "", "agent.tools.agent.tool"},
		{"plugin = \"builtin:calculator\"\nagent = { name = \"coder\" }", "", "takes no plugin"},
		{`agent = { name = "coder", depth = 1 }`, "", "unknown key"},
		{`agent = { name = "coder" }`, `mask_offpolicy = true`, "mask_offpolicy is not supported with sub-agent tools"},
	} {
		cfg, err := Parse("runtime.toml", fmt.Sprintf(base, c.entry, c.coder))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.entry, err)
		case c.want == "" && (cfg.Agents[0].Tools[0].Agent == nil || cfg.Agents[0].Tools[0].Agent.Depth() < 1):
			t.Errorf("%s: not read as a sub-agent tool", c.entry)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s / %s: %v, want an error containing %q", c.entry, c.coder, err, c.want)
		}
	}
}
