package sglang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// The calls below make one attempt each (no retries), bounded by ctx or Config.AdminTimeout.
//
// The server argument selects where a call goes: a configured worker or gateway URL, or "" for the
// default. For actions (health checks, aborts, pause/continue, cache flush, weight updates) "" means
// every worker, concurrently, with the failures joined. For queries (model info, server info, models)
// "" means the first of the gateway and the workers that answers.

// Health checks GET /health (200 healthy, 503 starting, stopping or stuck). On a real SGLang server it
// also runs a 1-token generation. "" checks every worker, or the gateway without workers.
func (c *Client) Health(ctx context.Context, server string) error {
	return c.fanOut(ctx, "health", server, false, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodGet, "/health", nil, nil)
	})
}

// HealthGenerate checks GET /health_generate (a 1-token generation).
func (c *Client) HealthGenerate(ctx context.Context, server string) error {
	return c.fanOut(ctx, "health_generate", server, false, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodGet, "/health_generate", nil, nil)
	})
}

// ModelInfo returns GET /model_info.
func (c *Client) ModelInfo(ctx context.Context, server string) (*ModelInfo, error) {
	var out ModelInfo
	if err := c.query(ctx, "model_info", server, "/model_info", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ServerInfo returns GET /server_info: a flat object of every server argument (context_length,
// page_size, tp_size, ...) plus scheduler info (max_total_num_tokens, max_req_input_len), version, and
// internal_states. Numbers decode as json.Number.
func (c *Client) ServerInfo(ctx context.Context, server string) (map[string]any, error) {
	var out map[string]any
	if err := c.query(ctx, "server_info", server, "/server_info", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Models returns GET /v1/models.
func (c *Client) Models(ctx context.Context, server string) (*ModelList, error) {
	var out ModelList
	if err := c.query(ctx, "models", server, "/v1/models", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MaxModelLen returns the served model's context length (max_model_len of the first /v1/models entry). A Model
// Gateway (smg, sglang-router) lists its models without max_model_len and serves no /model_info or /server_info,
// so with a gateway the length comes from one of its workers, as the gateway lists them (GET /workers on smg,
// GET /list_workers on sglang-router 0.3).
//
// # Errors
//
// An *Error; ErrBadResponse when neither the target nor, behind a gateway, any of its workers reports a positive
// max_model_len.
func (c *Client) MaxModelLen(ctx context.Context, server string) (int, error) {
	m, err := c.Models(ctx, server)
	if err == nil && len(m.Data) > 0 && m.Data[0].MaxModelLen > 0 {
		return m.Data[0].MaxModelLen, nil
	}
	if c.gateway != nil && (server == "" || normalizeURL(server) == c.gateway.url) {
		ctx, cancel := c.adminContext(ctx)
		defer cancel()
		for _, u := range c.gatewayWorkers(ctx) {
			var wm ModelList
			if c.call(ctx, newWorker(u, 1), http.MethodGet, "/v1/models", nil, &wm) == nil && len(wm.Data) > 0 && wm.Data[0].MaxModelLen > 0 {
				return wm.Data[0].MaxModelLen, nil
			}
		}
	}
	if err != nil {
		return 0, err
	}
	return 0, &Error{Op: "models", Server: server, Err: &responseError{msg: "/v1/models lists no model with a max_model_len (nor do the workers a gateway lists)"}}
}

// gatewayWorkers lists the worker URLs the gateway routes to; nil when it lists none in a form known here.
func (c *Client) gatewayWorkers(ctx context.Context) []string {
	var smg struct {
		Workers []struct {
			URL string `json:"url"`
		} `json:"workers"`
	}
	if c.call(ctx, c.gateway, http.MethodGet, "/workers", nil, &smg) == nil && len(smg.Workers) > 0 {
		var out []string
		for _, w := range smg.Workers {
			if checkURL(w.URL) == nil {
				out = append(out, w.URL)
			}
		}
		return out
	}
	var old struct {
		URLs []string `json:"urls"`
	}
	if c.call(ctx, c.gateway, http.MethodGet, "/list_workers", nil, &old) == nil {
		var out []string
		for _, u := range old.URLs {
			if checkURL(u) == nil {
				out = append(out, u)
			}
		}
		return out
	}
	return nil
}

// AbortRequest aborts the /generate request with this rid (POST /abort_request). If a Generate with that
// rid (its GenerateRequest.RID) is in flight from this Client, the abort goes to the worker serving it,
// under the rid of its current attempt (SGLang acts only on the exact rid in flight), and no further
// retries start; otherwise it goes to every worker. SGLang answers 200 even when the rid is unknown. The
// aborted Generate returns an error matching ErrAborted.
//
// # Errors
//
// ErrNotSupported with only a gateway (it has no /abort_request).
func (c *Client) AbortRequest(ctx context.Context, rid string) error {
	if rid == "" {
		return &Error{Op: "abort_request", Err: errors.New("sglang: empty rid (use AbortAll to abort everything)")}
	}
	server, wireRID := "", rid
	if v, ok := c.inflight.Load(rid); ok {
		p := v.(*pending)
		p.mu.Lock()
		p.aborted = true // stops further retries
		if p.w != nil && p.w != c.gateway {
			server = p.w.url
		}
		if p.rid != "" {
			wireRID = p.rid // SGLang only acts on the exact rid in flight
		}
		p.mu.Unlock()
	}
	body := map[string]any{"rid": wireRID, "abort_all": false}
	return c.fanOut(ctx, "abort_request", server, true, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodPost, "/abort_request", body, nil)
	})
}

// AbortAll aborts every request on the server ("" = every worker) with {"abort_all": true}.
func (c *Client) AbortAll(ctx context.Context, server string) error {
	body := map[string]any{"rid": "", "abort_all": true}
	return c.fanOut(ctx, "abort_request", server, true, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodPost, "/abort_request", body, nil)
	})
}

// PauseGeneration pauses generation (POST /pause_generation) with mode PauseAbort, PauseRetract or
// PauseInPlace ("" = SGLang's default, abort). While paused, new /generate calls block on the server.
func (c *Client) PauseGeneration(ctx context.Context, server, mode string) error {
	switch mode {
	case "", PauseAbort, PauseRetract, PauseInPlace:
	default:
		return &Error{Op: "pause_generation", Server: server, Err: fmt.Errorf("sglang: unknown pause mode %q (want %q, %q or %q)", mode, PauseAbort, PauseRetract, PauseInPlace)}
	}
	body := map[string]any{}
	if mode != "" {
		body["mode"] = mode
	}
	return c.fanOut(ctx, "pause_generation", server, true, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodPost, "/pause_generation", body, nil)
	})
}

// ContinueGeneration resumes generation (POST /continue_generation).
func (c *Client) ContinueGeneration(ctx context.Context, server string) error {
	return c.fanOut(ctx, "continue_generation", server, true, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodPost, "/continue_generation", map[string]any{}, nil)
	})
}

// FlushCache flushes the radix cache (POST /flush_cache). SGLang refuses with HTTP 400 while requests
// are running or waiting. "" flushes every worker, or the gateway (which fans out) without workers.
func (c *Client) FlushCache(ctx context.Context, server string) error {
	return c.fanOut(ctx, "flush_cache", server, false, func(ctx context.Context, w *worker) error {
		return c.call(ctx, w, http.MethodPost, "/flush_cache", nil, nil)
	})
}

// UpdateWeightsFromDisk loads new weights (POST /update_weights_from_disk) and returns each worker's
// answer by URL. Pause generation first (or set AbortAllRequests) as SGLang requires.
//
// # Errors
//
// Joined *Errors for the workers that failed; an answer with success=false (SGLang sends it with HTTP
// 400) is an *HTTPError carrying the message.
func (c *Client) UpdateWeightsFromDisk(ctx context.Context, server string, req *UpdateWeightsFromDiskRequest) (map[string]UpdateWeightsResponse, error) {
	if req == nil || req.ModelPath == "" {
		return nil, &Error{Op: "update_weights_from_disk", Server: server, Err: errors.New("sglang: model_path is required")}
	}
	var mu sync.Mutex
	out := make(map[string]UpdateWeightsResponse)
	err := c.fanOut(ctx, "update_weights_from_disk", server, true, func(ctx context.Context, w *worker) error {
		var r UpdateWeightsResponse
		if err := c.call(ctx, w, http.MethodPost, "/update_weights_from_disk", req, &r); err != nil {
			return err
		}
		mu.Lock()
		out[w.url] = r
		mu.Unlock()
		if !r.Success {
			return &HTTPError{Server: w.url, StatusCode: http.StatusOK, Message: "success=false: " + r.Message}
		}
		return nil
	})
	return out, err
}

// targets resolves the server argument. workersOnly calls are not served by the gateway.
func (c *Client) targets(server string, workersOnly bool) ([]*worker, error) {
	if server == "" {
		if len(c.workers) > 0 {
			return c.workers, nil
		}
		if workersOnly {
			return nil, ErrNotSupported
		}
		return []*worker{c.gateway}, nil
	}
	n := normalizeURL(server)
	for _, w := range c.workers {
		if w.url == n {
			return []*worker{w}, nil
		}
	}
	if c.gateway != nil && c.gateway.url == n {
		if workersOnly {
			return nil, ErrNotSupported
		}
		return []*worker{c.gateway}, nil
	}
	return nil, fmt.Errorf("%w %q (configured: %v)", ErrUnknownServer, server, c.allURLs())
}

func (c *Client) allURLs() []string {
	var out []string
	if c.gateway != nil {
		out = append(out, c.gateway.url)
	}
	return append(out, c.Workers()...)
}

// fanOut runs f on each target concurrently and joins the failures as *Errors.
func (c *Client) fanOut(ctx context.Context, op, server string, workersOnly bool, f func(context.Context, *worker) error) error {
	if c.closed.Load() {
		return &Error{Op: op, Server: server, Err: ErrClosed}
	}
	ws, err := c.targets(server, workersOnly)
	if err != nil {
		return &Error{Op: op, Server: server, Err: err}
	}
	ctx, cancel := c.adminContext(ctx)
	defer cancel()
	errs := make([]error, len(ws))
	if len(ws) == 1 {
		errs[0] = f(ctx, ws[0])
	} else {
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Go(func() { errs[i] = f(ctx, w) })
		}
		wg.Wait()
	}
	for i, e := range errs {
		if e != nil {
			errs[i] = &Error{Op: op, Server: ws[i].url, Attempts: 1, Err: e}
		}
	}
	return errors.Join(errs...)
}

// query runs a GET on the first target that answers.
func (c *Client) query(ctx context.Context, op, server, path string, out any) error {
	if c.closed.Load() {
		return &Error{Op: op, Server: server, Err: ErrClosed}
	}
	var ws []*worker
	if server == "" {
		if c.gateway != nil {
			ws = append(ws, c.gateway)
		}
		ws = append(ws, c.workers...)
	} else {
		var err error
		if ws, err = c.targets(server, false); err != nil {
			return &Error{Op: op, Server: server, Err: err}
		}
	}
	ctx, cancel := c.adminContext(ctx)
	defer cancel()
	var last error
	for _, w := range ws {
		err := c.call(ctx, w, http.MethodGet, path, nil, out)
		if err == nil {
			return nil
		}
		last = &Error{Op: op, Server: w.url, Attempts: 1, Err: err}
		if ctx.Err() != nil {
			break
		}
	}
	return last
}

func (c *Client) adminContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok && c.cfg.AdminTimeout > 0 {
		return context.WithTimeout(ctx, c.cfg.AdminTimeout)
	}
	return ctx, func() {}
}

// call makes one request: in is JSON-encoded when non-nil; a 2xx body is decoded into out when non-nil.
func (c *Client) call(ctx context.Context, w *worker, method, path string, in, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var body *bytes.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("sglang: encode %s body: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	var hreq *http.Request
	var err error
	if body != nil {
		hreq, err = http.NewRequestWithContext(ctx, method, w.url+path, body)
	} else {
		hreq, err = http.NewRequestWithContext(ctx, method, w.url+path, nil)
	}
	if err != nil {
		return err
	}
	if in != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	buf := getBuf()
	defer putBuf(buf)
	status, _, err := c.do(ctx, ctx, hreq, buf)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return newHTTPError(w.url, "", status, buf.Bytes())
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return &responseError{msg: fmt.Sprintf("%s: undecodable body (%d bytes)", path, buf.Len()), err: err}
		}
	}
	return nil
}
