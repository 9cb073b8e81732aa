package viewer

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prefix is where the page lives: mount the Handler at it (mux.Handle(viewer.Prefix, h)).
const Prefix = "/view/"

// cookieName holds proof of the token in the browser (a keyed hash of it, never the token itself).
const cookieName = "agentrt_viewer"

// maxList is the most summaries one list request returns.
const maxList = 5000

// keepAlive is how often an idle event stream sends a comment, so that proxies keep it open.
const keepAlive = 20 * time.Second

//go:embed web
var web embed.FS

// Option configures a Handler.
type Option func(*Handler)

// WithToken makes every request present token: as a bearer token (Authorization header), or once as ?token= on
// the page's address, after which a cookie (HttpOnly, SameSite=Strict) carries a keyed hash of it. Without a
// token the handler answers only requests addressed to a loopback host (a DNS-rebinding page gets 403).
func WithToken(token string) Option { return func(h *Handler) { h.token = token } }

// WithTokenizers gives the handler the models' tokenizers, to show token texts.
func WithTokenizers(t Tokenizers) Option { return func(h *Handler) { h.toks = t } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// Handler serves the page, its assets and its JSON API over a Source. Safe for concurrent use.
type Handler struct {
	src   Source
	token string
	toks  Tokenizers
	log   *slog.Logger
	mux   *http.ServeMux

	mu      sync.Mutex
	closed  bool
	active  sync.WaitGroup
	closing chan struct{}
}

// NewHandler returns the viewer over src.
func NewHandler(src Source, opts ...Option) *Handler {
	h := &Handler{src: src, log: slog.New(slog.DiscardHandler), mux: http.NewServeMux(), closing: make(chan struct{})}
	for _, o := range opts {
		o(h)
	}
	assets, _ := fs.Sub(web, "web")
	h.mux.HandleFunc("GET "+Prefix+"{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, assets, "index.html")
	})
	h.mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(assets)))
	h.mux.HandleFunc("GET "+Prefix+"api/info", h.info)
	h.mux.HandleFunc("GET "+Prefix+"api/trajectories", h.list)
	h.mux.HandleFunc("GET "+Prefix+"api/trajectory", h.trajectory)
	h.mux.HandleFunc("GET "+Prefix+"api/group", h.group)
	h.mux.HandleFunc("GET "+Prefix+"api/events", h.events)
	return h
}

// Close ends the page's event streams and waits for the requests in flight; later requests get 503. Call it
// before closing what the tokenizers belong to.
func (h *Handler) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
	h.mu.Unlock()
	h.active.Wait()
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if !h.authorized(w, r) {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "agentrt viewer: shutting down", http.StatusServiceUnavailable)
		return
	}
	h.active.Add(1)
	h.mu.Unlock()
	defer h.active.Done()
	h.mux.ServeHTTP(w, r)
}

// authorized answers the request itself (and returns false) unless it may see the trajectories.
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.token == "" {
		if !loopbackHost(r.Host) {
			h.log.Warn("viewer: refused a request for a non-loopback host (no server.token set)", "host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, "agentrt viewer: without server.token the viewer answers only on a loopback address (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
			return false
		}
		return true
	}
	if a := r.Header.Get("Authorization"); a != "" {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(h.token)) == 1 {
			return true
		}
	} else if c, err := r.Cookie(cookieName); err == nil && hmac.Equal([]byte(c.Value), []byte(h.cookieValue())) {
		return true
	} else if q := r.URL.Query(); q.Has("token") && r.Method == http.MethodGet {
		if subtle.ConstantTimeCompare([]byte(q.Get("token")), []byte(h.token)) == 1 {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: h.cookieValue(), Path: Prefix, HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther) // the token leaves the address bar
			return false
		}
	}
	h.log.Warn("viewer: refused a request without the token", "remote", r.RemoteAddr, "path", r.URL.Path)
	if strings.HasPrefix(r.URL.Path, Prefix+"api/") {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the viewer needs server.token: Authorization: Bearer TOKEN"})
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "agentrt viewer: this server has a token (server.token). Open %s?token=TOKEN once; a cookie keeps you signed in.\n", Prefix)
	}
	return false
}

func (h *Handler) cookieValue() string {
	m := hmac.New(sha256.New, []byte(h.token))
	m.Write([]byte("agentrt viewer cookie v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// loopbackHost reports whether a Host header names a loopback address (localhost or a loopback IP).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

type infoResponse struct {
	Source SourceInfo `json:"source"`
	Facets
}

func (h *Handler) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, infoResponse{Source: h.src.Info(), Facets: h.src.Facets()})
}

type listResponse struct {
	Matched int       `json:"matched"`
	Total   int       `json:"total"`
	Items   []Summary `json:"items"`
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	f, limit, err := parseFilter(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	items, matched := h.src.List(f, limit)
	if items == nil {
		items = []Summary{}
	}
	writeJSON(w, http.StatusOK, listResponse{Matched: matched, Total: h.src.Facets().Total, Items: items})
}

// parseFilter reads the list's query: status, agent, min_reward, max_reward, q, limit.
func parseFilter(r *http.Request) (Filter, int, error) {
	q := r.URL.Query()
	f := Filter{Status: q.Get("status"), Agent: q.Get("agent"), Query: q.Get("q")}
	num := func(key string) (*float64, error) {
		s := strings.TrimSpace(q.Get(key))
		if s == "" {
			return nil, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", key, s)
		}
		return &v, nil
	}
	var err error
	if f.MinReward, err = num("min_reward"); err != nil {
		return f, 0, err
	}
	if f.MaxReward, err = num("max_reward"); err != nil {
		return f, 0, err
	}
	limit := 500
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return f, 0, fmt.Errorf("limit: %q is not a positive integer", s)
		}
	}
	return f, min(limit, maxList), nil
}

func (h *Handler) trajectory(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "id is required"})
		return
	}
	t, err := h.src.Get(id)
	if err != nil {
		h.notFound(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, detail(t, h.toks))
}

type groupResponse struct {
	GroupID string    `json:"group_id"`
	Samples []*Detail `json:"samples"`
}

func (h *Handler) group(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "id is required"})
		return
	}
	ts, err := h.src.Group(id)
	if err == nil && len(ts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		h.notFound(w, id, err)
		return
	}
	g := groupResponse{GroupID: id, Samples: make([]*Detail, len(ts))}
	for i, t := range ts {
		g.Samples[i] = detail(t, h.toks)
	}
	writeJSON(w, http.StatusOK, g)
}

func (h *Handler) notFound(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%q: not held (never received, or no longer among the recent ones)", id)})
		return
	}
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
}

// events streams the summaries of new trajectories as server-sent events: "trajectory" with a summary, "reset"
// when the page missed some (it reloads its list).
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	sub := h.src.Subscribe()
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\nevent: hello\ndata: {}\n\n")
	if rc.Flush() != nil {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.closing:
			return
		case <-sub.Done():
			return
		case <-t.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case s := <-sub.C:
			if sub.Lagged() || s.ID == "" {
				fmt.Fprint(w, "event: reset\ndata: {}\n\n")
			} else {
				b, _ := json.Marshal(s)
				fmt.Fprintf(w, "event: trajectory\ndata: %s\n\n", b)
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"viewer: cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b)
}
