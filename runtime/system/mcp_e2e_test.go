package system_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/mcptool"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// An agent whose tools are a real MCP server's (runtime/mcptool/testdata/server.py, on the official MCP Python
// SDK): a scripted model drives it through a call that works, a tool error, a timeout, a server crash, a call after
// the restart and the per-episode limit, each a tool message the model reads, and the episode still completes.
func TestMCPToolEpisode(t *testing.T) {
	py := os.Getenv("AGENTRT_MCP_PYTHON")
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTRT_MCP_PYTHON is not set: run `make setup` and source ~/.cache/agentrt/env.sh")
		}
		t.Skip("AGENTRT_MCP_PYTHON is not set (make setup installs the MCP Python SDK)")
	}
	server, err := filepath.Abs("../mcptool/testdata/server.py")
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) string {
		b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
		return "<tool_call>\n" + string(b) + "\n</tool_call>"
	}
	replies := []string{
		call("add", map[string]any{"a": 2, "b": 3}),
		call("fail", map[string]any{"message": "quota exceeded"}),
		call("sleep", map[string]any{"seconds": 3600}),
		call("crash", map[string]any{}),
		call("counter", map[string]any{}),
		call("echo", map[string]any{"text": "one too many"}),
		`The answer is \boxed{5}.`,
	}
	line, _ := json.Marshal(map[string]any{"key": "mcp", "replies": replies})
	script, err := emulator.ParseScript(strings.NewReader(string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := config.DefaultAgent()
	ac.Name = "mcp"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	// The timeout only has to be shorter than the hour the sleep tool asks for; the restart after the crash is
	// not charged to the next call's timeout.
	ac.Tools = []config.Plugin{{Timeout: 2 * time.Second,
		MCP: &mcptool.Config{Command: []string{py, server, "stdio"}, MaxCalls: 5}}}
	h := newPythonHarness(t, ec, ac, emulator.WithScript(script))
	t.Cleanup(func() { h.agent.Close(context.Background()) })

	specs := h.agent.ToolSpecs()
	if len(specs) != 6 || !strings.Contains(string(specs[0]), `"name":"add"`) || !strings.Contains(string(specs[0]), `"type":"integer"`) {
		t.Fatalf("tool specs %s, want the server's six tools with their schemas", specs)
	}
	tr := h.runLabeled(t, "mcp", "[script:mcp] What is 2+3?", "5")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	results := toolMessages(t, tr)
	want := []struct{ prefix, contains string }{
		{"5", ""},
		{"Error", "quota exceeded"}, // the server's own error text, kept as it is
		{"Error: tool sleep timed out after 2s", ""},
		{"Error: tool crash: the MCP server failed during the call", ""},
		{"1 ", ""}, // a fresh server process counts from 1
		{"Error: tool echo: this episode has used its 5 calls", ""},
	}
	if len(results) != len(want) {
		t.Fatalf("%d tool results %q, want %d", len(results), results, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], w.prefix) || !strings.Contains(results[i], w.contains) {
			t.Errorf("result %d = %q, want prefix %q containing %q", i, results[i], w.prefix, w.contains)
		}
	}
	// The timeout is the tool's own error result (its limit excludes a server restart), so it counts as an error.
	if tr.Metrics["tool_calls.ok"] != 2 || tr.Metrics["tool_calls.error"] != 4 {
		t.Errorf("metrics %v: want 2 ok, 4 errors", tr.Metrics)
	}
	name := ac.Tools[0].MCP.Name()
	if got := tr.Provenance[tito.ProvPlugins].(map[string]string)[name]; got != "server:agentrt-test" {
		t.Errorf("provenance of %s = %q, want the server's handshake name", name, got)
	}
}
