package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the emulator: an http.Handler serving SGLang's native endpoints. It is safe for concurrent use.
// Serve it with Run, or mount it anywhere (httptest.NewServer(srv)); Close aborts what is in flight and waits
// for the handlers.
type Server struct {
	cfg   Config
	tok   Tokenizer
	opts  options
	log   *slog.Logger
	mux   *http.ServeMux
	cache *radixCache
	kv    *kvPool // nil without Config.KVTokens
	tc    *tokCache
	start time.Time
	sem   chan struct{}

	queued atomic.Int64

	mu            sync.Mutex
	jobs          map[string][]*job
	paused        chan struct{} // non-nil while paused; closed by /continue_generation
	weightVersion string
	versions      []versionChange // weight version history, for requests that decode across an update
	closed        bool
	closeCh       chan struct{} // closed when the server starts shutting down
	draining      bool          // SIGTERM: /health and /ready answer 503, requests still run (SGLang's gracefully_exit)
	drained       chan struct{} // closed when draining and no generation is left
	inflight      sync.WaitGroup
	handlers      int

	faultMu  sync.Mutex
	faultRng *rand.Rand

	logMu sync.Mutex
	seq   uint64
}

// New validates cfg and returns a Server that uses tok to encode replies and decode prompts.
//
// # Errors
//
// An invalid Config (see Config.Validate), a nil tokenizer, or the scripted policy without WithScript.
func New(cfg Config, tok Tokenizer, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, errors.New("emulator: nil tokenizer")
	}
	o := options{logger: slog.New(slog.DiscardHandler), now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if cfg.Policy == PolicyScripted && o.script == nil {
		return nil, errors.New("emulator: policy \"scripted\" needs a script (WithScript, or --script FILE)")
	}
	if cfg.Faults.StallFor == 0 {
		cfg.Faults.StallFor = 30 * time.Second
	}
	s := &Server{
		cfg:           cfg,
		tok:           tok,
		opts:          o,
		log:           o.logger,
		cache:         newRadixCache(cfg.CacheTokens),
		tc:            newTokCache(tok),
		start:         time.Now(),
		jobs:          map[string][]*job{},
		closeCh:       make(chan struct{}),
		weightVersion: cfg.WeightVersion,
		faultRng:      rand.New(rand.NewPCG(cfg.Seed, 0xfa17)),
	}
	if cfg.MaxRunningRequests > 0 {
		s.sem = make(chan struct{}, cfg.MaxRunningRequests)
	}
	if cfg.KVTokens > 0 {
		s.kv = newKVPool(cfg.KVTokens)
	}
	m := http.NewServeMux()
	m.HandleFunc("POST /generate", s.handleGenerate)
	m.HandleFunc("PUT /generate", s.handleGenerate)
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /health_generate", s.handleHealth)
	m.HandleFunc("GET /ready", s.handleReady)
	m.HandleFunc("GET /v1/loads", s.handleLoads)
	m.HandleFunc("GET /model_info", s.handleModelInfo)
	m.HandleFunc("GET /get_model_info", s.handleModelInfo)
	m.HandleFunc("GET /server_info", s.handleServerInfo)
	m.HandleFunc("GET /get_server_info", s.handleServerInfo)
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("POST /abort_request", s.handleAbort)
	m.HandleFunc("POST /pause_generation", s.handlePause)
	m.HandleFunc("POST /continue_generation", s.handleContinue)
	m.HandleFunc("GET /flush_cache", s.handleFlush)
	m.HandleFunc("POST /flush_cache", s.handleFlush)
	m.HandleFunc("POST /update_weights_from_disk", s.handleUpdateWeights)
	m.HandleFunc("POST /update_weight_version", s.handleUpdateWeightVersion)
	m.HandleFunc("POST /update_weights_from_tensor", s.handleUpdateWeightsOther)
	m.HandleFunc("POST /update_weights_from_distributed", s.handleUpdateWeightsOther)
	m.HandleFunc("POST /init_weights_update_group", s.handleUpdateWeightsOther)
	m.HandleFunc("POST /destroy_weights_update_group", s.handleUpdateWeightsOther)
	m.HandleFunc("/get_weight_version", s.handleDeprecatedWeightVersion)
	m.HandleFunc("/weight_version", s.handleDeprecatedWeightVersion)
	m.HandleFunc("POST /tokenize", s.handleTokenize)
	m.HandleFunc("POST /v1/tokenize", s.handleTokenize)
	m.HandleFunc("POST /detokenize", s.handleDetokenize)
	m.HandleFunc("POST /v1/detokenize", s.handleDetokenize)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	s.mux = m
	return s, nil
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/health") {
			w.WriteHeader(http.StatusServiceUnavailable) // SGLang: 503, empty body, while shutting down
			return
		}
		writeHTTPException(w, http.StatusServiceUnavailable, "The server is shutting down.")
		return
	}
	s.inflight.Add(1)
	s.handlers++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.handlers--
		s.mu.Unlock()
		s.inflight.Done()
	}()
	if s.cfg.APIKey != "" && !strings.HasPrefix(r.URL.Path, "/health") && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	if s.opts.log == nil {
		s.mux.ServeHTTP(w, r)
		return
	}
	rec := &logRecord{Method: r.Method, Path: r.URL.Path, RecvNS: int64(time.Since(s.start)), RecvTime: time.Now().UTC().Format(time.RFC3339Nano)}
	lw := &logWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		rec.Status = lw.status
		if rec.Fault == "reset" {
			rec.Status = 0 // nothing was sent: the connection was reset
		}
		if rec.Response == nil && len(lw.body) > 0 && json.Valid(lw.body) {
			rec.Response = json.RawMessage(lw.body)
		} else if rec.Response == nil && len(lw.body) > 0 {
			rec.Response, _ = json.Marshal(string(lw.body))
		}
		rec.SentNS = int64(time.Since(s.start))
		s.writeLog(rec)
	}()
	s.mux.ServeHTTP(lw, r.WithContext(context.WithValue(r.Context(), logKey{}, rec)))
}

// Run serves on ln until ctx is done, then shuts down as SGLang does on SIGTERM: it drains (/health and /ready
// answer 503 so that gateways route elsewhere, while the requests in flight, and any that still arrive, run to
// their end; Config.DrainTimeout bounds it), then aborts what is left, stops accepting, and returns after the
// handlers have returned.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("emulator: serve: %w", err)
	case <-ctx.Done():
	}
	dctx := context.Background()
	if s.cfg.DrainTimeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(dctx, s.cfg.DrainTimeout)
		defer cancel()
	}
	if err := s.Drain(dctx); err != nil {
		s.log.Warn("emulator: drain cut short; aborting what is left", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.beginClose()
	err := hs.Shutdown(sctx)
	<-errc
	cerr := s.Close(sctx)
	if err != nil {
		return fmt.Errorf("emulator: shutdown: %w", err)
	}
	return cerr
}

// Close stops accepting requests (new ones get 503), aborts generations in flight (they finish with
// finish_reason abort) and waits for the handlers, or for ctx.
func (s *Server) Close(ctx context.Context) error {
	s.beginClose()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("emulator: close: %w", context.Cause(ctx))
	}
}

// Drain marks the server as shutting down the way SGLang's SIGTERM handler does (/health, /health_generate and
// /ready answer 503; generation requests are still served) and waits until no generation is in flight, or ctx.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		s.drained = make(chan struct{})
		if len(s.jobs) == 0 {
			close(s.drained)
		}
	}
	ch := s.drained
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("emulator: drain: %d generations still running: %w", s.busy(), context.Cause(ctx))
	}
}

// beginClose refuses new requests, ends stalls and pauses, and aborts generations in flight.
func (s *Server) beginClose() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closeCh)
	}
	s.mu.Unlock()
	s.abortAll()
}

// WeightVersion returns the current weight_version.
func (s *Server) WeightVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.weightVersion
}

// CachedTokens returns how many tokens the prefix-cache model holds.
func (s *Server) CachedTokens() int { return s.cache.tokens() }

// Jobs: requests in flight, by rid.

type job struct {
	rid     string
	abortCh chan struct{}
	once    sync.Once
	running atomic.Bool
}

func (j *job) abort() { j.once.Do(func() { close(j.abortCh) }) }

// aborted reports whether abort was called (without blocking).
func (j *job) aborted() bool {
	select {
	case <-j.abortCh:
		return true
	default:
		return false
	}
}

func (s *Server) register(rid string) *job {
	j := &job{rid: rid, abortCh: make(chan struct{})}
	s.mu.Lock()
	s.jobs[rid] = append(s.jobs[rid], j)
	s.mu.Unlock()
	return j
}

func (s *Server) unregister(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[j.rid]
	for i, x := range js {
		if x == j {
			js = append(js[:i], js[i+1:]...)
			break
		}
	}
	if len(js) == 0 {
		delete(s.jobs, j.rid)
	} else {
		s.jobs[j.rid] = js
	}
	if s.draining && len(s.jobs) == 0 {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

func (s *Server) abortAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abortLocked(func(string) bool { return true })
}

// abortLocked aborts every job whose rid matches (s.mu held), the waiting ones first, as SGLang's scheduler
// does: a running job that stops frees its slot, and a waiting one aborted after that could take the slot
// and finish as a running abort instead of "Abort in waiting queue".
func (s *Server) abortLocked(match func(rid string) bool) {
	for _, running := range []bool{false, true} {
		for rid, js := range s.jobs {
			if !match(rid) {
				continue
			}
			for _, j := range js {
				if j.running.Load() == running {
					j.abort()
				}
			}
		}
	}
}

// inflightCount counts HTTP requests being served (s.mu held).
func (s *Server) inflightCount() int { return s.handlers }

func (s *Server) busy() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, js := range s.jobs {
		n += len(js)
	}
	return n
}

// waitUnpaused blocks while generation is paused; false if the job was aborted or the client went away.
func (s *Server) waitUnpaused(ctx context.Context, j *job) bool {
	for {
		s.mu.Lock()
		ch := s.paused
		s.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-j.abortCh:
			return false
		case <-ctx.Done():
			return false
		case <-s.closeCh:
			return false
		}
	}
}

// Simple endpoints.

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		w.WriteHeader(http.StatusServiceUnavailable) // SGLang: 503, empty body, during a graceful exit
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleReady is SGLang's /ready: 200 when the server should get new requests, 503 (empty body) while paused or
// shutting down.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ready := !s.draining && s.paused == nil
	s.mu.Unlock()
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleModelInfo(w http.ResponseWriter, r *http.Request) {
	// SGLang's shape, not sglang.ModelInfo: the emulator does not share the client's wire types (see wire.go).
	writeJSON(w, http.StatusOK, struct {
		ModelPath               string   `json:"model_path"`
		ServedModelName         string   `json:"served_model_name"`
		TokenizerPath           string   `json:"tokenizer_path"`
		IsGeneration            bool     `json:"is_generation"`
		PreferredSamplingParams any      `json:"preferred_sampling_params"`
		WeightVersion           string   `json:"weight_version"`
		LoadFormat              string   `json:"load_format"`
		ReasoningParser         *string  `json:"reasoning_parser"`
		ToolCallParser          *string  `json:"tool_call_parser"`
		DisaggregationMode      string   `json:"disaggregation_mode"`
		HasImageUnderstanding   bool     `json:"has_image_understanding"`
		HasAudioUnderstanding   bool     `json:"has_audio_understanding"`
		ModelType               string   `json:"model_type"`
		Architectures           []string `json:"architectures"`
	}{s.cfg.ModelPath, s.cfg.ModelPath, s.cfg.ModelPath, true, nil, s.WeightVersion(), "auto", nil, nil, "null", false, false,
		s.cfg.ModelType, s.cfg.Architectures})
}

func (s *Server) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	maxRunning := s.cfg.MaxRunningRequests
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path":           s.cfg.ModelPath,
		"tokenizer_path":       s.cfg.ModelPath,
		"served_model_name":    s.cfg.ModelPath,
		"context_length":       s.cfg.ContextLength,
		"page_size":            1,
		"tp_size":              1,
		"dp_size":              1,
		"random_seed":          s.cfg.Seed,
		"max_running_requests": maxRunning,
		"max_queued_requests":  s.cfg.MaxQueuedRequests,
		"max_total_num_tokens": s.cfg.CacheTokens,
		"max_req_input_len":    s.cfg.ContextLength - 1,
		"weight_version":       s.WeightVersion(),
		"version":              "emulator",
		"internal_states":      []any{map[string]any{"cached_tokens": s.cache.tokens(), "running_requests": s.busy()}},
		"kv_events":            nil,
		"emulator": map[string]any{
			"policy": s.cfg.Policy, "tool_format": s.cfg.ToolFormat, "stop_ids": s.cfg.StopIDs,
			"non_canonical_rate": s.cfg.NonCanonicalRate, "malformed_rate": s.cfg.MalformedRate,
			"wrong_answer_rate": s.cfg.WrongAnswerRate,
		},
	})
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []any  `json:"data"`
	}{
		Object: "list",
		Data: []any{struct {
			ID          string  `json:"id"`
			Object      string  `json:"object"`
			Created     int64   `json:"created"`
			OwnedBy     string  `json:"owned_by"`
			Root        string  `json:"root"`
			Parent      *string `json:"parent"`
			MaxModelLen int     `json:"max_model_len"`
		}{s.cfg.ModelPath, "model", s.start.Unix(), "sglang", s.cfg.ModelPath, nil, s.cfg.ContextLength}},
	})
}

// decodeBody decodes an optional JSON body (empty is {}); false after writing a validation error.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, false
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return b, true
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeValidationError(w, "1 validation error:\n  "+err.Error())
		return b, false
	}
	return b, true
}

func (s *Server) handleAbort(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RID      string `json:"rid"`
		AbortAll bool   `json:"abort_all"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	s.mu.Lock()
	switch {
	case req.AbortAll:
		s.abortLocked(func(string) bool { return true })
	case req.RID != "" && len(s.jobs[req.RID]) > 0:
		// the tokenizer forwards only an exact in-flight rid; the scheduler then aborts every rid with that prefix
		s.abortLocked(func(rid string) bool { return strings.HasPrefix(rid, req.RID) })
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Mode string `json:"mode"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	switch req.Mode {
	case "":
		req.Mode = "abort"
	case "abort", "retract", "in_place":
	default:
		writeValidationError(w, fmt.Sprintf("1 validation error:\n  mode: Input should be 'abort', 'retract' or 'in_place' [input_value=%q]", req.Mode))
		return
	}
	s.mu.Lock()
	if s.paused == nil {
		s.paused = make(chan struct{})
	}
	s.mu.Unlock()
	if req.Mode == "abort" {
		s.abortAll()
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Generation paused successfully.", "status": "ok"})
}

func (s *Server) handleContinue(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	s.mu.Lock()
	if s.paused != nil {
		close(s.paused)
		s.paused = nil
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"message": "Generation continued successfully.", "status": "ok"})
}

func (s *Server) handleFlush(w http.ResponseWriter, r *http.Request) {
	timeout := 0.0
	if t := r.URL.Query().Get("timeout"); t != "" {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			writeValidationError(w, fmt.Sprintf("1 validation error:\n  timeout: Input should be a valid number [input_value=%q]", t))
			return
		}
		timeout = f
	}
	deadline := time.Now().Add(time.Duration(timeout * float64(time.Second)))
	for s.busy() > 0 {
		if time.Now().After(deadline) {
			writeText(w, http.StatusBadRequest, "Flush cache failed.\n")
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.cache.flush()
	writeText(w, http.StatusOK, "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n")
}

func (s *Server) handleUpdateWeights(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ModelPath        *string `json:"model_path"`
		WeightVersion    *string `json:"weight_version"`
		AbortAllRequests bool    `json:"abort_all_requests"`
		FlushCache       *bool   `json:"flush_cache"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	if req.ModelPath == nil {
		writeValidationError(w, "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'model_path'), 'msg': 'Field required', 'input': {}}")
		return
	}
	if *req.ModelPath == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "message": "Failed to update weights: model_path is empty.", "num_paused_requests": 0})
		return
	}
	s.updateWeights(req.WeightVersion, req.AbortAllRequests, req.FlushCache == nil || *req.FlushCache)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Succeeded to update model weights.", "num_paused_requests": 0})
}

// updateWeights is what a weight update does here, where there are no weights: abort the requests in flight if
// asked, take the new weight version if one is given, flush the prefix cache if asked.
func (s *Server) updateWeights(version *string, abortAll, flush bool) {
	if abortAll {
		s.abortAll()
	}
	if version != nil {
		s.mu.Lock()
		s.setWeightVersionLocked(*version)
		s.mu.Unlock()
	}
	if flush {
		s.cache.flush()
	}
}

// handleUpdateWeightsOther accepts the tensor and distributed weight-update calls: there are no weights, so
// only weight_version, flush_cache and abort_all_requests act.
func (s *Server) handleUpdateWeightsOther(w http.ResponseWriter, r *http.Request) {
	var req struct {
		WeightVersion    *string `json:"weight_version"`
		AbortAllRequests bool    `json:"abort_all_requests"`
		FlushCache       *bool   `json:"flush_cache"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	s.updateWeights(req.WeightVersion, req.AbortAllRequests, strings.HasPrefix(r.URL.Path, "/update_weights") && (req.FlushCache == nil || *req.FlushCache))
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Succeeded (emulator: no weights to load)."})
}

func (s *Server) handleUpdateWeightVersion(w http.ResponseWriter, r *http.Request) {
	var req struct {
		NewVersion       *string `json:"new_version"`
		AbortAllRequests *bool   `json:"abort_all_requests"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	if req.NewVersion == nil {
		writeValidationError(w, "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'new_version'), 'msg': 'Field required', 'input': {}}")
		return
	}
	s.updateWeights(req.NewVersion, req.AbortAllRequests == nil || *req.AbortAllRequests, false)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Weight version updated to " + *req.NewVersion, "new_version": *req.NewVersion})
}

func (s *Server) handleDeprecatedWeightVersion(w http.ResponseWriter, r *http.Request) {
	writeHTTPException(w, http.StatusNotFound, "Endpoint '/get_weight_version' or '/weight_version' is deprecated. Please use '/model_info' instead.")
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt           json.RawMessage `json:"prompt"`
		AddSpecialTokens *bool           `json:"add_special_tokens"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	var one string
	var many []string
	switch {
	case json.Unmarshal(req.Prompt, &one) == nil:
		ids := s.tok.Encode(one, add)
		writeJSON(w, http.StatusOK, map[string]any{"tokens": nonNil(ids), "count": len(ids), "max_model_len": s.cfg.ContextLength})
	case json.Unmarshal(req.Prompt, &many) == nil:
		toks := make([][]int32, len(many))
		counts := make([]int, len(many))
		for i, p := range many {
			toks[i] = nonNil(s.tok.Encode(p, add))
			counts[i] = len(toks[i])
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": toks, "count": counts, "max_model_len": s.cfg.ContextLength})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"object": "error", "message": "the emulator's /tokenize takes \"prompt\" (a string or a list of strings)", "type": "BadRequestError", "param": nil, "code": 400})
	}
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens            json.RawMessage `json:"tokens"`
		SkipSpecialTokens *bool           `json:"skip_special_tokens"`
	}
	if _, ok := decodeBody(w, r, &req); !ok {
		return
	}
	skip := req.SkipSpecialTokens == nil || *req.SkipSpecialTokens
	single, batch, perr := parseIDs(req.Tokens)
	if perr != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"object": "error", "message": "tokens must be a list of ints or a list of lists of ints", "type": "BadRequestError", "param": nil, "code": 400})
		return
	}
	check := func(ids []int32) bool {
		for _, id := range ids {
			if id < 0 || int(id) >= s.cfg.VocabSize {
				return false
			}
		}
		return true
	}
	if batch != nil {
		texts := make([]string, len(batch))
		for i, b := range batch {
			if !check(b) {
				writeInternalError(w)
				return
			}
			texts[i] = s.tok.Decode(b, skip)
		}
		writeJSON(w, http.StatusOK, map[string]any{"text": texts})
		return
	}
	if !check(single) {
		writeInternalError(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": s.tok.Decode(single, skip)})
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
