package hfhub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The hub cache's layout, as huggingface_hub writes it (its file_download.py):
//
//	<cache>/models--Org--Name/
//	    blobs/<etag>                          file contents, named by the hub's ETag (git sha1, or sha256 for LFS)
//	    snapshots/<commit>/<path>             relative symlinks into blobs/, one folder per commit
//	    refs/<revision>                       the commit a branch or tag named when it was last resolved
//	    trees/<commit>.json                   (huggingface_hub 1.x+) the commit's whole file listing, if it listed it

// repoFolder is the cache folder of a model repository: models--Org--Name.
func repoFolder(cacheDir, repoID string) string {
	return filepath.Join(cacheDir, "models--"+strings.ReplaceAll(repoID, "/", "--"))
}

// safeEtag is what a blob name may be: the hub's ETags are hex digests; anything with a path separator or a
// leading dot would let a server write outside blobs/.
var safeEtag = regexp.MustCompile(`^[0-9A-Za-z_-][0-9A-Za-z._-]*$`)

// relPath checks a repository path (from the hub's listing or the caller) before it becomes a file path: relative,
// "/"-separated, no "." or ".." segments.
func relPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("hfhub: unsafe repository path %q", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("hfhub: unsafe repository path %q", p)
		}
	}
	return filepath.FromSlash(p), nil
}

// checkRevision refuses a revision that would leave refs/ when it names a file there.
func checkRevision(rev string) error {
	if _, err := relPath(rev); err != nil {
		return fmt.Errorf("hfhub: invalid revision %q", rev)
	}
	return nil
}

// readRef returns the commit refs/<rev> records, or "" if there is none.
func readRef(folder, rev string) (string, error) {
	p := filepath.Join(folder, "refs", filepath.FromSlash(rev))
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("hfhub: %w", err)
	}
	commit := string(data)
	if !IsCommitHash(commit) {
		return "", fmt.Errorf("hfhub: %s holds %q, not a commit hash", p, commit)
	}
	return commit, nil
}

// writeRef records that rev named commit, atomically (readers never see a half-written ref), and only if it
// changed (a read-only cache that is up to date stays usable).
func writeRef(folder, rev, commit string) error {
	if rev == commit {
		return nil
	}
	if cur, err := readRef(folder, rev); err == nil && cur == commit {
		return nil
	}
	p := filepath.Join(folder, "refs", filepath.FromSlash(rev))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	return writeAtomic(p, []byte(commit))
}

// uniqueName is a name beside p that no other writer (process or goroutine) uses.
func uniqueName(p, suffix string) string {
	var b [6]byte
	rand.Read(b[:])
	return p + "." + hex.EncodeToString(b[:]) + suffix
}

func writeAtomic(p string, data []byte) error {
	tmp := uniqueName(p, ".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hfhub: %w", err)
	}
	return nil
}

// linkPointer makes snapshots/<commit>/<path> a relative symlink to its blob, as huggingface_hub does (the cache
// can be moved), replacing whatever was there in one rename.
func linkPointer(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	tmp := uniqueName(pointer, ".tmp")
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	if err := os.Rename(tmp, pointer); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hfhub: %w", err)
	}
	return nil
}

// exists reports whether p resolves to a regular file (a pointer whose blob was deleted does not).
func exists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// treeListing reads trees/<commit>.json, the whole listing of a commit that huggingface_hub's snapshot_download
// caches; nil when there is none (or it is of a format this package does not know).
func treeListing(folder, commit string) []string {
	data, err := os.ReadFile(filepath.Join(folder, "trees", commit+".json"))
	if err != nil {
		return nil
	}
	var t struct {
		FormatVersion int                        `json:"format_version"`
		Files         map[string]json.RawMessage `json:"files"`
	}
	if json.Unmarshal(data, &t) != nil || t.FormatVersion != 1 {
		return nil
	}
	paths := make([]string, 0, len(t.Files))
	for p := range t.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// snapshotFiles lists the files of a snapshot folder that want selects, as "/"-separated paths, sorted; a wanted
// pointer whose blob is gone is an error.
func snapshotFiles(dir string, want func(string) bool) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !want(rel) {
			return nil
		}
		if !exists(p) {
			return fmt.Errorf("%w: %s points to a blob that is not there", ErrIncomplete, p)
		}
		files = append(files, rel)
		return nil
	})
	slices.Sort(files)
	return files, err
}

// cleanEtag is huggingface_hub's _normalize_etag: W/"x" and "x" are x.
func cleanEtag(s string) string {
	s = strings.TrimPrefix(s, "W/")
	return strings.Trim(s, `"`)
}

// snapshotDir is the folder of one commit.
func snapshotDir(folder, commit string) string { return filepath.Join(folder, "snapshots", commit) }

// blobPath is where a blob with the given ETag lives.
func blobPath(folder, etag string) string { return filepath.Join(folder, "blobs", etag) }
