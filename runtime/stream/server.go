package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Config configures a Server. Decode runtime.toml over DefaultConfig, then call Validate.
type Config struct {
	// SpoolDir holds the spool database (spool.db). Required.
	SpoolDir string `toml:"spool_dir"`
	// SpoolMaxRecords and SpoolMaxBytes bound the spool; when it is full, Emitter.Finish blocks.
	SpoolMaxRecords int   `toml:"spool_max_records"`
	SpoolMaxBytes   int64 `toml:"spool_max_bytes"`
	// SpoolCacheBytes bounds the memory that keeps recently spooled trajectories for sending without reading
	// them back from disk (0 disables it).
	SpoolCacheBytes int64 `toml:"spool_cache_bytes"`
	// Fsync makes every spool commit call fsync (group commit: one fsync per batch). Without it a spooled
	// trajectory survives a crash of the process (kill -9) but not of the machine.
	Fsync bool `toml:"fsync"`
	// Token, when set, is the bearer token every consumer must present (Authorization header or hello.token).
	Token string `toml:"token"`
	// MaxMessageBytes is the largest frame a consumer may send; larger ones get a message_too_large error frame.
	MaxMessageBytes int64 `toml:"max_message_bytes"`
	// MaxSamplesPerRequest bounds sum(items[].n) of one submit.
	MaxSamplesPerRequest int `toml:"max_samples_per_request"`
	// MaxActiveRequests bounds the running requests of one consumer.
	MaxActiveRequests int `toml:"max_active_requests"`
	// DefaultCredits is used when a hello asks for 0 credits; MaxCredits caps the credits a consumer holds.
	DefaultCredits int `toml:"default_credits"`
	MaxCredits     int `toml:"max_credits"`
	// SendQueue is the length of each connection's queue of control frames (answers, errors, events).
	SendQueue int `toml:"send_queue"`
	// PingInterval is how often the server pings; a consumer silent (no pong, no message) for 2 intervals plus
	// WriteTimeout is dropped.
	PingInterval time.Duration `toml:"ping_interval"`
	// WriteTimeout bounds every write to a consumer.
	WriteTimeout time.Duration `toml:"write_timeout"`
	// HelloTimeout bounds the wait for a connection's hello.
	HelloTimeout time.Duration `toml:"hello_timeout"`
}

// DefaultConfig returns the defaults; SpoolDir must still be set.
func DefaultConfig() Config {
	return Config{
		SpoolMaxRecords:      100_000,
		SpoolMaxBytes:        4 << 30,
		SpoolCacheBytes:      256 << 20,
		Fsync:                true,
		MaxMessageBytes:      16 << 20,
		MaxSamplesPerRequest: 100_000,
		MaxActiveRequests:    4096,
		DefaultCredits:       64,
		MaxCredits:           1 << 20,
		SendQueue:            1024,
		PingInterval:         20 * time.Second,
		WriteTimeout:         30 * time.Second,
		HelloTimeout:         10 * time.Second,
	}
}

// Validate reports the first invalid setting, naming its key.
func (c Config) Validate() error {
	switch {
	case c.SpoolDir == "":
		return errors.New("stream: spool_dir is required")
	case c.SpoolMaxRecords < 1:
		return fmt.Errorf("stream: spool_max_records must be >= 1, got %d", c.SpoolMaxRecords)
	case c.SpoolMaxBytes < 1<<20:
		return fmt.Errorf("stream: spool_max_bytes must be >= 1 MiB, got %d", c.SpoolMaxBytes)
	case c.SpoolCacheBytes < 0:
		return fmt.Errorf("stream: spool_cache_bytes must be >= 0, got %d", c.SpoolCacheBytes)
	case c.MaxMessageBytes < 1<<10:
		return fmt.Errorf("stream: max_message_bytes must be >= 1 KiB, got %d", c.MaxMessageBytes)
	case c.MaxSamplesPerRequest < 1:
		return fmt.Errorf("stream: max_samples_per_request must be >= 1, got %d", c.MaxSamplesPerRequest)
	case c.MaxActiveRequests < 1:
		return fmt.Errorf("stream: max_active_requests must be >= 1, got %d", c.MaxActiveRequests)
	case c.DefaultCredits < 1 || c.MaxCredits < c.DefaultCredits:
		return fmt.Errorf("stream: need 1 <= default_credits (%d) <= max_credits (%d)", c.DefaultCredits, c.MaxCredits)
	case c.SendQueue < 1:
		return fmt.Errorf("stream: send_queue must be >= 1, got %d", c.SendQueue)
	case c.PingInterval < 10*time.Millisecond:
		return fmt.Errorf("stream: ping_interval must be >= 10ms, got %s", c.PingInterval)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("stream: write_timeout must be > 0, got %s", c.WriteTimeout)
	case c.HelloTimeout <= 0:
		return fmt.Errorf("stream: hello_timeout must be > 0, got %s", c.HelloTimeout)
	}
	return nil
}

// Option configures what Config cannot carry.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Stats is a snapshot of the server's counters, for metrics.
type Stats struct {
	Connections    int    // open consumer connections
	ActiveRequests int    // requests whose Run has not returned
	SpoolRecords   int    // messages in the spool (the backlog: spooled, not yet acked)
	SpoolBytes     int64  // bytes they take
	SpoolCommits   uint64 // spool write transactions (each one fsync when Fsync is set)
	Spooled        uint64 // trajectories written to the spool
	Duplicates     uint64 // trajectories not spooled because their id was already spooled and unacked
	Sent           uint64 // spooled messages sent (a redelivery counts again)
	Acked          uint64 // spooled messages acked (and deleted)
	Accepted       uint64 // submits accepted
	Rejected       uint64 // submits rejected
	ErrorFrames    uint64 // error frames sent
	EventsSent     uint64 // per-turn events sent
	EventsDropped  uint64 // per-turn events dropped (consumer not connected or its queue full)
}

// Server is the WebSocket endpoint of the trajectory stream: an http.Handler. It is safe for concurrent use.
type Server struct {
	cfg      Config
	runner   Runner
	log      *slog.Logger
	spool    *spool // nil on a Store
	store    Store  // nil with a spool
	upgrader websocket.Upgrader

	mu        sync.Mutex
	closing   bool
	conns     map[*conn]struct{}
	consumers map[string]*conn
	requests  map[string]*request // key: consumer + "\x00" + request id
	cancels   map[*context.CancelFunc]struct{}
	runs      sync.WaitGroup
	handlers  sync.WaitGroup
	hardStop  context.CancelFunc
	hardDone  chan struct{}

	spooled, duplicates, sent, acked, accepted, rejected atomic.Uint64
	errorFrames, eventsSent, eventsDropped               atomic.Uint64
}

type request struct {
	RolloutRequest
	cancel    context.CancelFunc
	cancelled atomic.Bool // by its consumer (cancel, or a hello with resume false)
	// interrupted is set when Shutdown gives up waiting: the request stays journaled and runs again (its
	// unfinished samples) after a restart; nothing more of it is spooled by this process.
	interrupted atomic.Bool
	done        chan struct{}
	emitted     atomic.Int64
}

// New opens (or creates) the spool in cfg.SpoolDir and returns a server that runs requests with runner.
// Unacked messages already in the spool are delivered when their consumers connect, and every journaled request
// that had not ended when the last process stopped (crash, kill -9, shutdown past its grace) starts again at
// once: its samples that are not spooled yet run, and its request_done follows as usual.
//
// # Errors
//
// Config.Validate's errors; the spool cannot be opened (another process holds it, or it is corrupt).
func New(cfg Config, runner Runner, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if runner == nil {
		return nil, errors.New("stream: runner is nil")
	}
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	sp, err := openSpool(spoolConfig{dir: cfg.SpoolDir, maxRecords: cfg.SpoolMaxRecords, maxBytes: cfg.SpoolMaxBytes,
		noSync: !cfg.Fsync, cacheBytes: cfg.SpoolCacheBytes})
	if err != nil {
		return nil, err
	}
	s := newServer(cfg, runner, o)
	s.spool = sp
	if n, b, _ := sp.stats(); n > 0 {
		s.log.Info("stream: spool replay pending", "records", n, "bytes", b, "dir", cfg.SpoolDir)
	}
	if err := s.resumeJournaled(); err != nil {
		sp.close()
		return nil, err
	}
	return s, nil
}

// NewOnStore returns a server whose accepted requests and finished trajectories live in st (cfg.SpoolDir and
// the spool_* settings are not used): submits are stored, cancels go to the store, and each consumer's messages
// come from its Outbox. runner validates submits and takes the pause, resume and update_weights calls; its Run
// is never called (the store's workers run the samples). What Config.Validate refuses is refused here too,
// spool_dir apart.
func NewOnStore(cfg Config, st Store, runner Runner, opts ...Option) (*Server, error) {
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = "-"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil || runner == nil {
		return nil, errors.New("stream: store or runner is nil")
	}
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s := newServer(cfg, runner, o)
	s.store = st
	return s, nil
}

func newServer(cfg Config, runner Runner, o options) *Server {
	s := &Server{
		cfg:    cfg,
		runner: runner,
		log:    o.logger,
		upgrader: websocket.Upgrader{
			ReadBufferSize: 64 << 10,
			// Large enough that a 4k-token trajectory (~120 KB of JSON) goes out in one frame and one write.
			WriteBufferSize: 256 << 10,
		},
		conns:     map[*conn]struct{}{},
		consumers: map[string]*conn{},
		requests:  map[string]*request{},
		cancels:   map[*context.CancelFunc]struct{}{},
		hardDone:  make(chan struct{}),
	}
	var once sync.Once
	s.hardStop = func() { once.Do(func() { close(s.hardDone) }) }
	return s
}

// resumeJournaled registers and starts every request left in the journal.
func (s *Server) resumeJournaled() error {
	js, err := s.spool.journaled()
	if err != nil {
		return err
	}
	for _, j := range js {
		req := RolloutRequest{ID: j.id, Consumer: j.consumer, Agent: j.entry.Agent, Items: j.entry.Items,
			Sampling: j.entry.Sampling, Events: j.entry.Events, Finished: j.finished}
		ctx, cancel := context.WithCancel(context.Background())
		r := &request{RolloutRequest: req, cancel: cancel, done: make(chan struct{})}
		r.cancelled.Store(j.cancelled)
		r.emitted.Store(int64(len(j.finished)))
		s.mu.Lock()
		s.requests[reqKey(j.consumer, j.id)] = r
		s.runs.Add(1)
		s.mu.Unlock()
		s.log.Info("stream: resuming journaled request", "consumer", j.consumer, "request_id", j.id,
			"samples", req.Samples(), "finished", len(j.finished), "cancelled", j.cancelled)
		go s.run(ctx, reqKey(j.consumer, j.id), r)
	}
	return nil
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	var n int
	var b int64
	var commits uint64
	if s.spool != nil {
		n, b, commits = s.spool.stats()
	}
	s.mu.Lock()
	st := Stats{Connections: len(s.conns), ActiveRequests: len(s.requests)}
	s.mu.Unlock()
	st.SpoolRecords, st.SpoolBytes, st.SpoolCommits = n, b, commits
	st.Spooled, st.Duplicates = s.spooled.Load(), s.duplicates.Load()
	st.Sent, st.Acked = s.sent.Load(), s.acked.Load()
	st.Accepted, st.Rejected = s.accepted.Load(), s.rejected.Load()
	st.ErrorFrames, st.EventsSent, st.EventsDropped = s.errorFrames.Load(), s.eventsSent.Load(), s.eventsDropped.Load()
	return st
}

// Shutdown stops accepting connections and requests, waits for running requests until ctx ends, then interrupts
// the rest and waits for their Run to return, sends every connection a going-away close frame, and closes the
// spool. Everything finished is in the spool; nothing unacked is lost. An interrupted request spools nothing
// more and no request_done: it stays journaled, and its unfinished samples run when a server starts again on
// the same spool.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closing = true
	s.mu.Unlock()

	runsDone := make(chan struct{})
	go func() { s.runs.Wait(); close(runsDone) }()
	select {
	case <-runsDone:
	case <-ctx.Done():
		s.mu.Lock()
		for _, r := range s.requests {
			r.interrupted.Store(true)
			r.cancel()
		}
		s.mu.Unlock()
		// Runs still blocked on a full spool give up now.
		s.hardStop()
		<-runsDone
	}
	s.hardStop()

	s.mu.Lock()
	for c := range s.cancels {
		(*c)()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.kick(websocket.CloseGoingAway, "server shutting down")
	}
	handlersDone := make(chan struct{})
	go func() { s.handlers.Wait(); close(handlersDone) }()
	t := time.NewTimer(s.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case <-handlersDone:
	case <-t.C:
		for _, c := range conns {
			c.ws.NetConn().Close()
		}
		<-handlersDone
	}
	var err error
	if s.spool != nil {
		err = s.spool.close()
	}
	if cause := context.Cause(ctx); cause != nil && err == nil {
		s.log.Info("stream: shutdown grace period ended; running requests were cancelled", "cause", cause)
	}
	return err
}

// Close shuts down at once: running requests are cancelled (Shutdown with an expired context).
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.Shutdown(ctx)
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// ServeHTTP upgrades the request to a WebSocket and serves one consumer connection until it closes.
// A wrong bearer token in the Authorization header is refused with 401 before the upgrade.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		http.Error(w, "agentrt: shutting down", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()

	headerAuth := false
	if h := r.Header.Get("Authorization"); h != "" && s.cfg.Token != "" {
		tok, ok := bytes.CutPrefix([]byte(h), []byte("Bearer "))
		if !ok || !tokenEqual(string(tok), s.cfg.Token) {
			s.log.Warn("stream: refused connection: bad bearer token", "remote", r.RemoteAddr)
			http.Error(w, "agentrt: bad bearer token", http.StatusUnauthorized)
			return
		}
		headerAuth = true
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// The upgrader has already answered with an HTTP error.
		s.log.Debug("stream: upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(4 * s.cfg.MaxMessageBytes)
	c := newConn(s, ws, r.RemoteAddr)
	c.serve(headerAuth)
}

func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withHardStop returns a context that ends with parent or when Shutdown gives up waiting.
func (s *Server) withHardStop(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.hardDone:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func tokenEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func reqKey(consumer, id string) string { return consumer + "\x00" + id }

// attach registers c as the connection of its consumer, kicking a previous one, and applies resume false.
func (s *Server) attach(c *conn, resume bool) (active []string, dropped int, err error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, 0, ErrClosed
	}
	old := s.consumers[c.consumer]
	s.consumers[c.consumer] = c
	s.conns[c] = struct{}{}
	if s.store != nil {
		s.mu.Unlock()
		s.supersede(old)
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		defer cancel()
		if cl, ok := s.store.(ConsumerClaimer); ok {
			// Claimed before the drop and the active list, so that a hello on another node after this one
			// supersedes this connection rather than racing it.
			if c.release, err = cl.ClaimConsumer(ctx, c.consumer, c.session, func() { s.supersede(c) }); err != nil {
				return nil, 0, err
			}
		}
		if !resume {
			if dropped, err = s.store.Drop(ctx, c.consumer); err != nil {
				return nil, 0, err
			}
			if dropped > 0 {
				s.log.Warn("stream: consumer started a fresh session; its unacked messages were deleted",
					"consumer", c.consumer, "dropped", dropped)
			}
		}
		if active, _, err = s.store.Requests(ctx, c.consumer); err != nil {
			return nil, 0, err
		}
		if active == nil {
			active = []string{}
		}
		return active, dropped, nil
	}
	var cancel []*request
	for _, r := range s.requests {
		if r.Consumer == c.consumer {
			if resume {
				active = append(active, r.ID)
			} else {
				cancel = append(cancel, r)
			}
		}
	}
	s.mu.Unlock()
	s.supersede(old)
	for _, r := range cancel {
		r.cancelled.Store(true)
		r.cancel()
	}
	if !resume {
		dropped, err = s.spool.drop(c.consumer)
		if err != nil {
			return nil, 0, err
		}
		if dropped > 0 {
			s.log.Warn("stream: consumer started a fresh session; its unacked messages were deleted",
				"consumer", c.consumer, "dropped", dropped)
		}
	}
	if active == nil {
		active = []string{}
	}
	return active, dropped, nil
}

// supersede tells old, the previous connection of a consumer, that another one took its place, and closes it.
// Once per connection: a hello on this process and the same hello seen store-wide (ConsumerClaimer) both
// supersede it.
func (s *Server) supersede(old *conn) {
	if old == nil {
		return
	}
	old.supersedeOnce.Do(func() {
		b, _ := json.Marshal(ErrorFrame{Type: TypeError, Code: CodeSuperseded,
			Message: "another connection said hello with this consumer_id; it receives this consumer's trajectories now"})
		old.tryQueue(b)
		old.kick(websocket.ClosePolicyViolation, CodeSuperseded)
	})
}

func (s *Server) detach(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.consumers[c.consumer] == c {
		delete(s.consumers, c.consumer)
	}
	s.mu.Unlock()
	if c.release != nil {
		c.release()
	}
}

// submit validates and registers a request; it returns the frame to answer with and, when the request was
// accepted, the func that starts it (called after the answer is queued, so accepted precedes its trajectories).
func (s *Server) submit(consumer string, m *Submit) (any, func()) {
	reject := func(code, reason string) (any, func()) {
		s.rejected.Add(1)
		return Rejected{Type: TypeRejected, RequestID: m.RequestID, Code: code, Reason: reason}, nil
	}
	if err := validateSubmit(m, s.cfg.MaxSamplesPerRequest); err != nil {
		return reject(CodeInvalid, err.Error())
	}
	req := RolloutRequest{ID: m.RequestID, Consumer: consumer, Agent: m.Agent, Items: m.Items, Sampling: m.Sampling, Events: m.Events}
	if err := s.runner.Validate(req); err != nil {
		return reject(CodeInvalid, err.Error())
	}
	if s.store != nil {
		return s.submitToStore(req, reject)
	}
	key := reqKey(consumer, m.RequestID)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return reject(CodeShuttingDown, "the server is shutting down")
	}
	if _, dup := s.requests[key]; dup {
		s.mu.Unlock()
		s.accepted.Add(1)
		return Accepted{Type: TypeAccepted, RequestID: m.RequestID, Samples: req.Samples(), Duplicate: true}, nil
	}
	active := 0
	for _, r := range s.requests {
		if r.Consumer == consumer {
			active++
		}
	}
	if active >= s.cfg.MaxActiveRequests {
		s.mu.Unlock()
		return reject(CodeOverloaded, fmt.Sprintf("consumer has %d running requests (max_active_requests)", active))
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &request{RolloutRequest: req, cancel: cancel, done: make(chan struct{})}
	s.requests[key] = r
	s.runs.Add(1)
	s.mu.Unlock()
	// Journaled (committed, fsynced) before it is accepted: from here on a crash does not lose it.
	if _, err := s.spool.journal(consumer, m.RequestID, journalEntry{Agent: m.Agent, Items: m.Items, Sampling: m.Sampling, Events: m.Events}); err != nil {
		cancel()
		s.mu.Lock()
		delete(s.requests, key)
		s.mu.Unlock()
		s.runs.Done()
		s.log.Error("stream: could not journal a request", "consumer", consumer, "request_id", m.RequestID, "err", err)
		if errors.Is(err, ErrClosed) {
			return reject(CodeShuttingDown, "the server is shutting down")
		}
		return reject(CodeSpool, "the server could not journal the request: "+err.Error())
	}
	s.accepted.Add(1)
	return Accepted{Type: TypeAccepted, RequestID: m.RequestID, Samples: req.Samples()}, func() { go s.run(ctx, key, r) }
}

// submitToStore stores an accepted request; the store's workers run it.
func (s *Server) submitToStore(req RolloutRequest, reject func(code, reason string) (any, func())) (any, func()) {
	if s.isClosing() {
		return reject(CodeShuttingDown, "the server is shutting down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	active, _, err := s.store.Requests(ctx, req.Consumer)
	if err == nil && len(active) >= s.cfg.MaxActiveRequests && !slices.Contains(active, req.ID) {
		return reject(CodeOverloaded, fmt.Sprintf("consumer has %d running requests (max_active_requests)", len(active)))
	}
	dup := false
	if err == nil {
		dup, err = s.store.Submit(ctx, req)
	}
	if err != nil {
		s.log.Error("stream: could not store a request", "consumer", req.Consumer, "request_id", req.ID, "err", err)
		return reject(CodeSpool, "the server could not store the request: "+err.Error())
	}
	s.accepted.Add(1)
	return Accepted{Type: TypeAccepted, RequestID: req.ID, Samples: req.Samples(), Duplicate: dup}, nil
}

func validateSubmit(m *Submit, maxSamples int) error {
	if m.RequestID == "" {
		return errors.New("request_id is required")
	}
	if len(m.RequestID) > 256 {
		return errors.New("request_id is longer than 256 bytes")
	}
	if len(m.Items) == 0 {
		return errors.New("items is empty")
	}
	seen := make(map[string]bool, len(m.Items))
	total := 0
	for i := range m.Items {
		it := &m.Items[i]
		if it.ID == "" {
			return fmt.Errorf("items[%d].id is required", i)
		}
		if len(it.ID) > 256 {
			return fmt.Errorf("items[%d].id is longer than 256 bytes", i)
		}
		if seen[it.ID] {
			return fmt.Errorf("items[%d].id %q is used twice", i, it.ID)
		}
		seen[it.ID] = true
		if it.N == 0 {
			it.N = 1
		}
		if it.N < 0 {
			return fmt.Errorf("items[%d].n must be >= 1, got %d", i, it.N)
		}
		if it.MaxResponseTokens < 0 {
			return fmt.Errorf("items[%d].max_response_tokens must be >= 0 (0: the agent's), got %d", i, it.MaxResponseTokens)
		}
		total += it.N
		if total > maxSamples {
			return fmt.Errorf("the request asks for more than %d samples (max_samples_per_request)", maxSamples)
		}
		if t := bytes.TrimSpace(it.Messages); len(t) == 0 || t[0] != '[' {
			return fmt.Errorf("items[%d].messages must be a JSON array of chat messages", i)
		}
		if t := bytes.TrimSpace(it.Metadata); len(t) > 0 && t[0] != '{' && !bytes.Equal(t, []byte("null")) {
			return fmt.Errorf("items[%d].metadata must be a JSON object", i)
		}
	}
	if t := bytes.TrimSpace(m.Sampling); len(t) > 0 && t[0] != '{' && !bytes.Equal(t, []byte("null")) {
		return errors.New("sampling must be a JSON object")
	}
	return nil
}

func (s *Server) run(ctx context.Context, key string, r *request) {
	defer s.runs.Done()
	defer close(r.done)
	defer func() {
		s.mu.Lock()
		delete(s.requests, key)
		s.mu.Unlock()
	}()
	var err error
	switch {
	case r.cancelled.Load() && r.Finished != nil:
		// Resumed after a restart, but its consumer had cancelled it: it ends now with what it had.
	case r.Finished != nil:
		// Resumed after a restart: the runner may have changed (another config); check the request again.
		if err = s.runner.Validate(r.RolloutRequest); err != nil {
			err = fmt.Errorf("after a server restart the request is no longer valid: %w", err)
			break
		}
		fallthrough
	default:
		err = func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("stream: runner panicked: %v", p)
				}
			}()
			return s.runner.Run(ctx, r.RolloutRequest, &emitter{s: s, r: r})
		}()
	}
	r.cancel()
	if r.interrupted.Load() && !r.cancelled.Load() {
		s.log.Info("stream: request interrupted by shutdown; it resumes when the server restarts", "consumer", r.Consumer, "request_id", r.ID)
		return
	}
	status, msg := RequestCompleted, ""
	switch {
	case r.cancelled.Load():
		status = RequestCancelled
		if err != nil && !errors.Is(err, context.Canceled) {
			msg = err.Error()
		}
	case err != nil:
		status, msg = RequestFailed, err.Error()
		s.log.Warn("stream: request failed", "consumer", r.Consumer, "request_id", r.ID, "err", err)
	}
	done := RequestDone{Type: TypeRequestDone, RequestID: r.ID, Status: status, Error: msg, Trajectories: int(r.emitted.Load())}
	// The done record waits for spool room like a trajectory, until a hard stop.
	pctx, cancel := s.withHardStop(context.Background())
	// Its put ends the journal entry in the same transaction; if it fails, the request runs again (nothing
	// left to run) after a restart and its request_done is spooled then.
	tail := tailOf(done, `{"type":"request_done","seq":0`)
	val := append(recordValue(kindDone, doneIDPrefix+r.ID, len(tail)), tail...)
	if _, _, err := s.spool.putValue(pctx, r.Consumer, doneIDPrefix+r.ID, val, journalRef{request: r.ID, end: true}); err != nil {
		s.log.Error("stream: could not spool request_done", "consumer", r.Consumer, "request_id", r.ID, "err", err)
	}
	cancel()
}

// tailOf marshals v and strips prefix (the type and a zero seq), leaving what follows the seq in a frame.
func tailOf(v any, prefix string) []byte {
	b, err := json.Marshal(v)
	if err != nil || !bytes.HasPrefix(b, []byte(prefix)) {
		panic(fmt.Sprintf("stream: frame prefix %q not found in %s (err %v)", prefix, b, err))
	}
	return b[len(prefix):]
}

func (s *Server) cancelRequest(consumer, id string) bool {
	if s.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		defer cancel()
		found, err := s.store.Cancel(ctx, consumer, id)
		if err != nil {
			s.log.Warn("stream: could not store a cancel", "consumer", consumer, "request_id", id, "err", err)
		}
		return found
	}
	s.mu.Lock()
	r := s.requests[reqKey(consumer, id)]
	s.mu.Unlock()
	if r == nil {
		return false
	}
	r.cancelled.Store(true)
	r.cancel()
	if err := s.spool.journalCancel(consumer, id); err != nil {
		s.log.Warn("stream: could not journal a cancel (a restart would run the request's other samples)", "consumer", consumer, "request_id", id, "err", err)
	}
	return true
}

// control runs a pause/resume/update_weights call with a context that Shutdown cancels.
func (s *Server) control(m *Control) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.cancels[&cancel] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, &cancel)
		s.mu.Unlock()
	}()
	switch m.Type {
	case TypePause:
		return s.runner.Pause(ctx, m.Mode)
	case TypeResume:
		return s.runner.Resume(ctx)
	default:
		return s.runner.UpdateWeights(ctx, UpdateWeightsRequest{ModelPath: m.ModelPath, WeightVersion: m.WeightVersion, Options: m.Options})
	}
}

type emitter struct {
	s *Server
	r *request
}

type trajectoryHeader struct {
	Type         string `json:"type"`
	Seq          uint64 `json:"seq"`
	RequestID    string `json:"request_id"`
	ItemID       string `json:"item_id"`
	SampleIndex  int    `json:"sample_index"`
	GroupID      string `json:"group_id"`
	TrajectoryID string `json:"trajectory_id"`
}

const trajectoryPrefix = `{"type":"trajectory","seq":0`

func (e *emitter) Finish(ctx context.Context, f Finished) error {
	if e.r.interrupted.Load() && !e.r.cancelled.Load() {
		return ErrInterrupted // its sample runs again after a restart
	}
	dup, err := e.s.putTrajectory(ctx, e.r.Consumer, e.r.ID, f, journalRef{request: e.r.ID, item: f.ItemID, sample: f.SampleIndex})
	if err == nil && !dup {
		e.r.emitted.Add(1)
	}
	return err
}

// Emit spools a trajectory that belongs to no submitted request (a front-door session's) for consumer, with
// requestID in its frame, exactly as a request's trajectories are spooled and delivered (acks, redelivery,
// restarts). It blocks while the spool is full. A trajectory id the consumer's spool already holds is not
// spooled again, and Emit says so (ErrDuplicate): nothing replays an emitted trajectory, so a second one under the
// same id is another trajectory, which the caller must not report as stored.
func (s *Server) Emit(ctx context.Context, consumer, requestID string, f Finished) error {
	if consumer == "" || requestID == "" || f.TrajectoryID == "" {
		return errors.New("stream: emit needs a consumer, a request id and a trajectory id")
	}
	if s.store != nil {
		if t := bytes.TrimSpace(f.Trajectory); len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
			return ErrInvalidTrajectory
		}
		if f.GroupID == "" {
			f.GroupID = requestID + "/" + f.ItemID
		}
		dup, err := s.store.Emit(ctx, consumer, requestID, f)
		switch {
		case err != nil:
			return fmt.Errorf("stream: store trajectory %s: %w", f.TrajectoryID, err)
		case dup:
			s.duplicates.Add(1)
			return fmt.Errorf("%w: %s (for consumer %s); not stored", ErrDuplicate, f.TrajectoryID, consumer)
		}
		s.spooled.Add(1)
		return nil
	}
	dup, err := s.putTrajectory(ctx, consumer, requestID, f, journalRef{})
	if err == nil && dup {
		return fmt.Errorf("%w: %s (for consumer %s); not stored", ErrDuplicate, f.TrajectoryID, consumer)
	}
	return err
}

func (s *Server) putTrajectory(ctx context.Context, consumer, requestID string, f Finished, jr journalRef) (dup bool, err error) {
	t := bytes.TrimSpace(f.Trajectory)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false, ErrInvalidTrajectory
	}
	if f.GroupID == "" {
		f.GroupID = requestID + "/" + f.ItemID
	}
	if f.TrajectoryID == "" {
		f.TrajectoryID = requestID + "/" + f.ItemID + "/" + strconv.Itoa(f.SampleIndex)
	}
	h := tailOf(trajectoryHeader{Type: TypeTrajectory, RequestID: requestID, ItemID: f.ItemID, SampleIndex: f.SampleIndex,
		GroupID: f.GroupID, TrajectoryID: f.TrajectoryID}, trajectoryPrefix)
	if len(f.TrajectoryID) > maxIDLen {
		return false, fmt.Errorf("stream: trajectory id longer than %d bytes", maxIDLen)
	}
	val := recordValue(kindTrajectory, f.TrajectoryID, len(h)+len(`,"trajectory":`)+len(t))
	val = append(val, h[:len(h)-1]...) // drop the closing brace
	val = append(val, `,"trajectory":`...)
	val = append(val, t...)
	val = append(val, '}')
	pctx, cancel := s.withHardStop(ctx)
	defer cancel()
	_, dup, err = s.spool.putValue(pctx, consumer, f.TrajectoryID, val, jr)
	if err != nil {
		return false, fmt.Errorf("stream: spool trajectory %s: %w", f.TrajectoryID, err)
	}
	if dup {
		s.duplicates.Add(1)
		return true, nil
	}
	s.spooled.Add(1)
	return false, nil
}

func (e *emitter) Turn(ev TurnEvent) {
	if !e.r.Events {
		return
	}
	e.s.mu.Lock()
	c := e.s.consumers[e.r.Consumer]
	e.s.mu.Unlock()
	data := ev.Data
	if len(bytes.TrimSpace(data)) == 0 {
		data = json.RawMessage("null")
	}
	if c == nil {
		e.s.eventsDropped.Add(1)
		return
	}
	b, err := json.Marshal(EventFrame{Type: TypeEvent, RequestID: e.r.ID, ItemID: ev.ItemID, SampleIndex: ev.SampleIndex, Turn: ev.Turn, Event: data})
	if err != nil {
		e.s.eventsDropped.Add(1)
		return
	}
	if c.tryQueue(b) {
		e.s.eventsSent.Add(1)
	} else {
		e.s.eventsDropped.Add(1)
	}
}
