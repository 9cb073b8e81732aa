package hfhub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/runtime/hfhub"
	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
)

// modelFiles is what agentrt asks for (tito.IsModelFile; this package does not import tito).
func modelFiles(p string) bool {
	switch p {
	case "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json", "special_tokens_map.json":
		return true
	}
	return strings.HasPrefix(p, "additional_chat_templates/") && strings.HasSuffix(p, ".jinja")
}

// qwen3 is the real Qwen3 tokenizer folder the set-up installs (tokenizer.json is 11 MB: an LFS file on the hub).
func qwen3(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); dir == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AGENTRT_QWEN3_MODEL=%q has no tokenizer.json: run make setup", dir)
		}
		t.Skipf("AGENTRT_QWEN3_MODEL=%q has no tokenizer.json: run make setup and source ~/.cache/agentrt/env.sh", dir)
	}
	return dir
}

// repoFiles is a model repository as the hub has it: the tokenizer folder, weights agentrt must not fetch, a
// generation config, and a named template in a subfolder.
func repoFiles(t *testing.T) map[string][]byte {
	t.Helper()
	dir := qwen3(t)
	files := map[string][]byte{
		"config.json":                              []byte(`{"model_type": "qwen3"}`),
		"model-00001-of-00002.safetensors":         bytes.Repeat([]byte{7}, 2<<20),
		"generation_config.json":                   []byte(`{"eos_token_id": [151645, 151643]}`),
		"additional_chat_templates/tool_use.jinja": []byte("{{ messages }}"),
		"README.md":                                []byte("# a model\n"),
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = data
	}
	return files
}

var wantFiles = []string{"additional_chat_templates/tool_use.jinja", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}

// newRepo starts a hub with the model repository pushed as Qwen/Qwen3-8B and returns it, the files, the commit and
// an empty cache folder; the hub is closed when the test ends.
func newRepo(t *testing.T) (*hfhubtest.Hub, map[string][]byte, string, string) {
	t.Helper()
	hub := hfhubtest.New()
	t.Cleanup(hub.Close)
	files := repoFiles(t)
	return hub, files, hub.Push("Qwen/Qwen3-8B", files), t.TempDir()
}

func newClient(t *testing.T, hub *hfhubtest.Hub, cache string, mod ...func(*hfhub.Config)) *hfhub.Client {
	t.Helper()
	cfg := hfhub.Config{Endpoint: hub.URL, CacheDir: cache}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := hfhub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkSnapshot holds a snapshot folder to the files pushed: the wanted files, byte for byte, as relative symlinks
// into blobs/ named by the hub's ETag; nothing else.
func checkSnapshot(t *testing.T, s *hfhub.Snapshot, files map[string][]byte) {
	t.Helper()
	if !slices.Equal(s.Files, wantFiles) {
		t.Errorf("Files = %v, want %v", s.Files, wantFiles)
	}
	var got []string
	filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(s.Dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if !slices.Equal(got, wantFiles) {
		t.Errorf("snapshot folder holds %v, want %v", got, wantFiles)
	}
	for _, f := range wantFiles {
		p := filepath.Join(s.Dir, filepath.FromSlash(f))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, files[f]) {
			t.Errorf("%s differs from the pushed file", f)
		}
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", f, err)
		}
		if filepath.IsAbs(target) || !strings.Contains(target, "blobs"+string(filepath.Separator)) {
			t.Errorf("%s -> %s: want a relative link into blobs/", f, target)
		}
	}
}

func TestSnapshotOnlineThenCachedThenOffline(t *testing.T) {
	hub, files, commit, cache := newRepo(t)
	ctx := context.Background()

	s, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit != commit || s.Revision != "main" || s.Offline {
		t.Errorf("snapshot %+v: want commit %s, revision main, online", s, commit)
	}
	if want := filepath.Join(cache, "models--Qwen--Qwen3-8B", "snapshots", commit); s.Dir != want {
		t.Errorf("Dir = %s, want %s", s.Dir, want)
	}
	checkSnapshot(t, s, files)
	ref, err := os.ReadFile(filepath.Join(cache, "models--Qwen--Qwen3-8B", "refs", "main"))
	if err != nil || string(ref) != commit {
		t.Errorf("refs/main = %q (%v), want %s", ref, err, commit)
	}
	req := hub.Requests()
	for k := range req {
		if strings.Contains(k, "safetensors") || strings.Contains(k, "README.md") || strings.HasSuffix(k, "/config.json") {
			t.Errorf("fetched a file agentrt does not want: %s", k)
		}
	}
	if req["CDN GET /repos/"+sha256Hex(files["tokenizer.json"])] != 1 {
		t.Errorf("tokenizer.json (LFS) was not fetched from the CDN once: %v", req)
	}

	// Cached: one revision look-up, no file requests.
	before := hub.Requests()
	s2, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Dir != s.Dir || s2.Commit != commit {
		t.Errorf("second snapshot %+v differs from the first", s2)
	}
	if d := diff(before, hub.Requests()); len(d) != 1 || d["GET /api/models/Qwen/Qwen3-8B/revision/main"] != 1 {
		t.Errorf("a cached snapshot made requests %v, want only the revision look-up", d)
	}

	// Offline: no request at all.
	before = hub.Requests()
	s3, err := newClient(t, hub, cache, func(c *hfhub.Config) { c.Offline = true }).Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	if !s3.Offline || s3.Commit != commit || s3.HubError != nil {
		t.Errorf("offline snapshot %+v", s3)
	}
	checkSnapshot(t, s3, files)
	if d := diff(before, hub.Requests()); len(d) != 0 {
		t.Errorf("offline mode made requests: %v", d)
	}
	// By commit hash, offline: no ref needed.
	if s4, err := newClient(t, hub, cache, func(c *hfhub.Config) { c.Offline = true }).Snapshot(ctx, "Qwen/Qwen3-8B", commit, modelFiles); err != nil || s4.Dir != s.Dir {
		t.Errorf("offline by commit: %+v, %v", s4, err)
	}
}

func TestSnapshotFallsBackToTheCacheWhenTheHubFails(t *testing.T) {
	hub, files, commit, cache := newRepo(t)
	ctx := context.Background()

	// Nothing cached yet: the hub's failure and the empty cache are both named.
	hub.Fault(http.StatusServiceUnavailable)
	_, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles)
	if !errors.Is(err, hfhub.ErrNotCached) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("hub down, empty cache: %v; want ErrNotCached naming the 503", err)
	}
	if _, err := newClient(t, hub, cache, func(c *hfhub.Config) { c.Offline = true }).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles); !errors.Is(err, hfhub.ErrNotCached) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline, empty cache: %v", err)
	}
	hub.Fault(0)
	if _, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles); err != nil {
		t.Fatal(err)
	}

	// Cached: a 503 and a hub that is gone both fall back, and say why.
	hub.Fault(http.StatusServiceUnavailable)
	s, err := newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles)
	if err != nil || !s.Offline || s.Commit != commit || s.HubError == nil {
		t.Fatalf("hub 503, cached: %+v, %v", s, err)
	}
	checkSnapshot(t, s, files)
	hub.Close()
	s, err = newClient(t, hub, cache).Snapshot(ctx, "Qwen/Qwen3-8B", "", modelFiles)
	if err != nil || !s.Offline || s.Commit != commit {
		t.Fatalf("hub gone, cached: %+v, %v", s, err)
	}
}

func TestSnapshotPinsRevisions(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	first := hub.Push("Qwen/Qwen3-8B", files)
	hub.Tag("Qwen/Qwen3-8B", "v1", first)
	cache := t.TempDir()
	ctx := context.Background()
	c := newClient(t, hub, cache)
	if _, err := c.Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles); err != nil {
		t.Fatal(err)
	}
	files2 := repoFiles(t)
	files2["generation_config.json"] = []byte(`{"eos_token_id": 151645}`)
	second := hub.Push("Qwen/Qwen3-8B", files2)

	s, err := c.Snapshot(ctx, "Qwen/Qwen3-8B", "main", modelFiles)
	if err != nil || s.Commit != second {
		t.Fatalf("main after a push: %+v, %v; want commit %s", s, err, second)
	}
	checkSnapshot(t, s, files2)
	if s, err := c.Snapshot(ctx, "Qwen/Qwen3-8B", "v1", modelFiles); err != nil || s.Commit != first {
		t.Fatalf("tag v1: %+v, %v; want %s", s, err, first)
	} else {
		checkSnapshot(t, s, files)
	}
	if s, err := c.Snapshot(ctx, "Qwen/Qwen3-8B", first, modelFiles); err != nil || s.Commit != first {
		t.Fatalf("by commit: %+v, %v", s, err)
	}
	// A revision the hub does not have is an error even though main is cached.
	if _, err := c.Snapshot(ctx, "Qwen/Qwen3-8B", "v2", modelFiles); !errors.Is(err, hfhub.ErrRevisionNotFound) {
		t.Fatalf("unknown revision: %v", err)
	}
	// Files both commits share are one blob.
	blobs, _ := os.ReadDir(filepath.Join(cache, "models--Qwen--Qwen3-8B", "blobs"))
	if len(blobs) != 5 { // tokenizer.json, tokenizer_config.json, tool_use.jinja, two generation configs
		t.Errorf("blobs/ has %d files, want 5 (shared files stored once)", len(blobs))
	}
}

func TestSnapshotTokensAndAccess(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	hub.Push("Org/private", files)
	hub.Private("Org/private")
	hub.Push("Org/gated", files)
	hub.Gated("Org/gated")
	hub.SetToken("hf_secret")
	ctx := context.Background()
	withToken := func(tok string) func(*hfhub.Config) { return func(c *hfhub.Config) { c.Token = tok } }

	tests := []struct {
		id, token string
		want      error
		status    int
	}{
		{"Org/private", "", hfhub.ErrRepoNotFound, 401},
		{"Org/private", "hf_wrong", hfhub.ErrRepoNotFound, 401},
		{"Org/missing", "hf_secret", hfhub.ErrRepoNotFound, 404},
		{"Org/gated", "", hfhub.ErrGated, 401},
		{"Org/gated", "hf_wrong", hfhub.ErrGated, 403},
		{"Org/private", "hf_secret", nil, 0},
		{"Org/gated", "hf_secret", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.token, func(t *testing.T) {
			s, err := newClient(t, hub, t.TempDir(), withToken(tt.token)).Snapshot(ctx, tt.id, "", modelFiles)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				checkSnapshot(t, s, files)
				return
			}
			var he *hfhub.HTTPError
			if !errors.Is(err, tt.want) || !errors.As(err, &he) || he.StatusCode != tt.status {
				t.Fatalf("err = %v; want %v with status %d", err, tt.want, tt.status)
			}
		})
	}
	if a := hub.CDNAuthorization(); len(a) != 0 {
		t.Errorf("the token reached the CDN: %v", a)
	}
}

func TestSnapshotFollowsARenamedRepository(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	commit := hub.Push("Old/name", files)
	hub.Rename("Old/name", "New/name")
	cache := t.TempDir()
	s, err := newClient(t, hub, cache).Snapshot(context.Background(), "Old/name", "", modelFiles)
	if err != nil {
		t.Fatal(err)
	}
	// huggingface_hub keeps the files under the id it was asked for.
	if s.Commit != commit || !strings.HasPrefix(s.Dir, filepath.Join(cache, "models--Old--name")) {
		t.Errorf("renamed: %+v", s)
	}
	checkSnapshot(t, s, files)
}

func TestSnapshotRefusesCorruptDownloads(t *testing.T) {
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} { // LFS (sha256) and git (blob sha1)
		t.Run(f, func(t *testing.T) {
			hub := hfhubtest.New()
			defer hub.Close()
			hub.Push("Qwen/Qwen3-8B", repoFiles(t))
			hub.Corrupt("Qwen/Qwen3-8B", f)
			cache := t.TempDir()
			_, err := newClient(t, hub, cache).Snapshot(context.Background(), "Qwen/Qwen3-8B", "", modelFiles)
			if !errors.Is(err, hfhub.ErrIntegrity) || !strings.Contains(err.Error(), f) {
				t.Fatalf("err = %v; want ErrIntegrity naming %s", err, f)
			}
			// Nothing half-written is left for a later run to trust, and the ref names no commit.
			var left []string
			filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (strings.Contains(p, "incomplete") || strings.Contains(p, "refs")) {
					left = append(left, p)
				}
				return err
			})
			if len(left) != 0 {
				t.Errorf("left in the cache: %v", left)
			}
		})
	}
}

func TestSnapshotRefusesWhatIsNotAHub(t *testing.T) {
	commit := strings.Repeat("a", 40)
	tests := map[string]http.HandlerFunc{
		"a login page": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>sign in</html>")) },
		"no commit header": func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				w.Write([]byte(`{"sha":"` + commit + `","siblings":[{"rfilename":"tokenizer.json"}]}`))
				return
			}
			w.Header().Set("ETag", `"abc"`)
		},
		"an etag that is a path": func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				w.Write([]byte(`{"sha":"` + commit + `","siblings":[{"rfilename":"tokenizer.json"}]}`))
				return
			}
			w.Header().Set("X-Repo-Commit", commit)
			w.Header().Set("ETag", `"../../../escape"`)
		},
	}
	for name, h := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			c, err := hfhub.New(hfhub.Config{Endpoint: srv.URL, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Snapshot(context.Background(), "Qwen/Qwen3-8B", "", modelFiles); !errors.Is(err, hfhub.ErrNotHub) {
				t.Fatalf("err = %v; want ErrNotHub", err)
			}
		})
	}
	t.Run("a listed path that leaves the snapshot", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"sha":"` + commit + `","siblings":[{"rfilename":"../../../tokenizer.json"}]}`))
		}))
		defer srv.Close()
		c, _ := hfhub.New(hfhub.Config{Endpoint: srv.URL, CacheDir: t.TempDir()})
		if _, err := c.Snapshot(context.Background(), "Qwen/Qwen3-8B", "", func(string) bool { return true }); err == nil || !strings.Contains(err.Error(), "unsafe") {
			t.Fatalf("err = %v; want an unsafe path error", err)
		}
	})
}

func TestSnapshotConcurrentWriters(t *testing.T) {
	hub := hfhubtest.New()
	defer hub.Close()
	files := repoFiles(t)
	hub.Push("Qwen/Qwen3-8B", files)
	cache := t.TempDir()
	var wg sync.WaitGroup
	snaps := make([]*hfhub.Snapshot, 4)
	errs := make([]error, 4)
	for i := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i], errs[i] = newClient(t, hub, cache).Snapshot(context.Background(), "Qwen/Qwen3-8B", "", modelFiles)
		}()
	}
	wg.Wait()
	for i := range snaps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		checkSnapshot(t, snaps[i], files)
	}
}

func TestInvalidIDsAndRevisions(t *testing.T) {
	c, _ := hfhub.New(hfhub.Config{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir(), Offline: true})
	for _, tt := range []struct{ id, rev string }{{"Qwen3-8B", ""}, {"a/b/c", ""}, {"Qwen/../x", ""}, {"Qwen/Qwen3-8B", "../../etc"}, {"Qwen/Qwen3-8B", "/abs"}} {
		if _, err := c.Snapshot(context.Background(), tt.id, tt.rev, modelFiles); err == nil || errors.Is(err, hfhub.ErrNotCached) {
			t.Errorf("Snapshot(%q, %q) = %v; want an invalid id/revision error", tt.id, tt.rev, err)
		}
	}
	if _, err := hfhub.New(hfhub.Config{Endpoint: "ftp://x", CacheDir: "/tmp"}); err == nil {
		t.Error("an ftp endpoint was accepted")
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func diff(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}
