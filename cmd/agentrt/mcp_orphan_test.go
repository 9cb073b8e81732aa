package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
)

// TestRunLeavesNoMCPServer: `agentrt run` with a stdio MCP server that breaks the protocol on its first call (so
// the connection is dropped and a new server started) and refuses to die (it ignores its stdin's end and SIGTERM,
// and has a child of its own). When `agentrt run` has exited, none of the servers it started, nor their
// children, is still running (issue 27: a dropped server used to outlive the run, adopted by init).
func TestRunLeavesNoMCPServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agentrt run subprocess")
	}
	py := os.Getenv("AGENTRT_MCP_PYTHON")
	if py == "" {
		t.Fatal("AGENTRT_MCP_PYTHON is not set: run `make setup` and source ~/.cache/agentrt/env.sh")
	}
	hostile, _ := filepath.Abs("../../runtime/mcptool/testdata/hostile.py")
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("script.jsonl", `{"key": "poke", "replies": ["<tool_call>\n{\"name\": \"poke\", \"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": \"poke\", \"arguments\": {}}\n</tool_call>", "Done."]}`+"\n")
	cfg := write("runtime.toml", fmt.Sprintf(`
[server]
spool_dir = %q

[sglang]
workers = ["emulator"]

[emulator]
policy = "scripted"
script = "script.jsonl"

[[agent]]
name = "poker"
model = %q
parser = "hermes"
chat_template_kwargs = { enable_thinking = false }

[agent.sampling]
max_new_tokens = 256

[[agent.tools]]
mcp = { command = [%q, %q, "orphan", %q] }
`, filepath.Join(dir, "spool"), os.Getenv("AGENTRT_QWEN3_MODEL"), py, hostile, pidfile))
	prompts := write("prompts.jsonl", `{"id": "p", "prompt": "[script:poke] Poke it twice."}`+"\n")
	logPath := filepath.Join(dir, "run.log")
	p := startAgentrt(t, logPath, "run", cfg, "--prompts", prompts, "--out", filepath.Join(dir, "out.jsonl"), "--quiet")
	<-p.done // the run ends by itself (a hang is the test's timeout)
	if !p.cmd.ProcessState.Success() {
		failWithLog(t, logPath, "agentrt run: %v", p.cmd.ProcessState)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		failWithLog(t, logPath, "the MCP server never started: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	// Open's server, then one started again after the first call's protocol error: two servers and their children.
	if len(pids) != 4 {
		failWithLog(t, logPath, "pids %v: want 2 servers and their children", pids)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL) // whatever the verdict, leave nothing behind
		}
	})
	// Killed processes take a moment to die; a process nobody killed never does.
	testutil.Until(t, fmt.Sprintf("the MCP server processes %v to be gone after agentrt run exited", pids), func() bool {
		return !slices.ContainsFunc(pids, running)
	})
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(st), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
