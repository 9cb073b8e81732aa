package frontdoor

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// Model is what serves the calls: one configured agent's model (generator, tokenizer, template, parser, stops,
// context window, template kwargs, reasoning markup, call-id style, pause gate), sampling defaults and reward.
type Model struct {
	// Name is what callers put in "model" (the agent's name).
	Name string
	// Turn makes the model calls.
	Turn *turn.Model
	// Sampling are the agent's sampling params, every one of them: a call's parameters override some;
	// Sampling.MaxNewTokens is the default max_tokens.
	Sampling turn.Sampling
	// Provenance is copied into every trajectory.
	Provenance map[string]any
	// Reward, if set, scores a finished trajectory whose session end gave no reward (the agent's reward hook).
	Reward RewardFunc
}

// RewardFunc scores a finished conversation: its messages, status and the end call's label and metadata.
type RewardFunc func(ctx context.Context, msgs []tito.Message, status, reason string, label, metadata json.RawMessage) (*float64, map[string]float64, error)

// Emitted is one finished trajectory of a session, for the sink.
type Emitted struct {
	Session      string
	TrajectoryID string
	GroupID      string
	// Index numbers the session's trajectories (its branches) from 0.
	Index      int
	Trajectory json.RawMessage
	// Traj is the trajectory itself (for metrics); Trajectory is its JSON.
	Traj *tito.Trajectory
}

// Sink receives finished trajectories; agentrt serve spools them for the configured consumer. It may block
// (a full spool); an error is logged and answered to an explicit end call.
type Sink func(ctx context.Context, e Emitted) error

// Server serves the OpenAI-compatible endpoints over sessions. It is safe for concurrent use.
type Server struct {
	cfg  Config
	m    Model
	sink Sink
	log  *slog.Logger
	// OnDrift, if set, is told of every drift (policy, reason) for metrics.
	OnDrift func(policy, reason string)

	handlerOnce sync.Once
	handler     http.Handler

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session
	gone     map[string]bool // ended sessions, so that a late call gets "no longer exists"
	goneFIFO []string
}

// maxGone bounds the remembered ended sessions.
const maxGone = 100000

// New returns a server; cfg must be valid (Config.Validate).
func New(cfg Config, m Model, sink Sink, log *slog.Logger) (*Server, error) {
	if key, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("frontdoor.%s: %w", key, err)
	}
	if m.Turn == nil || sink == nil {
		return nil, errors.New("frontdoor: needs a model and a sink")
	}
	if err := m.Turn.Check(); err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	if m.Sampling.MaxNewTokens <= 0 {
		return nil, errors.New("frontdoor: the model needs a default max_new_tokens")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, m: m, sink: sink, log: log, sessions: map[string]*session{}, gone: map[string]bool{}}, nil
}

// Handler serves, on one mux:
//
//	POST /v1/chat/completions              (session from the X-Agentrt-Session header, else a one-call session)
//	POST /s/{session}/v1/chat/completions  (base_url = http://host/s/{session}/v1)
//	POST /v1/messages, /s/{session}/v1/messages (Anthropic; base_url = http://host/s/{session})
//	POST /v1/responses, /s/{session}/v1/responses (OpenAI Responses)
//	POST /s/{session}/end, POST /v1/sessions/{session}/end
//	POST /v1/sessions                      (mints a session id: {"session": "s-..."})
//	GET  /v1/models, /s/{session}/v1/models
func (s *Server) Handler() http.Handler {
	s.handlerOnce.Do(s.buildHandler)
	return s.handler
}

func (s *Server) buildHandler() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.chatCompletions(w, r, r.Header.Get(SessionHeader))
	})
	mux.HandleFunc("POST /s/{session}/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.chatCompletions(w, r, r.PathValue("session"))
	})
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		s.messages(w, r, r.Header.Get(SessionHeader))
	})
	mux.HandleFunc("POST /s/{session}/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		s.messages(w, r, r.PathValue("session"))
	})
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		s.responses(w, r, r.Header.Get(SessionHeader))
	})
	mux.HandleFunc("POST /s/{session}/v1/responses", func(w http.ResponseWriter, r *http.Request) {
		s.responses(w, r, r.PathValue("session"))
	})
	mux.HandleFunc("POST /v1/sessions", s.mintHandler)
	mux.HandleFunc("POST /s/{session}/end", s.endHandler)
	mux.HandleFunc("POST /v1/sessions/{session}/end", s.endHandler)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /s/{session}/v1/models", s.models)
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && !s.authorized(r) {
			e := &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
				msg: "agentrt: wrong or missing API key: send server.token as the API key (Authorization: Bearer, or x-api-key)"}
			if strings.HasSuffix(r.URL.Path, "/v1/messages") {
				writeJSON(w, e.status, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": e.msg}})
				return
			}
			writeError(w, e)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token as an OpenAI (Authorization: Bearer) or Anthropic (x-api-key)
// API key.
func (s *Server) authorized(r *http.Request) bool {
	key := r.Header.Get("X-Api-Key")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		key = b
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(s.cfg.Token)) == 1
}

// SessionHeader names a call's session when its URL does not.
const SessionHeader = "X-Agentrt-Session"

// Paths are the URL patterns that Handler serves, for mounting it on another mux.
var Paths = []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/models", "/s/", "/v1/sessions/"}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.m.Name, "object": "model", "created": 0, "owned_by": "agentrt"}}})
}

// Sessions returns the number of open sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// open returns the session named id, creating it (unless session ids are minted); anonymous (id "") calls get a
// fresh one-call session.
func (s *Server) open(id string) (*session, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down", msg: "agentrt is shutting down"}
	}
	if id != "" {
		if len(id) > 256 {
			return nil, invalid("session", "session id longer than 256 bytes")
		}
		if ss := s.sessions[id]; ss != nil {
			return ss, nil
		}
		if s.gone[id] {
			return nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "session_not_found",
				msg: fmt.Sprintf("session %q has ended (explicitly or after frontdoor.idle_timeout); start a new session id", id)}
		}
		if s.cfg.SessionIDs == SessionIDsMinted {
			return nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "session_not_found",
				msg: fmt.Sprintf("no session %q: this server only serves the session ids it mints (frontdoor.session_ids = \"minted\"): POST /v1/sessions for one", id)}
		}
	}
	oneCall := id == ""
	if oneCall {
		id = "anon-" + randomID()
	}
	return s.openLocked(id, oneCall, false)
}

// openLocked adds a new session, within max_sessions. Caller holds s.mu.
func (s *Server) openLocked(id string, oneCall, minted bool) (*session, *apiError) {
	if len(s.sessions) >= s.cfg.MaxSessions {
		return nil, &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "too_many_sessions",
			msg: fmt.Sprintf("%d sessions are open (frontdoor.max_sessions): end some first", len(s.sessions))}
	}
	ss := newSession(s, id, oneCall)
	ss.minted = minted
	s.sessions[id] = ss
	return ss, nil
}

// mintHandler opens a session under a fresh, unguessable id and answers it: {"session": "s-..."}. The session
// counts toward max_sessions and ends after idle_timeout without a call, like any.
func (s *Server) mintHandler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down", msg: "agentrt is shutting down"})
		return
	}
	ss, aerr := s.openLocked("s-"+randomID()+randomID(), false, true)
	s.mu.Unlock()
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	ss.mu.Lock()
	ss.last = time.Now()
	ss.idle = time.AfterFunc(s.cfg.IdleTimeout, ss.idleEnd)
	ss.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"session": ss.id, "object": "session"})
}

// discard forgets a session whose first call failed without marking its id ended: nothing of it is kept, and the
// id may be used again.
func (s *Server) discard(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
}

// randomID is 64 random bits in hex.
func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// forget removes an ended session and remembers its id.
func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
	if s.gone[id] {
		return
	}
	s.gone[id] = true
	s.goneFIFO = append(s.goneFIFO, id)
	if len(s.goneFIFO) > maxGone {
		delete(s.gone, s.goneFIFO[0])
		s.goneFIFO = s.goneFIFO[1:]
	}
}

// endBody is the optional body of an end call.
type endBody struct {
	// Reward is the session's reward, set on each of its trajectories.
	Reward *float64 `json:"reward"`
	// Label and Metadata are copied into each trajectory.
	Label    json.RawMessage `json:"label"`
	Metadata json.RawMessage `json:"metadata"`
	// GroupID groups sessions for the trainer (the n samples of one prompt, for GRPO); default
	// frontdoor/SESSION/RUN (the session's own branches).
	GroupID string `json:"group_id"`
}

func (s *Server) endHandler(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session")
	var body endBody
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes))
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, invalid("", "end "+id+": body: "+err.Error()+" (want {\"reward\": number, \"label\": ..., \"metadata\": {...}, \"group_id\": \"...\"} or nothing)"))
		return
	}
	if len(body.Metadata) > 0 && string(body.Metadata) != "null" && body.Metadata[0] != '{' {
		writeError(w, invalid("metadata", "end "+id+": metadata must be a JSON object"))
		return
	}
	s.mu.Lock()
	ss := s.sessions[id]
	wasGone := s.gone[id]
	s.mu.Unlock()
	if ss == nil {
		if wasGone {
			writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "session_not_found", msg: fmt.Sprintf("session %q has already ended", id)})
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "session_not_found", msg: fmt.Sprintf("no session %q", id)})
		return
	}
	ids, err := ss.end(r.Context(), "", &body)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "spool_error",
			msg: fmt.Sprintf("session %q: %v (spooled: %q)", id, err, ids)})
		return
	}
	if ids == nil {
		ids = []string{} // a session without a reply emits nothing
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "trajectories": ids})
}

// Close ends every open session (their trajectories go to the sink) and refuses later calls.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	open := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	var errs []error
	for _, ss := range open {
		if _, err := ss.end(ctx, ReasonShutdown, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Status reasons of session trajectories.
const (
	ReasonIdle     = "idle_timeout" // the session ended after frontdoor.idle_timeout without a call
	ReasonForked   = "forked"       // the caller edited history and the session went on in a new branch
	ReasonShutdown = "shutdown"     // agentrt serve stopped with the session open
)

func (s *Server) drifted(policy, reason string) {
	if s.OnDrift != nil {
		s.OnDrift(policy, reason)
	}
}

func (s *Server) now() time.Time { return time.Now() }
