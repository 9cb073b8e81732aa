package hfhub

import (
	"errors"
	"fmt"
)

// The errors Snapshot returns, wrapped with what was asked; test with errors.Is.
var (
	// ErrRepoNotFound: the hub has no such repository, or it is private and the token (if any) cannot see it
	// (404, or 401, with X-Error-Code RepoNotFound).
	ErrRepoNotFound = errors.New("hfhub: repository not found")
	// ErrGated: the repository is gated and the token has not been granted access (X-Error-Code GatedRepo).
	ErrGated = errors.New("hfhub: gated repository")
	// ErrRevisionNotFound: the repository has no such branch, tag or commit (X-Error-Code RevisionNotFound).
	ErrRevisionNotFound = errors.New("hfhub: revision not found")
	// ErrEntryNotFound: a file the revision lists is not there (X-Error-Code EntryNotFound).
	ErrEntryNotFound = errors.New("hfhub: file not found")
	// ErrNotCached: offline (HF_HUB_OFFLINE, or the hub could not be reached) and the cache has no snapshot of
	// the revision.
	ErrNotCached = errors.New("hfhub: not in the cache")
	// ErrIncomplete: offline, and the cached snapshot lacks a file that the cached tree listing says it has.
	ErrIncomplete = errors.New("hfhub: incomplete snapshot in the cache")
	// ErrNotHub: the endpoint answered without the headers every hub sends (X-Repo-Commit, ETag), so it is not a
	// hub (a proxy's login page, a wrong HF_ENDPOINT).
	ErrNotHub = errors.New("hfhub: not a Hugging Face hub response")
	// ErrIntegrity: a downloaded file does not have the size or hash the hub announced for it; nothing was
	// written to the cache.
	ErrIntegrity = errors.New("hfhub: downloaded file does not match the hub's hash")
)

// HTTPError is a hub answer with a status of 400 or more: the request, the status and the hub's X-Error-Code
// and X-Error-Message headers. It matches ErrRepoNotFound, ErrGated, ErrRevisionNotFound or ErrEntryNotFound
// by its code, as huggingface_hub's hf_raise_for_status classifies it.
type HTTPError struct {
	Method, URL string
	StatusCode  int
	Code        string // X-Error-Code
	Message     string // X-Error-Message
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("hfhub: %s %s: %d", e.Method, e.URL, e.StatusCode)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Is matches the sentinel the hub's error code names. A 401 without a code is a repository the token cannot see.
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrRevisionNotFound:
		return e.Code == "RevisionNotFound"
	case ErrEntryNotFound:
		return e.Code == "EntryNotFound"
	case ErrGated:
		return e.Code == "GatedRepo"
	case ErrRepoNotFound:
		return e.Code == "RepoNotFound" || (e.StatusCode == 401 && e.Code == "")
	}
	return false
}

// final reports whether an error of the hub is the answer even when the cache has the snapshot: only a revision
// the hub says does not exist (huggingface_hub raises it at once; for every other failure it looks in the cache).
func final(err error) bool { return errors.Is(err, ErrRevisionNotFound) }

// authError reports whether err is the hub refusing the repository (not found, gated, 401): when the cache has
// nothing, the user needs this error, not "not cached".
func authError(err error) bool {
	var he *HTTPError
	return errors.Is(err, ErrRepoNotFound) || errors.Is(err, ErrGated) || (errors.As(err, &he) && he.StatusCode == 401)
}
