package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Under partial_rollout = "resume" a re-run with the same --out runs again the samples SGLang aborted (their
// aborted lines are replaced, not duplicated) and keeps every other line; under "drop" aborted samples are final.
func TestRunRerunsAbortedUnderResume(t *testing.T) {
	for _, policy := range []string{"resume", "drop"} {
		dir := t.TempDir()
		cfg := writeConfig(t, dir, `partial_rollout = "drop"`, `partial_rollout = "`+policy+`"`)
		prompts := filepath.Join(dir, "prompts.jsonl")
		os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?", "n": 2}`+"\n"), 0o644)
		out := filepath.Join(dir, "out.jsonl")
		var stdout, stderr bytes.Buffer
		args := []string{"run", cfg, "--prompts", prompts, "--out", out, "--quiet"}
		if code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
			t.Fatalf("%s: exit %d: %s", policy, code, stderr.String())
		}
		// make a#1's line what a sample aborted by a pause looks like
		b, _ := os.ReadFile(out)
		var lines [][]byte
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if bytes.Contains(l, []byte(`"id":"a#1"`)) {
				l = bytes.Replace(l, []byte(`"status":"completed"`), []byte(`"status":"aborted","status_reason":"aborted_by_request"`), 1)
			}
			lines = append(lines, l)
		}
		os.WriteFile(out, bytes.Join(lines, nil), 0o644)
		stderr.Reset()
		if code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
			t.Fatalf("%s re-run: exit %d: %s", policy, code, stderr.String())
		}
		got := readTrajectories(t, out)
		after, _ := os.ReadFile(out)
		n := bytes.Count(after, []byte("\n"))
		switch policy {
		case "resume":
			if n != 2 || got["a#1"]["status"] != "completed" || !strings.Contains(stderr.String(), "1 episodes") {
				t.Fatalf("resume: %d lines, a#1 %v; %s", n, got["a#1"]["status"], stderr.String())
			}
		case "drop":
			if n != 2 || got["a#1"]["status"] != "aborted" || !strings.Contains(stderr.String(), "2 already in") {
				t.Fatalf("drop: %d lines, a#1 %v; %s", n, got["a#1"]["status"], stderr.String())
			}
		}
	}
}
