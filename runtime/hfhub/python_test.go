package hfhub_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/hfhub"
	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
)

// These tests hold the resolver to the real huggingface_hub (PyPI, scripts/setup.d/86-hf-hub.sh): the same
// environment read the same way, the same ids accepted, and one cache that both write and both read.

func hfPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("AGENTRT_HF_PYTHON")
	if _, err := os.Stat(py); py == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AGENTRT_HF_PYTHON=%q is missing: run make setup (scripts/setup.d/86-hf-hub.sh)", py)
		}
		t.Skipf("AGENTRT_HF_PYTHON=%q is missing: run make setup and source ~/.cache/agentrt/env.sh", py)
	}
	return py
}

// runHF runs testdata/hf.py with exactly env (plus PATH), so no HF_* variable of the test's own leaks in.
func runHF(t *testing.T, env map[string]string, cmd map[string]any, out any) error {
	t.Helper()
	arg, _ := json.Marshal(cmd)
	c := exec.Command(hfPython(t), "testdata/hf.py", string(arg))
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HF_HUB_DISABLE_TELEMETRY=1", "HF_HUB_DISABLE_PROGRESS_BARS=1"}
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	data, err := c.Output()
	if err != nil {
		return errors.New(err.Error() + ": " + stderr.String())
	}
	return json.Unmarshal(data, out)
}

func TestFromEnvMatchesHuggingfaceHub(t *testing.T) {
	home := t.TempDir()
	tokenFile := filepath.Join(home, "custom-token")
	os.WriteFile(tokenFile, []byte("  hf_from_custom_file\n"), 0o600)
	os.MkdirAll(filepath.Join(home, "hfhome"), 0o755)
	os.WriteFile(filepath.Join(home, "hfhome", "token"), []byte("hf_from_home_file\r\n"), 0o600)
	rows := map[string]map[string]string{
		"defaults":             {},
		"HF_HOME":              {"HF_HOME": filepath.Join(home, "hfhome")},
		"XDG_CACHE_HOME":       {"XDG_CACHE_HOME": filepath.Join(home, "xdg")},
		"HF_HUB_CACHE wins":    {"HF_HOME": filepath.Join(home, "hfhome"), "HF_HUB_CACHE": filepath.Join(home, "hub"), "HUGGINGFACE_HUB_CACHE": filepath.Join(home, "legacy")},
		"legacy cache":         {"HUGGINGFACE_HUB_CACHE": filepath.Join(home, "legacy")},
		"tilde":                {"HF_HUB_CACHE": "~/tilde/hub"},
		"endpoint":             {"HF_ENDPOINT": "http://127.0.0.1:9999/"},
		"offline 1":            {"HF_HUB_OFFLINE": "1"},
		"offline yes":          {"HF_HUB_OFFLINE": "yes"},
		"offline off":          {"HF_HUB_OFFLINE": "0"},
		"transformers offline": {"TRANSFORMERS_OFFLINE": "TRUE"},
		"HF_TOKEN":             {"HF_TOKEN": " hf_env ", "HUGGING_FACE_HUB_TOKEN": "hf_legacy", "HF_HOME": filepath.Join(home, "hfhome")},
		"legacy token":         {"HUGGING_FACE_HUB_TOKEN": "hf_legacy"},
		"token file":           {"HF_HOME": filepath.Join(home, "hfhome")},
		"HF_TOKEN_PATH":        {"HF_TOKEN_PATH": tokenFile},
		"implicit token off":   {"HF_TOKEN": "hf_env", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"},
		"etag timeout":         {"HF_HUB_ETAG_TIMEOUT": "3"},
	}
	names := slices.Sorted(maps.Keys(rows))
	envs := make([]map[string]string, len(names))
	for i, name := range names {
		envs[i] = map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}
		for k, v := range rows[name] {
			envs[i][k] = v
		}
	}
	var py []struct {
		Endpoint, Cache string
		Offline         bool
		Token           *string
		EtagTimeout     int `json:"etag_timeout"`
	}
	if err := runHF(t, map[string]string{"HOME": home}, map[string]any{"op": "env", "rows": envs}, &py); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		env := envs[i]
		cfg, err := hfhub.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tok := ""
		if py[i].Token != nil {
			tok = *py[i].Token
		}
		if cfg.Endpoint != py[i].Endpoint || cfg.CacheDir != py[i].Cache || cfg.Offline != py[i].Offline || cfg.Token != tok ||
			cfg.MetadataTimeout != time.Duration(py[i].EtagTimeout)*time.Second {
			t.Errorf("%s: FromEnv = {%s %s offline=%v token=%q %v}\nhuggingface_hub {%s %s offline=%v token=%q %ds}", name,
				cfg.Endpoint, cfg.CacheDir, cfg.Offline, cfg.Token, cfg.MetadataTimeout, py[i].Endpoint, py[i].Cache, py[i].Offline, tok, py[i].EtagTimeout)
		}
	}
}

func TestValidRepoIDMatchesHuggingfaceHub(t *testing.T) {
	ids := []string{"Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct", "a/b", "org_1/model.v2", "deepseek-ai/DeepSeek-V3.1",
		"Qwen/Qwen3--8B", "Qwen/..x", "Qwen/x.git", "-org/x", "org/x-", "org/.x", "org/x.", "org/" + strings.Repeat("x", 96),
		"org/" + strings.Repeat("x", 97), "a/b/c", "/abs", "org/caf\u00e9", "org/has space", "org/", "/x", "~/models"}
	var py []bool
	if err := runHF(t, map[string]string{"HOME": t.TempDir()}, map[string]any{"op": "validate", "ids": ids}, &py); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if got := hfhub.ValidRepoID(id); got != py[i] {
			t.Errorf("ValidRepoID(%q) = %v, huggingface_hub's validate_repo_id says %v", id, got, py[i])
		}
	}
	// Without a namespace the hub accepts the id, agentrt reads a folder name.
	if hfhub.ValidRepoID("gpt2") {
		t.Error(`ValidRepoID("gpt2") = true; a single word is a folder name in agentrt`)
	}
}

var allowPatterns = []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json",
	"special_tokens_map.json", "additional_chat_templates/*.jinja"}

// TestCacheWrittenByHuggingfaceHubIsReadOfflineAndOnline: huggingface_hub's snapshot_download fills a cache from
// the loopback hub; the resolver reads it offline (same commit, same files) and online without downloading again.
func TestCacheWrittenByHuggingfaceHubIsReadOfflineAndOnline(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	commit := hub.Push("Qwen/Qwen3-8B", files)
	cache := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "HF_ENDPOINT": hub.URL, "HF_HUB_CACHE": cache}
	var py struct {
		Path  string
		Files []string
	}
	if err := runHF(t, env, map[string]any{"op": "snapshot", "repo_id": "Qwen/Qwen3-8B", "allow_patterns": allowPatterns}, &py); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(py.Files, wantFiles) {
		t.Fatalf("huggingface_hub fetched %v, want %v", py.Files, wantFiles)
	}
	ctx := context.Background()
	offline := newClient(t, hub, cache, func(c *hfhub.Config) { c.Offline = true })
	s, err := offline.Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir != py.Path || s.Commit != commit {
		t.Errorf("offline: %s at %s; huggingface_hub: %s", s.Dir, s.Commit, py.Path)
	}
	checkSnapshot(t, s, files)

	before := hub.Requests()
	if s, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles); err != nil || s.Dir != py.Path {
		t.Fatalf("online over huggingface_hub's cache: %+v, %v", s, err)
	}
	if d := diff(before, hub.Requests()); len(d) != 1 {
		t.Errorf("online over a warm cache made requests %v, want only the revision look-up", d)
	}

	// huggingface_hub cached the commit's listing: a listed file missing from the snapshot is an incomplete
	// snapshot, offline, not a model without that file.
	if err := os.Remove(filepath.Join(py.Path, "generation_config.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := offline.Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles); !errors.Is(err, hfhub.ErrIncomplete) || !strings.Contains(err.Error(), "generation_config.json") {
		t.Fatalf("offline with a file missing: %v; want ErrIncomplete naming it", err)
	}
}

// TestCacheWrittenByTheResolverIsReadByHuggingfaceHub: the resolver fills a cache; huggingface_hub finds every file
// offline at the same path, online downloads nothing, and a cache it fills itself has the same layout.
func TestCacheWrittenByTheResolverIsReadByHuggingfaceHub(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	hub.Push("Qwen/Qwen3-8B", files)
	ours := t.TempDir()
	s, err := newClient(t, hub, ours).Snapshot(context.Background(), "Qwen/Qwen3-8B", "", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "HF_ENDPOINT": hub.URL, "HF_HUB_CACHE": ours, "HF_HUB_OFFLINE": "1"}
	var paths map[string]string
	if err := runHF(t, env, map[string]any{"op": "download", "repo_id": "Qwen/Qwen3-8B", "filenames": wantFiles}, &paths); err != nil {
		t.Fatal(err)
	}
	for _, f := range wantFiles {
		if want := filepath.Join(s.Dir, filepath.FromSlash(f)); paths[f] != want {
			t.Errorf("huggingface_hub offline finds %s at %s, want %s", f, paths[f], want)
		}
	}
	var py struct {
		Path  string
		Files []string
	}
	if err := runHF(t, env, map[string]any{"op": "snapshot", "repo_id": "Qwen/Qwen3-8B", "allow_patterns": allowPatterns}, &py); err != nil {
		t.Fatal(err)
	}
	if py.Path != s.Dir || !slices.Equal(py.Files, wantFiles) {
		t.Errorf("huggingface_hub offline snapshot: %s %v; want %s %v", py.Path, py.Files, s.Dir, wantFiles)
	}

	delete(env, "HF_HUB_OFFLINE")
	before := hub.Requests()
	if err := runHF(t, env, map[string]any{"op": "snapshot", "repo_id": "Qwen/Qwen3-8B", "allow_patterns": allowPatterns}, &py); err != nil {
		t.Fatal(err)
	}
	for k := range diff(before, hub.Requests()) {
		if strings.Contains(k, "/resolve/") || strings.HasPrefix(k, "CDN") {
			t.Errorf("huggingface_hub downloaded again over the resolver's cache: %s", k)
		}
	}

	theirs := t.TempDir()
	env["HF_HUB_CACHE"] = theirs
	if err := runHF(t, env, map[string]any{"op": "snapshot", "repo_id": "Qwen/Qwen3-8B", "allow_patterns": allowPatterns}, &py); err != nil {
		t.Fatal(err)
	}
	if a, b := layout(t, ours), layout(t, theirs); !slices.Equal(a, b) {
		t.Errorf("cache layouts differ:\nresolver:        %v\nhuggingface_hub: %v", a, b)
	}
}

// layout lists a cache's blobs, snapshot links (with their targets) and refs, leaving out what only
// huggingface_hub keeps (its locks, tree listings, CACHEDIR.TAG).
func layout(t *testing.T, cache string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cache, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.Contains(rel, "/blobs/"):
			out = append(out, rel)
		case strings.Contains(rel, "/snapshots/"):
			target, err := os.Readlink(p)
			if err != nil {
				t.Errorf("%s is not a link: %v", rel, err)
			}
			out = append(out, rel+" -> "+filepath.ToSlash(target))
		case strings.Contains(rel, "/refs/"):
			data, _ := os.ReadFile(p)
			out = append(out, rel+" = "+string(data))
		}
		return nil
	})
	slices.Sort(out)
	return out
}
