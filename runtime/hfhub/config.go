package hfhub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the hub huggingface_hub talks to when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// DefaultRevision is the revision of a model id that names none.
const DefaultRevision = "main"

// Config says where the hub and the cache are. FromEnv reads it from the environment as huggingface_hub does.
type Config struct {
	// Endpoint is the hub's base URL (HF_ENDPOINT; DefaultEndpoint).
	Endpoint string
	// CacheDir is the hub cache (HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub).
	CacheDir string
	// Token is sent as a bearer token to the hub (HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the token file
	// $HF_TOKEN_PATH or $HF_HOME/token; none when HF_HUB_DISABLE_IMPLICIT_TOKEN is set). "" sends none.
	Token string
	// Offline resolves from the cache only, without a request (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE).
	Offline bool
	// MetadataTimeout bounds each metadata request: the revision look-up and each file's HEAD
	// (HF_HUB_ETAG_TIMEOUT seconds; 10).
	MetadataTimeout time.Duration
	// DownloadTimeout bounds the wait for a download's response headers (HF_HUB_DOWNLOAD_TIMEOUT seconds; 10).
	DownloadTimeout time.Duration
}

// FromEnv reads the Config that huggingface_hub would use with the environment getenv gives (os.Getenv in a
// program; tests pass a map). HF_HOME defaults to $XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface; "~"
// and $VARIABLES in the cache and token paths are expanded.
//
// # Errors
//
// A token file that exists but cannot be read, and a timeout that is not a whole number of seconds.
func FromEnv(getenv func(string) string) (Config, error) {
	expand := func(p string) string { // Python's expandvars(expanduser(p))
		if p == "~" || strings.HasPrefix(p, "~/") {
			if home := homeDir(getenv); home != "" {
				p = filepath.Join(home, p[1:])
			}
		}
		return os.Expand(p, getenv)
	}
	home := getenv("HF_HOME")
	if home == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			cache = filepath.Join(homeDir(getenv), ".cache")
		}
		home = filepath.Join(cache, "huggingface")
	}
	home = expand(home)
	c := Config{Endpoint: strings.TrimRight(getenv("HF_ENDPOINT"), "/"), MetadataTimeout: 10 * time.Second, DownloadTimeout: 10 * time.Second}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.CacheDir = getenv("HF_HUB_CACHE")
	if c.CacheDir == "" {
		c.CacheDir = getenv("HUGGINGFACE_HUB_CACHE")
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	c.CacheDir = expand(c.CacheDir)
	c.Offline = isTrue(getenv("HF_HUB_OFFLINE")) || isTrue(getenv("TRANSFORMERS_OFFLINE"))
	for _, t := range []struct {
		key string
		dst *time.Duration
	}{{"HF_HUB_ETAG_TIMEOUT", &c.MetadataTimeout}, {"HF_HUB_DOWNLOAD_TIMEOUT", &c.DownloadTimeout}} {
		if v := getenv(t.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Config{}, fmt.Errorf("hfhub: %s=%q: want a whole number of seconds", t.key, v)
			}
			*t.dst = time.Duration(n) * time.Second
		}
	}
	if isTrue(getenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
		return c, nil
	}
	c.Token = cleanToken(getenv("HF_TOKEN"))
	if c.Token == "" {
		c.Token = cleanToken(getenv("HUGGING_FACE_HUB_TOKEN"))
	}
	if c.Token == "" {
		path := getenv("HF_TOKEN_PATH")
		if path == "" {
			path = filepath.Join(home, "token")
		}
		path = expand(path)
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			c.Token = cleanToken(string(data))
		case !errors.Is(err, os.ErrNotExist):
			return Config{}, fmt.Errorf("hfhub: token file: %w", err)
		}
	}
	return c, nil
}

func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// isTrue is huggingface_hub's reading of a boolean environment variable.
func isTrue(v string) bool {
	switch strings.ToUpper(v) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func cleanToken(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", "", "\n", "").Replace(s))
}

// repoPart is one side of a repo id, as huggingface_hub's REPO_ID_REGEX checks it: 1 to 96 ASCII letters, digits,
// '-', '_' or '.', starting and ending with a letter, digit or '_'.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_](?:[A-Za-z0-9_.\-]{0,94}[A-Za-z0-9_])?$`)

// commitHash is a full git commit id, the only revision that cannot move.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ValidRepoID reports whether id is a model id of the form "namespace/name" that huggingface_hub accepts (its
// validate_repo_id: ASCII letters, digits, '-', '_', '.', no "--" or "..", not ending in ".git"). Ids without a
// namespace ("gpt2") are valid on the hub but not here: agentrt reads such a word as a folder name.
func ValidRepoID(id string) bool {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || !repoPart.MatchString(ns) || !repoPart.MatchString(name) {
		return false
	}
	return !strings.Contains(id, "--") && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".git")
}

// IsCommitHash reports whether rev is a full commit id (40 lowercase hex digits).
func IsCommitHash(rev string) bool { return commitHash.MatchString(rev) }
