package system_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/system"
)

// TestWrongKindNamesTheEntry: a plugin listed in a section of another kind (a hook under [[agent.tools]], a tool
// under [[agent.hooks]] or as the reward) is refused with the file and line of its entry and where it belongs,
// as the config's own errors are.
func TestWrongKindNamesTheEntry(t *testing.T) {
	tests := []struct {
		name, entries, want string
	}{
		{"hook as a tool", "[[agent.tools]]\nplugin = \"builtin:limiter\"\n",
			`runtime.toml:6: [[agent.tools]] plugin = "builtin:limiter" is a hook plugin (loop_limiter), not a tool: list it under [[agent.hooks]] (or as [agent.reward] if it sets the reward at episode_end)`},
		{"tool as a hook", "[[agent.tools]]\nplugin = \"builtin:calculator\"\n\n[[agent.hooks]] # the second entry\nplugin = \"builtin:calculator\"\n",
			`runtime.toml:9: [[agent.hooks]] plugin = "builtin:calculator" is a tool plugin (calculator), not a hook: list it under [[agent.tools]]`},
		{"tool as the reward", "[agent.reward]\nplugin = \"builtin:calculator\"\n",
			`runtime.toml:6: [agent.reward] plugin = "builtin:calculator" is a tool plugin (calculator), not a hook: list it under [[agent.tools]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runtime.toml")
			src := "[[agent]]\nname = \"a\"\nmodel = \"" + os.Getenv("AGENTRT_QWEN3_MODEL") + "\"\ncontext_window = 4096\n\n" + tt.entries
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = system.BuildAgent(context.Background(), cfg.Agents[0], system.BuildEnv{Host: host, Model: qwen3})
			want := strings.Replace(tt.want, "runtime.toml", path, 1)
			if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, plugin.ErrWrongKind) {
				t.Errorf("BuildAgent: %v\nwant an ErrWrongKind containing %q", err, want)
			}
		})
	}
}
