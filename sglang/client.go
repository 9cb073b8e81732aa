package sglang

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/internal/slots"
)

// RoutingKeyHeader is the Model Gateway header that pins requests with the same key to one worker
// (gateway policies "manual" and "consistent_hashing").
const RoutingKeyHeader = "X-SMG-Routing-Key"

// maxBodyBytes bounds how much of a response body is read (a 128k-token response with top logprobs is
// well below this).
const maxBodyBytes = 512 << 20

// maxErrorBody bounds the body kept in an HTTPError.
const maxErrorBody = 64 << 10

// Client talks to SGLang workers or a Model Gateway. It is safe for concurrent use. Close it to release
// idle connections.
type Client struct {
	cfg        Config
	hc         *http.Client
	ownsHC     bool
	log        *slog.Logger
	backoff    func(attempt int) time.Duration
	gateway    *worker   // nil without a gateway
	workers    []*worker // admin targets (and /generate targets without a gateway)
	generators []*worker // /generate targets: {gateway} or workers
	rr         atomic.Uint64
	retries    atomic.Uint64
	closed     atomic.Bool
	done       chan struct{} // closed by Close: stops the adaptive controllers

	inflight sync.Map // base rid -> *pending, for each Generate in progress (for AbortRequest)

	// shareMu guards share (SetShare) and each worker's fixed, and orders the changes of a worker's bound.
	shareMu sync.Mutex
	share   slots.Share
	places  placements // PlacementLeastLoaded: where each group and episode was placed
}

// pending is a Generate in progress: where its current attempt runs and under which rid.
type pending struct {
	mu      sync.Mutex
	w       *worker
	rid     string
	aborted bool
}

// worker is one endpoint with its concurrency bound and health.
type worker struct {
	url  string
	seed uint64
	lim  *slots.Limiter
	// fixed: the adaptive controller gave up on this worker (no /v1/loads); guarded by Client.shareMu.
	fixed bool

	inFlight atomic.Int64
	// inFlightTokens is the input tokens of the requests in flight (the KV cache they hold at the worker).
	inFlightTokens atomic.Int64
	queued         atomic.Int64
	requests       atomic.Uint64
	failures       atomic.Uint64
	// queuedTokens is the input tokens of the requests waiting here for a slot.
	queuedTokens atomic.Int64
	// serverLoad is the used + waiting tokens of the worker's last /v1/loads reading (adaptive only), taken at
	// loadAt (UnixNano; 0: never).
	serverLoad atomic.Int64
	loadAt     atomic.Int64

	mu             sync.Mutex
	consecutive    int
	unhealthyUntil time.Time
}

// New builds a Client from cfg (validated here) and options. Nothing needs closing if it fails.
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{
		cfg:     cfg,
		log:     o.logger,
		backoff: o.backoff,
		done:    make(chan struct{}),
		places:  placements{ttl: cfg.PlacementTTL, m: map[placeKey]*placement{}},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o.httpClient != nil {
		c.hc = o.httpClient
	} else {
		c.hc = &http.Client{Transport: newTransport(cfg.MaxInFlightPerWorker)}
		c.ownsHC = true
	}
	cfg.Adaptive.fill()
	c.cfg.Adaptive = cfg.Adaptive
	limit := cfg.MaxInFlightPerWorker
	if cfg.Adaptive.Enabled {
		limit = min(max(cfg.Adaptive.Initial, cfg.Adaptive.Min), cfg.MaxInFlightPerWorker)
	}
	for _, u := range cfg.Workers {
		c.workers = append(c.workers, newWorker(u, limit))
	}
	if cfg.Gateway != "" {
		c.gateway = newWorker(cfg.Gateway, cfg.MaxInFlightPerWorker)
		c.generators = []*worker{c.gateway}
	} else {
		c.generators = c.workers
	}
	if cfg.Adaptive.Enabled {
		for _, w := range c.workers {
			go c.adaptLoop(w) // until Close
		}
	}
	return c, nil
}

func newWorker(u string, limit int) *worker {
	u = normalizeURL(u)
	return &worker{url: u, seed: hashString(u), lim: slots.New(limit)}
}

// newTransport is tuned for thousands of concurrent long requests to a few hosts (go-libs-measured.md §6):
// idle connections kept per host up to the concurrency bound (the default of 2 causes a storm of dials),
// no compression, no proxy, no header timeout (generations are long; ctx bounds them), HTTP/1.1 (uvicorn).
// Idle connections are dropped after 4 s, before uvicorn's default 5 s keep-alive closes them under us.
func newTransport(perHost int) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   max(perHost, 64),
		MaxConnsPerHost:       0,
		IdleConnTimeout:       4 * time.Second, // below uvicorn's 5 s keep-alive: never write to a connection the server is closing
		TLSHandshakeTimeout:   10 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0,
		ReadBufferSize:        64 << 10,
		WriteBufferSize:       64 << 10,
	}
}

// Close releases idle connections. Calls made after Close fail with ErrClosed; calls in flight finish.
func (c *Client) Close() error {
	if !c.closed.Swap(true) {
		close(c.done)
	}
	if c.ownsHC {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// Workers returns the configured worker base URLs (normalized, without a trailing slash).
func (c *Client) Workers() []string {
	out := make([]string, len(c.workers))
	for i, w := range c.workers {
		out[i] = w.url
	}
	return out
}

// Gateway returns the configured Model Gateway base URL, or "".
func (c *Client) Gateway() string {
	if c.gateway == nil {
		return ""
	}
	return c.gateway.url
}

// Generate sends one non-streaming /generate request and returns its response.
//
// episodeID, and the group of ctx (WithGroup), drive affinity, so that SGLang's radix cache is reused: under
// Config.Affinity "group" a group's requests go to one worker (its samples' shared prompt is cached there),
// under "episode" each episode picks its own; either way an episode's turns stay where they started. Where a new
// group or episode goes is Config.Placement: the least-loaded worker, then kept ("least_loaded"), or rendezvous
// hashing of the key ("rendezvous"). A request spills to another worker while its own is at
// MaxInFlightPerWorker or marked unhealthy. With a gateway, the key (the group, or episodeID) is sent as
// X-SMG-Routing-Key. Requests with neither a group nor an episodeID are spread by load (round-robin under
// rendezvous).
//
// req is not modified. If req.RID is empty a random one is sent; retries after the first attempt send
// RID + "-retry<n>" (SGLang rejects a rid that is still in flight, and the first attempt may be). The
// response's Server, Attempts and MetaInfo.ID say where and how it was served.
//
// # Errors
//
// Every error is an *Error (Op "generate", Server, RID, Attempts). Match the cause with errors.Is:
// ErrContextLength and other ErrBadRequest, ErrUnauthorized, ErrNotFound (never retried); ErrUnavailable
// (408/429/5xx), ErrConnection, ErrTimeout and undecodable ErrBadResponse (retried with backoff within the
// deadline: ctx's, or Config.RequestTimeout); ErrBadResponse for a missing required field (not retried);
// ErrAborted for finish_reason "abort", as an *AbortError holding the partial response (not retried);
// context.Canceled / context.DeadlineExceeded when ctx ends. errors.As gives the *HTTPError.
func (c *Client) Generate(ctx context.Context, episodeID string, req *GenerateRequest) (*GenerateResponse, error) {
	if req == nil {
		return nil, &Error{Op: "generate", Err: errors.New("sglang: nil request")}
	}
	if len(req.InputIDs) == 0 && req.Text == "" {
		return nil, &Error{Op: "generate", RID: req.RID, Err: errors.New("sglang: request has neither input_ids nor text")}
	}
	if req.SamplingParams.MaxNewTokens < 0 {
		return nil, &Error{Op: "generate", RID: req.RID, Err: fmt.Errorf("sglang: max_new_tokens must be >= 0, got %d", req.SamplingParams.MaxNewTokens)}
	}
	if c.closed.Load() {
		return nil, &Error{Op: "generate", RID: req.RID, Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "generate", RID: req.RID, Err: err}
	}
	if c.cfg.RequestTimeout > 0 {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
			defer cancel()
		}
	}

	baseRID := req.RID
	if baseRID == "" {
		baseRID = newRID()
	}
	wire := *req // shallow copy: only RID and Stream change
	wire.Stream = false
	p := c.track(baseRID)
	if p == nil {
		return nil, &Error{Op: "generate", RID: baseRID, Err: fmt.Errorf("sglang: rid %q is already in flight from this client", baseRID)}
	}
	defer c.untrack(baseRID)

	var (
		lastErr error
		last    *worker
		rid     string
	)
	for attempt := 1; ; attempt++ {
		rid = baseRID
		if attempt > 1 {
			rid = baseRID + "-retry" + strconv.Itoa(attempt)
		}
		wire.RID = rid
		w, err := c.acquire(ctx, episodeID, len(req.InputIDs))
		if err != nil {
			if lastErr == nil {
				lastErr = err
			}
			return nil, c.fail("generate", last, rid, attempt-1, lastErr, err)
		}
		last = w
		w.inFlightTokens.Add(int64(len(req.InputIDs)))
		if c.setAttempt(p, w, rid) {
			w.inFlightTokens.Add(-int64(len(req.InputIDs)))
			c.release(w)
			return nil, &Error{Op: "generate", Server: w.url, RID: rid, Attempts: attempt - 1,
				Err: &AbortError{Message: "aborted by AbortRequest between retries"}}
		}
		resp, retryAfter, err := c.generateOnce(ctx, w, episodeID, &wire)
		w.inFlightTokens.Add(-int64(len(req.InputIDs)))
		c.release(w)
		if err == nil {
			w.succeeded()
			resp.Server = w.url
			resp.Attempts = attempt
			return resp, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, c.fail("generate", w, rid, attempt, lastErr, ctx.Err())
		}
		if !retryable(err) {
			w.succeeded() // the worker answered; the request itself is at fault
			return nil, &Error{Op: "generate", Server: w.url, RID: rid, Attempts: attempt, Err: err}
		}
		w.failed(c, err)
		if attempt >= c.cfg.Retry.MaxAttempts {
			return nil, &Error{Op: "generate", Server: w.url, RID: rid, Attempts: attempt, Err: lastErr}
		}
		delay := c.delay(attempt, retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			// the backoff alone would outlive the deadline: report the real failure now
			return nil, &Error{Op: "generate", Server: w.url, RID: rid, Attempts: attempt, Err: lastErr}
		}
		c.retries.Add(1)
		c.log.Debug("sglang: retrying generate", "server", w.url, "rid", rid, "attempt", attempt, "delay", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, c.fail("generate", w, rid, attempt, lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

// fail builds the final *Error. When ctx ended, the context error is the cause (so errors.Is works for
// context.DeadlineExceeded) and the last failure is kept in the message.
func (c *Client) fail(op string, w *worker, rid string, attempts int, last, ctxErr error) error {
	e := &Error{Op: op, RID: rid, Attempts: attempts, Err: last}
	if w != nil {
		e.Server = w.url
	}
	if ctxErr != nil && last != nil && !errors.Is(last, ctxErr) {
		e.Err = fmt.Errorf("%w (last failure: %v)", ctxErr, last)
	} else if ctxErr != nil && last == nil {
		e.Err = ctxErr
	}
	return e
}

// retryable reports whether an attempt's failure is worth another attempt.
func retryable(err error) bool {
	var re *responseError
	if errors.As(err, &re) {
		return re.retry
	}
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnection) || errors.Is(err, ErrTimeout)
}

func (c *Client) delay(attempt, retryAfter int) time.Duration {
	var d time.Duration
	if c.backoff != nil {
		d = c.backoff(attempt)
	} else {
		r := c.cfg.Retry
		f := float64(r.InitialBackoff) * math.Pow(r.Multiplier, float64(attempt-1))
		if f > float64(r.MaxBackoff) {
			f = float64(r.MaxBackoff)
		}
		if r.Jitter > 0 {
			f *= 1 + r.Jitter*(2*rand.Float64()-1)
		}
		d = time.Duration(f)
	}
	if ra := time.Duration(retryAfter) * time.Second; ra > d {
		d = ra
	}
	return d
}

// generateOnce makes one HTTP attempt. retryAfter is the server's Retry-After in seconds.
func (c *Client) generateOnce(ctx context.Context, w *worker, episodeID string, req *GenerateRequest) (*GenerateResponse, int, error) {
	t0 := time.Now()
	size := 320 // the body, or without the ids when they are kept in req.IDsCache
	if req.IDsCache == nil || len(req.InputIDs) < idsCacheFrom {
		size += 7 * len(req.InputIDs)
	}
	parts, n, err := req.body(make([]byte, 0, size))
	if err != nil {
		return nil, 0, err
	}
	actx := ctx
	if c.cfg.Retry.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.cfg.Retry.AttemptTimeout)
		defer cancel()
	}
	var hreq *http.Request
	if len(parts) == 1 || n <= joinBelow {
		// one buffer: net/http sends an in-memory body with its headers, in one write
		body := parts[0]
		if len(parts) > 1 {
			body = slices.Concat(parts...)
		}
		hreq, err = http.NewRequestWithContext(actx, http.MethodPost, w.url+"/generate", bytes.NewReader(body))
	} else {
		// the kept ids' array is sent where it lies, chunked (see partsReader)
		hreq, err = http.NewRequestWithContext(actx, http.MethodPost, w.url+"/generate", newPartsReader(parts))
		if err == nil {
			hreq.ContentLength = -1 // unknown to net/http: it sends Transfer-Encoding: chunked
			hreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(newPartsReader(parts)), nil }
		}
	}
	if err != nil {
		return nil, 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if w == c.gateway {
		if key := c.routeKey(ctx, episodeID); key != "" {
			hreq.Header.Set(RoutingKeyHeader, key)
		}
	}
	buf := getBuf()
	defer putBuf(buf)
	encode := time.Since(t0)
	status, header, err := c.do(ctx, actx, hreq, buf)
	if err != nil {
		return nil, 0, err
	}
	if status < 200 || status > 299 {
		return nil, parseRetryAfter(header.Get("Retry-After")), newHTTPError(w.url, req.RID, status, buf.Bytes())
	}
	t1 := time.Now()
	resp, err := decodeGenerateResponse(buf.Bytes(), req.ReturnLogprob)
	if err != nil {
		return nil, 0, err
	}
	resp.ClientTime = encode + time.Since(t1)
	if fr := resp.MetaInfo.FinishReason; fr.Type == FinishAbort {
		resp.Server = w.url
		return nil, 0, &AbortError{Message: fr.Message, StatusCode: fr.StatusCode, ErrType: fr.ErrType, Response: resp}
	}
	return resp, 0, nil
}

// do sends hreq and reads the whole body into buf, draining and closing it. ctx is the request's, actx
// the attempt's (they differ with an attempt timeout).
func (c *Client) do(ctx, actx context.Context, hreq *http.Request, buf *bytes.Buffer) (int, http.Header, error) {
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return 0, nil, transportError(ctx, actx, err)
	}
	defer hresp.Body.Close()
	if n := hresp.ContentLength; n > 0 && n < maxBodyBytes {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(io.LimitReader(hresp.Body, maxBodyBytes+1))
	if err != nil {
		return 0, nil, transportError(ctx, actx, err)
	}
	if buf.Len() > maxBodyBytes {
		return 0, nil, &responseError{msg: fmt.Sprintf("body larger than %d bytes", maxBodyBytes)}
	}
	return hresp.StatusCode, hresp.Header, nil
}

// transportError classifies a failure to send or read: the caller's ctx ending is returned as is (not
// retried); an attempt timeout is ErrTimeout; anything else (refused, reset, truncated) is ErrConnection.
func transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if actx.Err() != nil {
		return &connError{err: err, timeout: true}
	}
	var op *net.OpError
	return &connError{err: err, dial: errors.As(err, &op) && op.Op == "dial"}
}

func newHTTPError(server, rid string, status int, body []byte) *HTTPError {
	e := &HTTPError{Server: server, RID: rid, StatusCode: status, Message: errorMessage(body)}
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	e.Body = string(body)
	return e
}

// responseWire finds missing required fields: nil means absent (or null).
type responseWire struct {
	Text      string    `json:"text"`
	OutputIDs []int32   `json:"output_ids"`
	MetaInfo  *MetaInfo `json:"meta_info"`
}

// decodeGenerateResponse decodes and checks a non-stream /generate body.
func decodeGenerateResponse(body []byte, wantLogprobs bool) (*GenerateResponse, error) {
	w, ok := fastDecode(body)
	if !ok {
		if err := json.Unmarshal(body, &w); err != nil {
			var ute *json.UnmarshalTypeError
			if errors.As(err, &ute) {
				// valid JSON of the wrong shape: a server bug or an incompatible version, not transient
				if len(body) > 0 && body[0] == '[' {
					return nil, &responseError{msg: "got a JSON array (a batch response); Generate sends single requests"}
				}
				return nil, &responseError{msg: "unexpected JSON shape", err: err}
			}
			return nil, &responseError{msg: fmt.Sprintf("undecodable body (%d bytes)", len(body)), err: err, retry: true}
		}
	}
	switch {
	case w.OutputIDs == nil:
		return nil, &responseError{msg: `missing required field "output_ids"`}
	case w.MetaInfo == nil:
		return nil, &responseError{msg: `missing required field "meta_info"`}
	case w.MetaInfo.FinishReason == nil:
		return nil, &responseError{msg: `missing required field "meta_info.finish_reason"`}
	}
	if w.MetaInfo.FinishReason.Type != FinishAbort && wantLogprobs {
		if w.MetaInfo.OutputTokenLogprobs == nil {
			return nil, &responseError{msg: `missing required field "meta_info.output_token_logprobs" (return_logprob was set)`}
		}
		if len(w.MetaInfo.OutputTokenLogprobs) != len(w.OutputIDs) {
			return nil, &responseError{msg: fmt.Sprintf("meta_info.output_token_logprobs has %d entries for %d output_ids",
				len(w.MetaInfo.OutputTokenLogprobs), len(w.OutputIDs))}
		}
	}
	return &GenerateResponse{Text: w.Text, OutputIDs: w.OutputIDs, MetaInfo: *w.MetaInfo}, nil
}

// --- worker selection -------------------------------------------------------------------------------------

// acquire picks the worker for a request and takes one of its in-flight slots, waiting if every candidate is
// full: acquireSticky under PlacementLeastLoaded; under PlacementRendezvous the workers are ranked by rendezvous
// hash of (worker, key), the first healthy one with a free slot wins, and if none is free the request queues on
// the first healthy one.
func (c *Client) acquire(ctx context.Context, episodeID string, tokens int) (*worker, error) {
	ws := c.generators
	if len(ws) == 1 {
		w := ws[0]
		return w, w.acquire(ctx, tokens)
	}
	if c.cfg.Placement != PlacementRendezvous {
		return c.acquireSticky(ctx, episodeID, tokens)
	}
	var buf [16]*worker
	order := c.rank(buf[:0], c.routeKey(ctx, episodeID))
	now := time.Now()
	var firstHealthy *worker
	for _, w := range order {
		if !w.healthy(now) {
			continue
		}
		if firstHealthy == nil {
			firstHealthy = w
		}
		if w.tryAcquire() {
			return w, nil
		}
	}
	if firstHealthy == nil {
		// every worker is marked unhealthy: try the preferred one rather than fail
		firstHealthy = order[0]
		if firstHealthy.tryAcquire() {
			return firstHealthy, nil
		}
	}
	return firstHealthy, firstHealthy.acquire(ctx, tokens)
}

// rank orders the /generate targets for a key: highest rendezvous score first; an empty key rotates.
func (c *Client) rank(dst []*worker, key string) []*worker {
	ws := c.generators
	dst = append(dst, ws...)
	if key == "" {
		k := int(c.rr.Add(1) % uint64(len(ws)))
		for i := range dst {
			dst[i] = ws[(k+i)%len(ws)]
		}
		return dst
	}
	h := hashString(key)
	// insertion sort by descending score; worker counts are small
	var sbuf [16]uint64
	scores := sbuf[:0]
	for _, w := range dst {
		scores = append(scores, mix64(h^w.seed))
	}
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && scores[j] > scores[j-1]; j-- {
			scores[j], scores[j-1] = scores[j-1], scores[j]
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// Rank returns the worker URLs in the order rendezvous hashing prefers them for a key (an episode id, or a group
// under AffinityGroup), ignoring load and health: under PlacementRendezvous the first one is the key's home
// worker. With a gateway it returns just the gateway.
func (c *Client) Rank(episodeID string) []string {
	if episodeID == "" {
		episodeID = "\x00"
	}
	order := c.rank(nil, episodeID)
	out := make([]string, len(order))
	for i, w := range order {
		out[i] = w.url
	}
	return out
}

func (c *Client) release(w *worker) {
	w.inFlight.Add(-1)
	w.lim.Release()
}

func (w *worker) tryAcquire() bool {
	if !w.lim.TryAcquire() {
		return false
	}
	w.inFlight.Add(1)
	w.requests.Add(1)
	return true
}

func (w *worker) acquire(ctx context.Context, tokens int) error {
	if w.tryAcquire() {
		return nil
	}
	w.queued.Add(1)
	w.queuedTokens.Add(int64(tokens))
	defer func() {
		w.queued.Add(-1)
		w.queuedTokens.Add(-int64(tokens))
	}()
	if err := w.lim.Acquire(ctx); err != nil {
		return err
	}
	w.inFlight.Add(1)
	w.requests.Add(1)
	return nil
}

func (w *worker) healthy(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !now.Before(w.unhealthyUntil)
}

func (w *worker) succeeded() {
	w.mu.Lock()
	w.consecutive = 0
	w.unhealthyUntil = time.Time{}
	w.mu.Unlock()
}

// failed counts a transient failure. A connection that could not be opened marks the worker unhealthy at
// once; other failures (a 503, a reset on a reused connection) only after UnhealthyAfter in a row.
func (w *worker) failed(c *Client, err error) {
	w.failures.Add(1)
	n := 1
	var ce *connError
	if errors.As(err, &ce) && ce.dial {
		n = c.cfg.UnhealthyAfter
	}
	w.mu.Lock()
	w.consecutive += n
	mark := w.consecutive >= c.cfg.UnhealthyAfter
	if mark {
		w.unhealthyUntil = time.Now().Add(c.cfg.UnhealthyFor)
	}
	w.mu.Unlock()
	if mark {
		c.log.Warn("sglang: worker marked unhealthy", "server", w.url, "for", c.cfg.UnhealthyFor, "err", err)
	}
}

// track registers a Generate under its base rid; nil if that rid is already in flight.
func (c *Client) track(rid string) *pending {
	p := &pending{}
	if _, dup := c.inflight.LoadOrStore(rid, p); dup {
		return nil
	}
	return p
}

func (c *Client) untrack(rid string) { c.inflight.Delete(rid) }

// setAttempt records the attempt about to start; it reports whether AbortRequest already hit the rid.
func (c *Client) setAttempt(p *pending, w *worker, rid string) (aborted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w, p.rid = w, rid
	return p.aborted
}

// --- stats ----------------------------------------------------------------------------------------------

// Stats is a snapshot of the Client's counters, for metrics.
type Stats struct {
	// Retries counts /generate retries (attempts after the first).
	Retries uint64
	// Workers has one entry per /generate target (the gateway, or each worker).
	Workers []WorkerStats
}

// WorkerStats are one target's counters.
type WorkerStats struct {
	URL string
	// InFlight is the number of requests being sent or awaited now.
	InFlight int
	// Queued is the number of requests waiting for an in-flight slot now.
	Queued int
	// Requests counts attempts started; Failures counts attempts that failed transiently.
	Requests, Failures uint64
	// Healthy is false while the worker is marked unhealthy.
	Healthy bool
	// Limit is the in-flight bound now (max_in_flight_per_worker, or the adaptive one).
	Limit int
}

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats {
	now := time.Now()
	s := Stats{Retries: c.retries.Load(), Workers: make([]WorkerStats, len(c.generators))}
	for i, w := range c.generators {
		s.Workers[i] = WorkerStats{
			URL:      w.url,
			InFlight: int(w.inFlight.Load()),
			Queued:   int(w.queued.Load()),
			Requests: w.requests.Load(),
			Failures: w.failures.Load(),
			Healthy:  w.healthy(now),
			Limit:    w.lim.Limit(),
		}
	}
	return s
}

// --- helpers ----------------------------------------------------------------------------------------------

// joinBelow is the body size under which a body in parts (IDsCache) is joined into one buffer: copying it costs
// less than the extra write that net/http makes for a body it does not know to be in memory.
const joinBelow = 64 << 10

// partsReader reads byte slices one after the other: a request body whose ids' array is kept between requests
// (IDsCache) is sent without copying it into one buffer. It never writes to the slices.
//
// Such a body (joinBelow and more) is sent chunked (Transfer-Encoding: chunked, HTTP/1.1's framing for a body whose
// length the sender does not announce), each part one chunk written from where it lies (WriteTo): net/http wraps a
// body of known length in an io.LimitedReader and copies it through a 32 KB buffer, one write each, which at 118k
// ids (a 556 KB body) cost ~130 µs a turn more (bench/results/long-horizon.md, Phase 4). SGLang's server (uvicorn),
// the SGLang Model Gateway and sglang-router accept chunked requests (cmd/agentrt's TestGatewaysLongBody).
type partsReader struct {
	parts  [][]byte
	i, off int // the next byte is parts[i][off]
}

func newPartsReader(parts [][]byte) *partsReader { return &partsReader{parts: parts} }

// WriteTo writes the parts left, one Write each: a chunked body's chunks, written without a copy.
func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for ; r.i < len(r.parts); r.i, r.off = r.i+1, 0 {
		if len(r.parts[r.i]) == r.off {
			continue // an empty part would be a chunk of size 0: the body's end
		}
		k, err := w.Write(r.parts[r.i][r.off:])
		n += int64(k)
		if err != nil {
			r.off += k
			return n, err
		}
	}
	return n, nil
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.parts) {
		k := copy(p[n:], r.parts[r.i][r.off:])
		n += k
		if r.off += k; r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && r.i == len(r.parts) {
		return 0, io.EOF
	}
	return n, nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuf(b *bytes.Buffer) {
	if b.Cap() > 4<<20 {
		return // don't keep huge buffers alive
	}
	b.Reset()
	bufPool.Put(b)
}

// newRID returns 32 random hex digits, like SGLang's uuid4().hex default.
func newRID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return hex.EncodeToString(b[:])
}

// hashString is FNV-1a 64.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the splitmix64 finalizer, so rendezvous scores are well spread.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
