package hfhub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxRedirects is how many redirects one request follows (huggingface_hub's _MAX_REDIRECTS is 10 too).
const maxRedirects = 10

// maxMetadataBytes bounds a revision look-up's JSON (a listing of every file of a large repository is a few MB).
const maxMetadataBytes = 64 << 20

// Client resolves model ids through one hub and one cache. It is safe for concurrent use.
type Client struct {
	cfg       Config
	endpoint  *url.URL
	http      *http.Client
	log       *slog.Logger
	userAgent string
}

type options struct {
	transport http.RoundTripper
	log       *slog.Logger
	userAgent string
}

// Option configures a Client.
type Option func(*options)

// WithTransport sets the HTTP transport (default: a transport that honours HTTP(S)_PROXY, as huggingface_hub's).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithLogger sets where the Client says what it fetched and when it fell back to the cache (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithUserAgent sets the User-Agent header (default "agentrt").
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// New returns a Client for cfg.
//
// # Errors
//
// An endpoint that is not an http(s) URL, or an empty cache folder.
func New(cfg Config, opts ...Option) (*Client, error) {
	o := options{log: slog.New(slog.DiscardHandler), userAgent: "agentrt"}
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	ep, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
	if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
		return nil, fmt.Errorf("hfhub: endpoint %q (HF_ENDPOINT) is not an http(s) URL", cfg.Endpoint)
	}
	if cfg.CacheDir == "" {
		return nil, errors.New("hfhub: no cache folder")
	}
	if cfg.MetadataTimeout <= 0 {
		cfg.MetadataTimeout = 10 * time.Second
	}
	if cfg.DownloadTimeout <= 0 {
		cfg.DownloadTimeout = 10 * time.Second
	}
	rt := o.transport
	if rt == nil {
		rt = &http.Transport{Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: cfg.DownloadTimeout,
			TLSHandshakeTimeout: cfg.DownloadTimeout, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4}
	}
	// Redirects are followed by hand: whether the token goes along depends on where they lead.
	hc := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{cfg: cfg, endpoint: ep, http: hc, log: o.log, userAgent: o.userAgent}, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// Snapshot is a revision of a repository, resolved to a commit and to a folder of the cache holding the files
// that were asked for.
type Snapshot struct {
	// RepoID and Revision are what was asked ("Qwen/Qwen3-8B", "main").
	RepoID, Revision string
	// Commit is the commit the revision named: the files are pinned to it.
	Commit string
	// Dir is the snapshot folder, <cache>/models--Org--Name/snapshots/<commit>: a model folder.
	Dir string
	// Files are the wanted files in Dir, "/"-separated, sorted.
	Files []string
	// Offline is set when the snapshot came from the cache without the hub: offline mode, or the hub could not
	// be reached (then HubError says why).
	Offline  bool
	HubError error
}

// Snapshot resolves revision ("" is "main") of the model repository repoID to a commit and makes sure the cache
// holds that commit's files that want selects (want gets "/"-separated repository paths), downloading the
// missing ones; the Snapshot's Dir is then a folder of them.
//
// Like huggingface_hub's snapshot_download: offline (Config.Offline), or when the hub cannot be reached or
// refuses the repository, it answers from the cache (refs/<revision>, then snapshots/<commit>); a revision the hub
// says does not exist is an error at once. A commit already cached is not downloaded again.
//
// # Errors
//
// An invalid id or revision; ErrRevisionNotFound; ErrRepoNotFound, ErrGated or an *HTTPError 401 when the cache
// cannot stand in; ErrNotCached (offline or unreachable, nothing cached), ErrIncomplete; ErrNotHub; ErrIntegrity;
// the context's error; a cache that cannot be written.
func (c *Client) Snapshot(ctx context.Context, repoID, revision string, want func(string) bool) (*Snapshot, error) {
	if !ValidRepoID(repoID) {
		return nil, fmt.Errorf("hfhub: %q is not a model id of the form namespace/name", repoID)
	}
	if revision == "" {
		revision = DefaultRevision
	}
	if err := checkRevision(revision); err != nil {
		return nil, err
	}
	folder := repoFolder(c.cfg.CacheDir, repoID)
	if c.cfg.Offline {
		return c.cached(folder, repoID, revision, want, nil)
	}
	commit, files, err := c.revisionInfo(ctx, repoID, revision)
	if err != nil {
		if final(err) || ctx.Err() != nil {
			return nil, err
		}
		s, cerr := c.cached(folder, repoID, revision, want, err)
		if cerr == nil {
			c.log.Warn("hfhub: the hub did not answer; using the cached snapshot", "model", repoID, "revision", revision,
				"commit", s.Commit, "error", err)
			return s, nil
		}
		if authError(err) || !errors.Is(cerr, ErrNotCached) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (%w)", cerr, err)
	}
	s := &Snapshot{RepoID: repoID, Revision: revision, Commit: commit, Dir: snapshotDir(folder, commit)}
	for _, f := range files {
		if !want(f) {
			continue
		}
		rel, err := relPath(f)
		if err != nil {
			return nil, err
		}
		if pointer := filepath.Join(s.Dir, rel); !exists(pointer) {
			if err := c.fetch(ctx, folder, repoID, commit, f, pointer); err != nil {
				return nil, err
			}
		}
		s.Files = append(s.Files, f)
	}
	slices.Sort(s.Files)
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("hfhub: %w", err)
	}
	// The ref is written last, so that it never names a commit whose wanted files are not all there.
	if err := writeRef(folder, revision, commit); err != nil {
		return nil, err
	}
	return s, nil
}

// cached answers from the cache alone. hubErr is why (nil: offline mode).
func (c *Client) cached(folder, repoID, revision string, want func(string) bool, hubErr error) (*Snapshot, error) {
	why := "offline (HF_HUB_OFFLINE)"
	if hubErr != nil {
		why = "the hub could not be used"
	}
	commit := revision
	if !IsCommitHash(revision) {
		var err error
		if commit, err = readRef(folder, revision); err != nil {
			return nil, err
		}
		if commit == "" {
			return nil, fmt.Errorf("%w: %s revision %s: %s and %s has no refs/%s", ErrNotCached, repoID, revision, why, folder, revision)
		}
	}
	dir := snapshotDir(folder, commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s revision %s: %s and there is no %s", ErrNotCached, repoID, revision, why, dir)
	}
	// huggingface_hub's check: when the commit's listing is cached, every listed file asked for must be there.
	for _, f := range treeListing(folder, commit) {
		if !want(f) {
			continue
		}
		rel, err := relPath(f)
		if err != nil {
			return nil, err
		}
		if !exists(filepath.Join(dir, rel)) {
			return nil, fmt.Errorf("%w: %s commit %s lists %s but %s does not have it (%s: go online once to complete it)",
				ErrIncomplete, repoID, commit, f, dir, why)
		}
	}
	files, err := snapshotFiles(dir, want)
	if err != nil {
		return nil, err
	}
	return &Snapshot{RepoID: repoID, Revision: revision, Commit: commit, Dir: dir, Files: files, Offline: true, HubError: hubErr}, nil
}

// revisionInfo asks the hub which commit revision names and which files it has (GET /api/models/{id}/revision/
// {rev}, huggingface_hub's model_info).
func (c *Client) revisionInfo(ctx context.Context, repoID, revision string) (string, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.MetadataTimeout)
	defer cancel()
	// The revision is one path segment, "/" included (huggingface_hub's quote(revision, safe="")).
	u, err := url.Parse(c.endpoint.String() + "/api/models/" + repoID + "/revision/" + url.PathEscape(revision))
	if err != nil {
		return "", nil, fmt.Errorf("hfhub: %w", err)
	}
	resp, err := c.do(ctx, http.MethodGet, u, true)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	var info struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadataBytes)).Decode(&info); err != nil {
		return "", nil, fmt.Errorf("%w: GET %s: %v", ErrNotHub, u, err)
	}
	if !IsCommitHash(info.SHA) {
		return "", nil, fmt.Errorf("%w: GET %s: sha %q is not a commit hash", ErrNotHub, u, info.SHA)
	}
	if IsCommitHash(revision) && info.SHA != revision {
		return "", nil, fmt.Errorf("%w: GET %s: asked for commit %s, got %s", ErrNotHub, u, revision, info.SHA)
	}
	files := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		files = append(files, s.RFilename)
	}
	return info.SHA, files, nil
}

// fileURL is /{id}/resolve/{commit}/{path}, the path quoted segment by segment (huggingface_hub's hf_hub_url).
func (c *Client) fileURL(repoID, commit, file string) *url.URL {
	segs := strings.Split(file, "/")
	esc := make([]string, len(segs))
	for i, s := range segs {
		esc[i] = url.PathEscape(s)
	}
	u, _ := url.Parse(c.endpoint.String() + "/" + repoID + "/resolve/" + commit + "/" + strings.Join(esc, "/"))
	return u
}

// fetch downloads one file of a commit into blobs/ and points the snapshot at it: a HEAD on the resolve URL
// gives the commit, the ETag (X-Linked-Etag for LFS files), the size and where the bytes are (a redirect to a CDN
// for LFS files); the GET's bytes are checked against size and hash before the blob is renamed into place.
func (c *Client) fetch(ctx context.Context, folder, repoID, commit, file, pointer string) error {
	u := c.fileURL(repoID, commit, file)
	hctx, cancel := context.WithTimeout(ctx, c.cfg.MetadataTimeout)
	resp, err := c.do(hctx, http.MethodHead, u, false)
	if err != nil {
		cancel()
		return err
	}
	resp.Body.Close()
	cancel()
	h := resp.Header
	if got := h.Get("X-Repo-Commit"); got == "" {
		return fmt.Errorf("%w: HEAD %s: no X-Repo-Commit header (is HF_ENDPOINT a hub?)", ErrNotHub, u)
	} else if got != commit {
		return fmt.Errorf("%w: HEAD %s: X-Repo-Commit %s, not the commit asked for", ErrNotHub, u, got)
	}
	etag := cleanEtag(h.Get("X-Linked-Etag"))
	if etag == "" {
		etag = cleanEtag(h.Get("ETag"))
	}
	if etag == "" {
		return fmt.Errorf("%w: HEAD %s: no ETag: the file's version cannot be pinned", ErrNotHub, u)
	}
	if !safeEtag.MatchString(etag) {
		return fmt.Errorf("%w: HEAD %s: ETag %q cannot name a blob", ErrNotHub, u, etag)
	}
	size := int64(-1)
	sz := h.Get("X-Linked-Size")
	if sz == "" && !isRedirect(resp.StatusCode) {
		sz = h.Get("Content-Length")
	}
	if n, err := strconv.ParseInt(sz, 10, 64); err == nil && n >= 0 {
		size = n
	}
	location := resp.Request.URL
	if isRedirect(resp.StatusCode) {
		if location, err = resp.Request.URL.Parse(h.Get("Location")); err != nil {
			return fmt.Errorf("%w: HEAD %s: Location: %v", ErrNotHub, u, err)
		}
	}
	blob := blobPath(folder, etag)
	if !exists(blob) {
		if err := c.download(ctx, location, file, blob, etag, size); err != nil {
			return err
		}
		c.log.Info("hfhub: downloaded", "model", repoID, "commit", commit, "file", file, "bytes", size)
	}
	return linkPointer(blob, pointer)
}

// download GETs url into blob, through a uniquely named temporary file that is renamed into place only when its
// size and hash are right.
func (c *Client) download(ctx context.Context, u *url.URL, file, blob, etag string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	resp, err := c.do(ctx, http.MethodGet, u, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	tmp := uniqueName(blob, ".incomplete")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	defer os.Remove(tmp) // a no-op once renamed
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hfhub: GET %s: %w", u.Redacted(), err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("%w: %s: got %d bytes, the hub announced %d", ErrIntegrity, file, n, size)
	}
	if err := checkHash(tmp, n, etag); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIntegrity, file, err)
	}
	if err := os.Rename(tmp, blob); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	return nil
}

// checkHash holds a file to its ETag: a 64-hex ETag is the sha256 of an LFS file, a 40-hex one the git blob sha1
// of a file stored in git. Other ETags carry no hash to check.
func checkHash(p string, n int64, etag string) error {
	var h hash.Hash
	switch {
	case len(etag) == 64 && isHex(etag):
		h = sha256.New()
	case len(etag) == 40 && isHex(etag):
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", n)
	default:
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != etag {
		return fmt.Errorf("content hashes to %s, the hub's ETag is %s", got, etag)
	}
	return nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// do sends one request and follows its redirects by hand: all of them for a GET (follow), only those that stay
// on a hub for a HEAD (huggingface_hub's HEAD stops at a CDN redirect: the file's metadata is on that answer).
// The token goes only to the hub's own hosts, never to a CDN. A status of 400 or more is an *HTTPError.
func (c *Client) do(ctx context.Context, method string, u *url.URL, follow bool) (*http.Response, error) {
	for range maxRedirects + 1 {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("hfhub: %w", err)
		}
		req.Header.Set("User-Agent", c.userAgent)
		// The real size of the file, not of a compressed body.
		req.Header.Set("Accept-Encoding", "identity")
		if c.cfg.Token != "" && c.hubHost(u) {
			req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("hfhub: %s %s: %w", method, u.Redacted(), err)
		}
		if resp.StatusCode >= 400 {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			return nil, &HTTPError{Method: method, URL: u.Redacted(), StatusCode: resp.StatusCode,
				Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
		}
		if !isRedirect(resp.StatusCode) || resp.Header.Get("Location") == "" {
			return resp, nil
		}
		next, err := u.Parse(resp.Header.Get("Location"))
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("%w: %s %s: Location: %v", ErrNotHub, method, u.Redacted(), err)
		}
		if !follow && !(sameOrigin(u, next) || c.hubHost(next)) {
			return resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		u = next
	}
	return nil, fmt.Errorf("hfhub: %s %s: more than %d redirects", method, u.Redacted(), maxRedirects)
}

// hubHost reports whether u is served by the hub (the endpoint's origin, or one of the hub's public hosts, as
// huggingface_hub's _HUB_ORIGINS): only those get the token.
func (c *Client) hubHost(u *url.URL) bool {
	if sameOrigin(u, c.endpoint) {
		return true
	}
	for _, h := range []string{"https://huggingface.co", "https://hub-ci.huggingface.co", "https://hf.co"} {
		hu, _ := url.Parse(h)
		if sameOrigin(u, hu) {
			return true
		}
	}
	return false
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
