package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a copy of the shipped runtime.toml that uses the test's model folder, spool and cache.
func writeConfig(t *testing.T, dir string, edits ...string) string {
	t.Helper()
	model := os.Getenv("AGENTRT_QWEN3_MODEL")
	if model == "" {
		t.Fatal("AGENTRT_QWEN3_MODEL is not set: source ~/.cache/agentrt/env.sh")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "runtime.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `model = "~/.cache/agentrt/models/qwen3"`, `model = "`+model+`"`, 1)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			t.Fatalf("runtime.toml has no %q", edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	p := filepath.Join(dir, "runtime.toml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readTrajectories(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[m["id"].(string)] = m
	}
	return out
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	prompts := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?", "n": 2, "label": "42"}
{"id": "b", "messages": [{"role": "user", "content": "Compute (1+2)*3 and 10/4."}]}
`), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", cfg, "--prompts", prompts, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := readTrajectories(t, out)
	if len(got) != 3 || got["a#0"] == nil || got["a#1"] == nil || got["b#0"] == nil {
		t.Fatalf("trajectories %v", keys(got))
	}
	for id, tr := range got {
		if tr["status"] != "completed" {
			t.Errorf("%s: status %v (%v)", id, tr["status"], tr["error"])
		}
		if n := len(tr["token_ids"].([]any)); n != len(tr["loss_mask"].([]any)) || n != len(tr["logprobs"].([]any)) {
			t.Errorf("%s: arrays misaligned", id)
		}
	}
	if got["a#1"]["group_id"] != "a" || got["a#1"]["label"] != "42" {
		t.Errorf("a#1: group %v label %v", got["a#1"]["group_id"], got["a#1"]["label"])
	}

	// A crash left half a line: it is dropped, and a re-run completes only what is missing.
	b, _ := os.ReadFile(out)
	lines := bytes.SplitAfter(b, []byte("\n"))
	keep := append(append([]byte{}, lines[0]...), lines[1][:len(lines[1])/2]...)
	os.WriteFile(out, keep, 0o644)
	stderr.Reset()
	if code := run(context.Background(), []string{"run", cfg, "--prompts", prompts, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("re-run: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "2 episodes") || !strings.Contains(stderr.String(), "1 already in") {
		t.Errorf("re-run summary: %s", stderr.String())
	}
	if again := readTrajectories(t, out); len(again) != 3 {
		t.Fatalf("after re-run: %v", keys(again))
	}
}

// A prompt's max_response_tokens is its episodes' response budget: the response (everything after the first
// prompt) stops at it, truncated/response_budget, on a token the model sampled.
func TestRunCommandResponseBudget(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	prompts := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?", "max_response_tokens": 5}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", cfg, "--prompts", prompts, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	tr := readTrajectories(t, out)["a#0"]
	if tr == nil || tr["status"] != "truncated" || tr["status_reason"] != "response_budget" {
		t.Fatalf("trajectory %v", tr)
	}
	first := tr["segments"].([]any)[0].(map[string]any)["length"].(float64)
	mask := tr["loss_mask"].([]any)
	if n := len(mask) - int(first); n != 5 || mask[len(mask)-1].(float64) != 1 {
		t.Errorf("a response of %d tokens ending on loss mask %v, want 5 ending on a model token", n, mask[len(mask)-1])
	}
}

func TestRunCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	// The line the misspelt key lands on, from the shipped runtime.toml itself.
	shipped, err := os.ReadFile(filepath.Join("..", "..", "runtime.toml"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(shipped, []byte("\ntool_timeout = "))
	if i < 0 {
		t.Fatal("runtime.toml has no tool_timeout line")
	}
	badLine := bytes.Count(shipped[:i+1], []byte("\n")) + 1
	tests := []struct{ name, prompts, config, want string }{
		{"invalid JSON", "{\"id\": \"a\", \"prompt\": \"x\"}\n{oops\n", cfg, "prompts.jsonl:2"},
		{"no id", `{"prompt": "x"}`, cfg, `prompts.jsonl:1: item has no "id"`},
		{"unknown field", `{"id": "a", "prompt": "x", "temperature": 1}`, cfg, `unknown field "temperature"`},
		{"negative budget", `{"id": "a", "prompt": "x", "max_response_tokens": -1}`, cfg, `prompts.jsonl:1: item "a": max_response_tokens must be >= 0`},
		{"duplicate id", "{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"a\", \"prompt\": \"y\"}\n", cfg, `duplicate id "a" (first on line 1)`},
		{"bad config key", `{"id": "a", "prompt": "x"}`, writeConfig(t, t.TempDir(), "tool_timeout = ", "tool_timout = "), fmt.Sprintf("runtime.toml:%d: agent.tool_timout: unknown key (did you mean \"agent.tool_timeout\"?)", badLine)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "prompts.jsonl")
			os.WriteFile(p, []byte(tt.prompts), 0o644)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"run", tt.config, "--prompts", p, "--out", filepath.Join(dir, "o.jsonl"), "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr})
			if code == exitOK || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want an error containing %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// --cpuprofile writes a profile (gzip-compressed protobuf) when the run ends; a path that cannot be created is a
// usage error naming the flag.
func TestRunCPUProfile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	prompts := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?"}`+"\n"), 0o644)
	prof := filepath.Join(dir, "cpu.pprof")
	var stdout, stderr bytes.Buffer
	args := []string{"run", cfg, "--prompts", prompts, "--out", filepath.Join(dir, "out.jsonl"), "--quiet", "--cpuprofile", prof}
	if code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile %s: %d bytes, %v (want a gzip stream)", prof, len(b), err)
	}
	stderr.Reset()
	args[len(args)-1] = filepath.Join(dir, "missing", "cpu.pprof")
	args[5] = filepath.Join(dir, "out2.jsonl")
	if code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitUsage || !strings.Contains(stderr.String(), "--cpuprofile") {
		t.Fatalf("bad path: exit %d: %s", code, stderr.String())
	}
}
