package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
)

// hubEnv points the process at a loopback hub and an empty cache, with nothing of the machine's own Hugging Face
// set-up (token, offline mode) in the way.
func hubEnv(t *testing.T, endpoint string) string {
	t.Helper()
	cache := t.TempDir()
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HUGGINGFACE_HUB_CACHE"} {
		t.Setenv(k, "")
	}
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HUB_CACHE", cache)
	return cache
}

// runOnce runs `agentrt run` with cfg on two prompts and returns the trajectories.
func runOnce(t *testing.T, cfg string) map[string]map[string]any {
	t.Helper()
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?", "n": 2}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", cfg, "--prompts", prompts, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("agentrt run: exit %d: %s", code, stderr.String())
	}
	return readTrajectories(t, out)
}

// checkPinned: every trajectory completed and names the hub id and the commit its tokenizer came from.
func checkPinned(t *testing.T, trajs map[string]map[string]any, commit string) {
	t.Helper()
	if len(trajs) != 2 {
		t.Fatalf("trajectories %v", keys(trajs))
	}
	for id, tr := range trajs {
		prov := tr["provenance"].(map[string]any)
		if tr["status"] != "completed" || prov["model"] != "Qwen/Qwen3-8B" || prov["model_revision"] != commit {
			t.Errorf("%s: status %v, provenance model %v model_revision %v; want completed, Qwen/Qwen3-8B, %s",
				id, tr["status"], prov["model"], prov["model_revision"], commit)
		}
	}
}

// TestConfigNamesAHubModel: model = "Qwen/Qwen3-8B" runs from the loopback hub online, then offline from the warm
// cache with the hub gone (HF_HUB_OFFLINE=1), pinned to the same commit; a later commit on main is picked up online.
func TestConfigNamesAHubModel(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	commit, err := hub.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	hubEnv(t, hub.URL)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `model = "`+os.Getenv("AGENTRT_QWEN3_MODEL")+`"`, `model = "Qwen/Qwen3-8B"`)
	checkPinned(t, runOnce(t, cfg), commit)

	t.Setenv("HF_HUB_OFFLINE", "1")
	hub.Close()
	checkPinned(t, runOnce(t, cfg), commit)

	// A revision pins an older commit while main moves on.
	hub2 := hfhubtest.New()
	defer hub2.Close()
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_ENDPOINT", hub2.URL)
	old, _ := hub2.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	hub2.Tag("Qwen/Qwen3-8B", "v1", old)
	newer, _ := hub2.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	checkPinned(t, runOnce(t, cfg), newer)
	cfgV1 := writeConfig(t, t.TempDir(), `model = "`+os.Getenv("AGENTRT_QWEN3_MODEL")+`"`, "model = \"Qwen/Qwen3-8B\"\nrevision = \"v1\"")
	checkPinned(t, runOnce(t, cfgV1), old)
}

// TestConfigNamesAHubModelErrors: what a user sees when the id cannot be resolved.
func TestConfigNamesAHubModelErrors(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	hub.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	hubEnv(t, hub.URL)
	tests := []struct{ name, model, offline, want string }{
		{"unknown repo", `model = "Qwen/Nope"`, "", "model Qwen/Nope (a Hugging Face model id: no folder of that name here): hfhub: GET " + hub.URL + "/api/models/Qwen/Nope/revision/main: 401 RepoNotFound"},
		{"unknown revision", "model = \"Qwen/Qwen3-8B\"\nrevision = \"v9\"", "", "404 RevisionNotFound"},
		{"offline, not cached", `model = "Qwen/Qwen3-8B"`, "1", "offline (HF_HUB_OFFLINE) and " + filepath.Join(os.Getenv("HF_HUB_CACHE"), "models--Qwen--Qwen3-8B") + " has no refs/main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HF_HUB_OFFLINE", tt.offline)
			cfg := writeConfig(t, t.TempDir(), `model = "`+os.Getenv("AGENTRT_QWEN3_MODEL")+`"`, tt.model)
			prompts := filepath.Join(t.TempDir(), "p.jsonl")
			os.WriteFile(prompts, []byte(`{"id": "a", "prompt": "What is 6*7?"}`+"\n"), 0o644)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"run", cfg, "--prompts", prompts, "--out", filepath.Join(t.TempDir(), "o.jsonl")}, stdio{strings.NewReader(""), &stdout, &stderr})
			if code != exitStartup || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), exitStartup, tt.want)
			}
		})
	}
}

// TestHubModelFromAHuggingfaceHubCache: a cache that the real huggingface_hub filled (snapshot_download, as a user's
// earlier Python work would have) serves `agentrt run` offline, and `agentrt tokenize --model Qwen/Qwen3-8B`.
func TestHubModelFromAHuggingfaceHubCache(t *testing.T) {
	py := os.Getenv("AGENTRT_HF_PYTHON")
	if _, err := os.Stat(py); py == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AGENTRT_HF_PYTHON=%q is missing: run make setup (scripts/setup.d/86-hf-hub.sh)", py)
		}
		t.Skipf("AGENTRT_HF_PYTHON=%q is missing: run make setup and source ~/.cache/agentrt/env.sh", py)
	}
	hub := hfhubtest.New()
	defer hub.Close()
	commit, err := hub.PushDir("Qwen/Qwen3-8B", os.Getenv("AGENTRT_QWEN3_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	cache := hubEnv(t, hub.URL)
	cmd := exec.Command(py, "-c", `import sys; from huggingface_hub import snapshot_download; print(snapshot_download("Qwen/Qwen3-8B"))`)
	cmd.Env = append(os.Environ(), "HF_HUB_DISABLE_PROGRESS_BARS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("snapshot_download: %v\n%s", err, out)
	}
	hub.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	cfg := writeConfig(t, t.TempDir(), `model = "`+os.Getenv("AGENTRT_QWEN3_MODEL")+`"`, `model = "Qwen/Qwen3-8B"`)
	checkPinned(t, runOnce(t, cfg), commit)

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tokenize", "--model", "Qwen/Qwen3-8B"}, stdio{strings.NewReader("hello world"), &stdout, &stderr}); code != exitOK {
		t.Fatalf("tokenize: exit %d: %s", code, stderr.String())
	}
	var ids []int
	if err := json.Unmarshal(stdout.Bytes(), &ids); err != nil || len(ids) != 2 {
		t.Errorf("tokenize from the hub cache: %q (%v)", stdout.String(), err)
	}
	if entries, _ := os.ReadDir(filepath.Join(cache, "models--Qwen--Qwen3-8B", "snapshots")); len(entries) != 1 || entries[0].Name() != commit {
		t.Errorf("snapshots: %v, want only %s", entries, commit)
	}
}
