// Package envtool binds an agent to a remote environment service over HTTP (docs/environments.md): tasks whose
// state lives outside agentrt (a container with a repository, a browser). Each episode gets its own environment:
// created when the episode begins (with the prompt's metadata), the episode's tool calls routed to it, an optional
// final reward asked for, and closed when the episode ends, whatever ended it. The service's tools are listed once
// at start-up, because their specs are rendered into every episode's first prompt.
//
// Services that run sandboxes fail under bursts, so creates are paced (creates_per_second), the live environments
// capped (max_concurrent), and a failed create retried with backoff; create is idempotent by episode id, so a
// retry never makes a second environment.
package envtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentrt/agentrt/internal/slots"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// Config is an `env = { ... }` entry of runtime.toml's [[agent.tools]].
type Config struct {
	// URL is the service's base URL; the protocol's paths are relative to it.
	URL string `toml:"url"`
	// Headers are sent with every request (e.g. Authorization); runtime/config expands $VARS in their values.
	Headers map[string]string `toml:"headers"`
	// CreateTimeout bounds one create attempt (default 60 s: a sandbox can take a while to start).
	CreateTimeout time.Duration `toml:"create_timeout"`
	// CloseTimeout bounds closing an environment, retries included (default 30 s).
	CloseTimeout time.Duration `toml:"close_timeout"`
	// RewardTimeout bounds the reward request (default 60 s: it may run a test suite).
	RewardTimeout time.Duration `toml:"reward_timeout"`
	// MaxConcurrent caps the service's live environments (create to close); an episode waits for a free one
	// (0: no cap). Like CreatesPerSecond it is the service's: every entry naming the same URL in one process
	// shares it, so they must agree on it.
	MaxConcurrent int `toml:"max_concurrent"`
	// CreatesPerSecond paces create requests, retries included (0: no pacing). Bursts are not allowed: creates
	// are spaced 1/CreatesPerSecond apart.
	CreatesPerSecond float64 `toml:"creates_per_second"`
	// Retries is how often a failed create (a transport error, a timeout, a 429 or a 5xx) is tried again
	// (default 3; 0: never).
	Retries *int `toml:"retries"`
	// Backoff is the wait before the first retry, doubling for each further one up to 30 s (default 500 ms).
	Backoff time.Duration `toml:"backoff"`
	// Reward asks the environment for the episode's reward before closing it (POST .../reward).
	Reward bool `toml:"reward"`
	// CallTimeout bounds each tool call (runtime sets the entry's timeout, else the agent's tool_timeout; 0: only
	// the caller's context). A call that times out is an error result for the model, not an environment failure.
	CallTimeout time.Duration `toml:"-"`
}

// Validate checks the entry; the error names the offending key (relative to the env table).
func (c *Config) Validate() (key string, err error) {
	switch {
	case c.URL == "":
		return "url", errors.New("set url, the environment service's base URL")
	case !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return "url", fmt.Errorf("%q is not an http:// or https:// URL", c.URL)
	case c.CreateTimeout < 0:
		return "create_timeout", errors.New("must be >= 0")
	case c.CloseTimeout < 0:
		return "close_timeout", errors.New("must be >= 0")
	case c.RewardTimeout < 0:
		return "reward_timeout", errors.New("must be >= 0")
	case c.MaxConcurrent < 0:
		return "max_concurrent", errors.New("must be >= 0")
	case c.CreatesPerSecond < 0 || math.IsNaN(c.CreatesPerSecond) || math.IsInf(c.CreatesPerSecond, 0):
		return "creates_per_second", errors.New("must be a number >= 0")
	case c.Retries != nil && *c.Retries < 0:
		return "retries", errors.New("must be >= 0")
	case c.Backoff < 0:
		return "backoff", errors.New("must be >= 0")
	}
	if _, err := url.Parse(c.URL); err != nil {
		return "url", err
	}
	return "", nil
}

// Name is how the service is named in errors, logs and provenance: "env:" and its URL.
func (c *Config) Name() string { return "env:" + c.URL }

// ServiceKey is what identifies the service whose limits an entry shares: its URL without a trailing slash.
func (c *Config) ServiceKey() string { return strings.TrimRight(c.URL, "/") }

// limits are a service's max_concurrent and creates_per_second, shared by every open Tool that names it: the
// service fails under the sum of their bursts, not under one agent's.
type limits struct {
	maxConcurrent int
	perSecond     float64
	slots         *slots.Limiter // this node's share of maxConcurrent (unbounded when 0, but for a None share)
	limiter       *rate.Limiter  // this node's share of perSecond; nil: no pacing
	refs          int
}

var (
	servicesMu sync.Mutex
	services   = map[string]*limits{}
	share      slots.Share // this process's share of every service's limits (SetShare)
)

// SetShare makes every service's limits, now and for services opened later, this process's share of them: a
// cluster of nodes using the same services splits max_concurrent and creates_per_second between its live nodes
// (docs/scale-out.md, "Limits across nodes"). Environments live above a lowered limit are not closed; new
// creates wait until the service is under it (Within says when).
func SetShare(s slots.Share) {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	share = s
	for _, l := range services {
		l.apply(s)
	}
}

// Within says whether every service has no more environments live than its limit (this process's share).
func Within() bool {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	for _, l := range services {
		if !l.slots.Within() {
			return false
		}
	}
	return true
}

// apply sets the limits to s's share; servicesMu is held.
func (l *limits) apply(s slots.Share) {
	n := math.MaxInt
	switch {
	case l.maxConcurrent > 0:
		n = s.Of(l.maxConcurrent)
	case s.None:
		n = 0
	}
	l.slots.SetLimit(n)
	if l.limiter != nil {
		if r := s.OfRate(l.perSecond); r > 0 { // 0 (a None share): the slots admit nothing anyway
			l.limiter.SetLimit(rate.Limit(r))
		}
	}
}

// shareLimits returns the service's limits, made with cfg's values by the first Tool that names it; a later one
// must ask for the same.
func shareLimits(cfg Config) (*limits, error) {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	key := cfg.ServiceKey()
	if l := services[key]; l != nil {
		if l.maxConcurrent != cfg.MaxConcurrent || l.perSecond != cfg.CreatesPerSecond {
			return nil, fmt.Errorf("max_concurrent %d, creates_per_second %v: another entry uses this service with %d and %v, and the limits are the service's (set the same on both)",
				cfg.MaxConcurrent, cfg.CreatesPerSecond, l.maxConcurrent, l.perSecond)
		}
		l.refs++
		return l, nil
	}
	l := &limits{maxConcurrent: cfg.MaxConcurrent, perSecond: cfg.CreatesPerSecond, refs: 1, slots: slots.New(0)}
	if cfg.CreatesPerSecond > 0 {
		l.limiter = rate.NewLimiter(rate.Limit(cfg.CreatesPerSecond), 1)
	}
	l.apply(share)
	services[key] = l
	return l, nil
}

// unshare drops a Tool's hold on its service's limits.
func (l *limits) unshare(key string) {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	if l.refs--; l.refs == 0 && services[key] == l {
		delete(services, key)
	}
}

func (c *Config) retries() int {
	if c.Retries == nil {
		return 3
	}
	return *c.Retries
}

// Spec is one of the service's tools as offered to the model.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Error is a failure of the environment service itself (unreachable, a bad status, a malformed answer, a create
// that failed every attempt): the episode it happens in cannot go on, and ends as aborted with this reason.
type Error struct {
	// Service is the service's name ("env:" and its URL); Op what failed ("create", "call read_file", ...).
	Service, Op string
	Err         error
}

func (e *Error) Error() string { return fmt.Sprintf("environment %s: %s: %v", e.Service, e.Op, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// EnvironmentFailure marks the error as the environment's (runtime aborts the episode on it).
func (e *Error) EnvironmentFailure() {}

// statusError is a non-2xx answer.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.msg)
}

// paceError is a create whose turn (creates_per_second) would come after the caller's deadline: the deadline, not
// the service, ends it.
type paceError struct{ err error }

func (e *paceError) Error() string {
	return fmt.Sprintf("waiting for a create's turn (creates_per_second): %v", e.err)
}
func (e *paceError) Unwrap() error { return context.DeadlineExceeded }

// retryable says whether a failed attempt may succeed when tried again: transport errors and timeouts, 429 and
// 5xx; other 4xx are the request's fault and would fail again.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code == http.StatusTooManyRequests || se.code >= 500
	}
	return true
}

// Tool is a connected environment service. It is safe for concurrent use.
type Tool struct {
	cfg     Config
	client  *http.Client
	specs   []Spec
	service string // what the service calls itself (GET /tools), for provenance
	limits  *limits
	slots   *slots.Limiter // the service's live environments (MaxConcurrent)
	limiter *rate.Limiter  // the service's pacing; nil: none

	mu     sync.Mutex
	envs   map[string]string // episode id -> env id
	closed bool
	stats  Stats
}

// Stats count what the tool did, for logs and tests.
type Stats struct {
	// Creates are environments created; CreateAttempts the create requests sent (retries included).
	Creates, CreateAttempts int
	// Closes are close requests that succeeded; CloseFailures those that did not.
	Closes, CloseFailures int
}

// Open lists the service's tools (GET {url}/tools, bounded by CreateTimeout, retried like a create).
func Open(ctx context.Context, cfg Config) (*Tool, error) {
	if key, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", cfg.Name(), key, err)
	}
	if cfg.CreateTimeout <= 0 {
		cfg.CreateTimeout = 60 * time.Second
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 30 * time.Second
	}
	if cfg.RewardTimeout <= 0 {
		cfg.RewardTimeout = 60 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	retries := cfg.retries()
	cfg.Retries = &retries
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = max(64, cfg.MaxConcurrent)
	lim, err := shareLimits(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	t := &Tool{cfg: cfg, client: &http.Client{Transport: tr}, envs: map[string]string{}, limits: lim, slots: lim.slots, limiter: lim.limiter}
	ok := false
	defer func() {
		if !ok {
			lim.unshare(cfg.ServiceKey())
			t.client.CloseIdleConnections()
		}
	}()
	var listing struct {
		Service string `json:"service"`
		Tools   []Spec `json:"tools"`
	}
	err = t.retry(ctx, cfg.CreateTimeout, nil, func(actx context.Context) error {
		return t.do(actx, http.MethodGet, "/tools", nil, &listing)
	})
	if err != nil {
		return nil, &Error{t.cfg.Name(), "listing tools", err}
	}
	for _, s := range listing.Tools {
		if s.Name == "" {
			return nil, &Error{t.cfg.Name(), "listing tools", errors.New("a tool without a name")}
		}
		if len(s.Parameters) == 0 || string(s.Parameters) == "null" {
			s.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.specs = append(t.specs, s)
	}
	if len(t.specs) == 0 {
		return nil, &Error{t.cfg.Name(), "listing tools", errors.New("the service offers no tools")}
	}
	t.service = listing.Service
	ok = true
	return t, nil
}

// Service is the name and version the service gave with its tools ("" if none), for provenance.
func (t *Tool) Service() string { return t.service }

// Specs are the service's tools, in the service's order.
func (t *Tool) Specs() []Spec { return t.specs }

// Config is the entry with its defaults filled in.
func (t *Tool) Config() Config { return t.cfg }

// Stats are the counts so far.
func (t *Tool) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// BeginEpisode creates the episode's environment: it waits for a free slot (max_concurrent) and the pacing
// (creates_per_second), then POSTs {url}/create, retrying with backoff. An error is an *Error, or ctx's error when
// ctx ended first (the caller reports the deadline or cancellation).
func (t *Tool) BeginEpisode(ctx context.Context, episodeID string, metadata json.RawMessage) error {
	t.mu.Lock()
	closed, dup := t.closed, t.envs[episodeID] != ""
	t.mu.Unlock()
	if closed {
		return &Error{t.cfg.Name(), "create", errors.New("the tool is closed")}
	}
	if dup {
		return &Error{t.cfg.Name(), "create", fmt.Errorf("episode %q already has an environment", episodeID)}
	}
	if err := t.slots.Acquire(ctx); err != nil {
		return ctx.Err()
	}
	if len(metadata) == 0 {
		metadata = json.RawMessage("null")
	}
	body := struct {
		EpisodeID string          `json:"episode_id"`
		Metadata  json.RawMessage `json:"metadata"`
	}{episodeID, metadata}
	var resp struct {
		EnvID string `json:"env_id"`
	}
	err := t.retry(ctx, t.cfg.CreateTimeout, t.limiter, func(actx context.Context) error {
		t.mu.Lock()
		t.stats.CreateAttempts++
		t.mu.Unlock()
		if err := t.do(actx, http.MethodPost, "/create", body, &resp); err != nil {
			return err
		}
		if resp.EnvID == "" {
			return errors.New("the answer has no env_id")
		}
		return nil
	})
	if err != nil {
		t.release()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if pe := (*paceError)(nil); errors.As(err, &pe) {
			return pe
		}
		return &Error{t.cfg.Name(), "create", err}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		// The tool closed meanwhile: nobody else would close this one.
		go t.closeEnv(resp.EnvID)
		return &Error{t.cfg.Name(), "create", errors.New("the tool closed while the environment was created")}
	}
	t.envs[episodeID] = resp.EnvID
	t.stats.Creates++
	return nil
}

func (t *Tool) release() { t.slots.Release() }

// retry runs attempt (each bounded by perAttempt) until it succeeds, fails for good, or ctx ends: up to 1+Retries
// times, waiting Backoff, 2*Backoff, ... (at most 30 s) in between. With a pace, each attempt first waits for
// its turn, on ctx: a long queue of creates must not eat the attempts' own time.
func (t *Tool) retry(ctx context.Context, perAttempt time.Duration, pace *rate.Limiter, attempt func(context.Context) error) error {
	wait := t.cfg.Backoff
	n := t.cfg.retries()
	for i := 0; ; i++ {
		if pace != nil {
			if err := pace.Wait(ctx); err != nil {
				if ctx.Err() == nil { // the turn would come after ctx's deadline: that deadline is what ends it
					return &paceError{err}
				}
				return ctx.Err()
			}
		}
		actx, cancel := context.WithTimeout(ctx, perAttempt)
		err := attempt(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if timedOut && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s: %w", perAttempt, err)
		}
		if ctx.Err() != nil || i >= n || !retryable(err) {
			if i > 0 {
				return fmt.Errorf("%w (after %d attempts)", err, i+1)
			}
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (then %w while waiting to retry)", err, ctx.Err())
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// Call calls a tool outside any episode: there is no environment to route it to.
func (t *Tool) Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error) {
	return t.CallEpisode(ctx, "", name, args)
}

// CallEpisode routes a tool call to the episode's environment (POST {url}/envs/{env_id}/call). The environment's
// own errors (is_error), arguments that are not a JSON object and a call past CallTimeout are error results for
// the model; an unreachable or failing service is an *Error; ctx's end is ctx's error.
func (t *Tool) CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error) {
	var obj map[string]json.RawMessage
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return errorResult(fmt.Sprintf("Error: the arguments of %s are not a JSON object: %s", name, args)), nil
	}
	t.mu.Lock()
	envID := t.envs[episodeID]
	t.mu.Unlock()
	if envID == "" {
		return abi.ToolResult{}, &Error{t.cfg.Name(), "call " + name, fmt.Errorf("episode %q has no environment", episodeID)}
	}
	cctx := ctx
	if t.cfg.CallTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, t.cfg.CallTimeout)
		defer cancel()
	}
	body := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, args}
	var resp struct {
		Content *string `json:"content"`
		IsError bool    `json:"is_error"`
	}
	if err := t.do(cctx, http.MethodPost, "/envs/"+url.PathEscape(envID)+"/call", body, &resp); err != nil {
		if ctx.Err() != nil {
			return abi.ToolResult{}, ctx.Err()
		}
		if cctx.Err() != nil {
			return errorResult(fmt.Sprintf("Error: tool %s timed out after %s", name, t.cfg.CallTimeout)), nil
		}
		return abi.ToolResult{}, &Error{t.cfg.Name(), "call " + name, err}
	}
	if resp.Content == nil {
		return abi.ToolResult{}, &Error{t.cfg.Name(), "call " + name, errors.New("the answer has no content")}
	}
	return abi.ToolResult{Text: resp.Content, IsError: resp.IsError}, nil
}

// EpisodeReward asks the episode's environment for its reward (POST {url}/envs/{env_id}/reward), when the entry
// has reward = true and the episode has an environment; nil when it gives none (a null reward). Its error is an
// *Error.
func (t *Tool) EpisodeReward(ctx context.Context, episodeID string) (*float64, error) {
	if !t.cfg.Reward {
		return nil, nil
	}
	t.mu.Lock()
	envID := t.envs[episodeID]
	t.mu.Unlock()
	if envID == "" {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, t.cfg.RewardTimeout)
	defer cancel()
	var resp struct {
		Reward *float64 `json:"reward"`
	}
	if err := t.do(rctx, http.MethodPost, "/envs/"+url.PathEscape(envID)+"/reward", struct{}{}, &resp); err != nil {
		return nil, &Error{t.cfg.Name(), "reward", err}
	}
	if resp.Reward != nil && (math.IsNaN(*resp.Reward) || math.IsInf(*resp.Reward, 0)) {
		return nil, &Error{t.cfg.Name(), "reward", fmt.Errorf("reward %v is not a finite number", *resp.Reward)}
	}
	return resp.Reward, nil
}

// CloseEpisode closes the episode's environment (POST {url}/envs/{env_id}/close) and frees its slot. It runs on a
// context of its own, bounded by CloseTimeout, so that an episode that was cancelled still closes what it made;
// nothing to close is not an error.
func (t *Tool) CloseEpisode(ctx context.Context, episodeID string) error {
	t.mu.Lock()
	envID, ok := t.envs[episodeID]
	delete(t.envs, episodeID)
	t.mu.Unlock()
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.CloseTimeout)
	defer cancel()
	return t.closeEnvCtx(cctx, envID)
}

func (t *Tool) closeEnv(envID string) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.CloseTimeout)
	defer cancel()
	t.closeEnvCtx(ctx, envID)
}

// closeEnvCtx closes an environment, retrying like a create within ctx; the slot is freed whatever the answer
// (the service's own reaping is the last resort for an environment that could not be closed).
func (t *Tool) closeEnvCtx(ctx context.Context, envID string) error {
	defer t.release()
	err := t.retry(ctx, t.cfg.CloseTimeout, nil, func(actx context.Context) error {
		err := t.do(actx, http.MethodPost, "/envs/"+url.PathEscape(envID)+"/close", struct{}{}, nil)
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusNotFound {
			return nil // gone already: closed is closed
		}
		return err
	})
	t.mu.Lock()
	if err != nil {
		t.stats.CloseFailures++
	} else {
		t.stats.Closes++
	}
	t.mu.Unlock()
	if err != nil {
		return &Error{t.cfg.Name(), "close " + envID, err}
	}
	return nil
}

// EndEpisode closes the episode's environment, if it has one (the error is dropped: CloseEpisode reports it).
func (t *Tool) EndEpisode(episodeID string) { t.CloseEpisode(context.Background(), episodeID) }

// Close closes every environment still open (a shutdown with episodes in flight) and refuses new ones.
func (t *Tool) Close(ctx context.Context) error {
	t.mu.Lock()
	already := t.closed
	t.closed = true
	envs := t.envs
	t.envs = map[string]string{}
	t.mu.Unlock()
	if !already {
		defer t.limits.unshare(t.cfg.ServiceKey())
	}
	var errs []error
	for _, envID := range envs {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.CloseTimeout)
		errs = append(errs, t.closeEnvCtx(cctx, envID))
		cancel()
	}
	t.client.CloseIdleConnections()
	return errors.Join(errs...)
}

// maxAnswerBytes bounds an answer: a tool result past the agent's max_tool_result_bytes is refused there anyway.
const maxAnswerBytes = 64 << 20

// do sends one JSON request and decodes a 2xx answer into out (nil: the body is drained and ignored). A non-2xx
// answer is a *statusError carrying the body's "error" (or its start).
func (t *Tool) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.cfg.URL+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range t.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if len(b) > maxAnswerBytes {
		return fmt.Errorf("the answer is over %d bytes", maxAnswerBytes)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return &statusError{resp.StatusCode, msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return nil
}

func errorResult(msg string) abi.ToolResult { return abi.ToolResult{Text: &msg, IsError: true} }
