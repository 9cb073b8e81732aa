// Package hfhubtest is a Hugging Face hub on loopback for tests: it serves model repositories the way the hub
// does for huggingface_hub and for runtime/hfhub, with the same endpoints (/api/models/{id}/revision/{rev},
// /api/models/{id}/tree/{rev}, /{id}/resolve/{rev}/{path}), headers (X-Repo-Commit, ETag, X-Linked-Etag,
// X-Linked-Size, X-Error-Code), LFS files redirected to a CDN on another origin, private and gated repositories
// behind a token, renamed repositories redirected, and faults on demand. Only tests (and the shell tests' fakehub
// command) use it.
package hfhubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// LFSThreshold is the size from which a pushed file is stored as an LFS file (served from the CDN, with a sha256
// ETag), as the hub stores large files.
const LFSThreshold = 1 << 20

// Hub is the loopback hub. Its methods are safe for concurrent use.
type Hub struct {
	// URL is the hub's endpoint (what HF_ENDPOINT is set to); CDNURL is where LFS files redirect.
	URL, CDNURL string

	hub, cdn *httptest.Server
	mu       sync.Mutex
	repos    map[string]*repo
	renamed  map[string]string // old id -> new id
	token    string            // the one valid token
	fault    int               // a status every request gets (0: none)
	requests map[string]int    // "METHOD path" -> count
	cdnAuth  []string          // Authorization headers the CDN saw
	corrupt  map[string]bool   // "id/path" served with a flipped byte
}

type repo struct {
	private, gated bool
	refs           map[string]string // branch or tag -> commit
	commits        map[string]*commit
}

type commit struct {
	files map[string]*file
}

type file struct {
	data []byte
	oid  string // git blob sha1 (of the LFS pointer for LFS files)
	lfs  string // sha256 for LFS files, else ""
}

// New starts a hub and its CDN on loopback. Close them with Close.
func New() *Hub {
	h := &Hub{repos: map[string]*repo{}, renamed: map[string]string{}, requests: map[string]int{}, corrupt: map[string]bool{}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.URL, h.CDNURL = h.hub.URL, h.cdn.URL
	return h
}

// Close stops the hub and its CDN.
func (h *Hub) Close() {
	h.hub.Close()
	h.cdn.Close()
}

// Push commits files (repository path -> content) as the new head of id's main branch, creating the repository
// if needed, and returns the commit hash. Every file of the commit is in files (no parent is merged in).
func (h *Hub) Push(id string, files map[string][]byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[id]
	if r == nil {
		r = &repo{refs: map[string]string{}, commits: map[string]*commit{}}
		h.repos[id] = r
	}
	c := &commit{files: map[string]*file{}}
	sum := sha1.New()
	fmt.Fprintf(sum, "%s\x00%s\x00", id, r.refs["main"])
	for _, p := range slices.Sorted(maps.Keys(files)) {
		data := files[p]
		f := &file{data: data}
		if len(data) >= LFSThreshold {
			s := sha256.Sum256(data)
			f.lfs = hex.EncodeToString(s[:])
			f.oid = gitBlobSHA1([]byte(lfsPointer(f.lfs, len(data))))
		} else {
			f.oid = gitBlobSHA1(data)
		}
		c.files[p] = f
		fmt.Fprintf(sum, "%s\x00%s\n", p, f.oid)
	}
	hash := hex.EncodeToString(sum.Sum(nil))
	r.commits[hash] = c
	r.refs["main"] = hash
	return hash
}

// PushDir pushes every file under dir (a model folder) as id's new main; see Push.
func (h *Hub) PushDir(id, dir string) (string, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return "", err
	}
	return h.Push(id, files), nil
}

// Tag points a tag (or branch) of id at commit.
func (h *Hub) Tag(id, name, commit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[id].refs[name] = commit
}

// Private makes id visible only with the hub's token; Gated makes it need the token to read its files.
func (h *Hub) Private(id string) { h.mu.Lock(); h.repos[id].private = true; h.mu.Unlock() }

// Gated makes id's files need the token (anonymous: 401, wrong token: 403, both with X-Error-Code GatedRepo).
func (h *Hub) Gated(id string) { h.mu.Lock(); h.repos[id].gated = true; h.mu.Unlock() }

// SetToken sets the one token the hub accepts.
func (h *Hub) SetToken(tok string) { h.mu.Lock(); h.token = tok; h.mu.Unlock() }

// Rename moves id to newID; the old id then redirects (307, a relative Location) as the hub does.
func (h *Hub) Rename(id, newID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[newID] = h.repos[id]
	delete(h.repos, id)
	h.renamed[id] = newID
}

// Fault makes every request to the hub (not the CDN) answer status; 0 ends it.
func (h *Hub) Fault(status int) { h.mu.Lock(); h.fault = status; h.mu.Unlock() }

// Corrupt makes the hub serve path of id with one byte flipped (its headers unchanged).
func (h *Hub) Corrupt(id, path string) { h.mu.Lock(); h.corrupt[id+"/"+path] = true; h.mu.Unlock() }

// Requests returns how many requests the hub answered, by "METHOD /path" (query left out).
func (h *Hub) Requests() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.requests))
	for k, v := range h.requests {
		out[k] = v
	}
	return out
}

// CDNAuthorization returns the Authorization headers the CDN received (a token there is a leak).
func (h *Hub) CDNAuthorization() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.cdnAuth)
}

func gitBlobSHA1(data []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(data))
	s.Write(data)
	return hex.EncodeToString(s.Sum(nil))
}

func lfsPointer(sha string, size int) string {
	return fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", sha, size)
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	if msg != "" {
		w.Header().Set("X-Error-Message", msg)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// access checks the request's token against a repository: false when it may not read it (the error is sent).
func (h *Hub) access(w http.ResponseWriter, r *http.Request, rp *repo, files bool) bool {
	auth := r.Header.Get("Authorization")
	valid := h.token != "" && auth == "Bearer "+h.token
	switch {
	case rp == nil || (rp.private && !valid):
		if auth == "" || !valid {
			hubError(w, http.StatusUnauthorized, "RepoNotFound", "Invalid username or password.")
		} else {
			hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		}
		return false
	case rp.gated && files && !valid:
		status := http.StatusUnauthorized
		if auth != "" {
			status = http.StatusForbidden
		}
		hubError(w, status, "GatedRepo", "Access to this model is restricted.")
		return false
	}
	return true
}

func (h *Hub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests[r.Method+" "+r.URL.Path]++
	if h.fault != 0 {
		hubError(w, h.fault, "", "injected fault")
		return
	}
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		h.serveAPI(w, r, rest)
		return
	}
	// /{ns}/{name}/resolve/{rev}/{path...}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	id, commitHash, c, ok := h.repoAt(w, r, "/", parts, true)
	if !ok {
		return
	}
	path, err := unescape(parts[4])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Repo-Commit", commitHash)
	f := c.files[path]
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", path+" does not exist on \""+parts[3]+"\"")
		return
	}
	w.Header().Set("ETag", `"`+f.oid+`"`)
	data := h.served(id, path, f)
	if f.lfs != "" {
		w.Header().Set("X-Linked-Etag", `"`+f.lfs+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("Location", h.CDNURL+"/repos/"+f.lfs+"?X-Amz-Signature=loopback")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(data)
	}
}

// repoAt does what the resolve and API routes share, for parts = ns, name, route, revision[, path]: a renamed id
// redirects (to prefix + the new id + the rest), access is checked, the revision resolved. ok is false when the
// answer has been sent.
func (h *Hub) repoAt(w http.ResponseWriter, r *http.Request, prefix string, parts []string, files bool) (id, hash string, c *commit, ok bool) {
	id = parts[0] + "/" + parts[1]
	if to, renamed := h.renamed[id]; renamed {
		w.Header().Set("Location", prefix+to+"/"+strings.Join(parts[2:], "/"))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return "", "", nil, false
	}
	rp := h.repos[id]
	if !h.access(w, r, rp, files) {
		return "", "", nil, false
	}
	rev, err := unescape(parts[3])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return "", "", nil, false
	}
	if hash, c = rp.resolve(rev); c == nil {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return "", "", nil, false
	}
	return id, hash, c, true
}

// served is the bytes the hub sends for a file: its content, or with one byte flipped if Corrupt asked for it.
func (h *Hub) served(id, path string, f *file) []byte {
	if !h.corrupt[id+"/"+path] {
		return f.data
	}
	data := slices.Clone(f.data)
	data[len(data)/2] ^= 0xff
	return data
}

func (rp *repo) resolve(rev string) (string, *commit) {
	if c := rp.commits[rev]; c != nil {
		return rev, c
	}
	if hash, ok := rp.refs[rev]; ok {
		return hash, rp.commits[hash]
	}
	return "", nil
}

// serveAPI answers /api/models/{ns}/{name}/revision/{rev} (model_info) and /api/models/{ns}/{name}/tree/{rev}
// (list_repo_tree, always recursive, one page).
func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 5)
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	id, hash, c, ok := h.repoAt(w, r, "/api/models/", parts, false)
	if !ok {
		return
	}
	rp := h.repos[id]
	w.Header().Set("Content-Type", "application/json")
	switch parts[2] {
	case "revision":
		siblings := []map[string]string{}
		for _, p := range slices.Sorted(maps.Keys(c.files)) {
			siblings = append(siblings, map[string]string{"rfilename": p})
		}
		json.NewEncoder(w).Encode(map[string]any{"_id": id, "id": id, "modelId": id, "sha": hash, "private": rp.private,
			"gated": rp.gated, "disabled": false, "siblings": siblings})
	case "tree":
		prefix := ""
		if len(parts) == 5 {
			var err error
			if prefix, err = unescape(parts[4]); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			prefix += "/"
		}
		entries := []map[string]any{}
		dirs := map[string]bool{}
		for _, p := range slices.Sorted(maps.Keys(c.files)) {
			if !strings.HasPrefix(p, prefix) {
				continue
			}
			for d := filepath.Dir(p); d != "." && d+"/" != prefix && !dirs[d]; d = filepath.Dir(d) {
				dirs[d] = true
				entries = append(entries, map[string]any{"type": "directory", "oid": gitBlobSHA1([]byte(d)), "size": 0, "path": d})
			}
			f := c.files[p]
			e := map[string]any{"type": "file", "oid": f.oid, "size": len(f.data), "path": p}
			if f.lfs != "" {
				e["lfs"] = map[string]any{"oid": f.lfs, "size": len(f.data), "pointerSize": len(lfsPointer(f.lfs, len(f.data)))}
			}
			entries = append(entries, e)
		}
		json.NewEncoder(w).Encode(entries)
	default:
		http.NotFound(w, r)
	}
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests["CDN "+r.Method+" "+r.URL.Path]++
	if a := r.Header.Get("Authorization"); a != "" {
		h.cdnAuth = append(h.cdnAuth, a)
	}
	sha, ok := strings.CutPrefix(r.URL.Path, "/repos/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	for id, rp := range h.repos {
		for _, c := range rp.commits {
			for p, f := range c.files {
				if f.lfs != sha {
					continue
				}
				data := h.served(id, p, f)
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Header().Set("ETag", `"`+sha+`"`)
				if r.Method == http.MethodGet {
					w.Write(data)
				}
				return
			}
		}
	}
	http.NotFound(w, r)
}

func unescape(s string) (string, error) {
	out, err := url.PathUnescape(s)
	if err != nil {
		return "", fmt.Errorf("bad path %q: %w", s, err)
	}
	return out, nil
}
