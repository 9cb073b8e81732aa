// Package outbound is the policy side of outbound HTTP as a granted capability (issue 14): a Grant says which
// URLs a plugin may reach (hosts with ports and schemes, methods), with what limits (per-call timeout, body caps,
// requests per episode and per second) and which headers the runtime injects from environment variables (secrets
// the guest never sees). A Client enforces a grant: a denied request is a *DeniedError naming the rule, never a
// request on the wire; every request, allowed or denied, yields a Record (host, status, bytes, ms) for metrics
// and provenance. Redirects are not followed: each hop would otherwise escape the host check.
package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Grant is one plugin's outbound HTTP permission. The zero Grant allows nothing.
type Grant struct {
	// Hosts are the allowed destinations: "api.example.com" (https, port 443), "*.example.com" (any subdomain,
	// not the apex), "http://127.0.0.1:8080" (scheme and port explicit), "https://search.internal:*" (any port).
	Hosts []string `toml:"hosts"`
	// Methods are the allowed HTTP methods (default: GET).
	Methods []string `toml:"methods"`
	// Timeout bounds each request, body included (default 10 s).
	Timeout time.Duration `toml:"timeout"`
	// MaxRequestBytes and MaxResponseBytes cap the bodies (defaults 64 KiB and 1 MiB). A larger response is an
	// error, not a silent truncation.
	MaxRequestBytes  int `toml:"max_request_bytes"`
	MaxResponseBytes int `toml:"max_response_bytes"`
	// PerEpisode caps the requests of one episode (0: no cap); PerSecond caps the plugin's rate over all
	// episodes (0: no cap; bursts up to max(1, PerSecond)).
	PerEpisode int     `toml:"requests_per_episode"`
	PerSecond  float64 `toml:"requests_per_second"`
	// Headers are set on every request, values from environment variables: {"Authorization" = "$SEARCH_TOKEN"}.
	// The guest can neither read nor override them.
	Headers map[string]string `toml:"headers"`
}

// Request is what a guest asks for.
type Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Response is what the guest gets back.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body"`
}

// Record is one request's audit line: for metrics and the trajectory's tool provenance.
type Record struct {
	Host      string  `json:"host"`
	Method    string  `json:"method"`
	Status    int     `json:"status,omitempty"`
	SentBytes int     `json:"sent_bytes"`
	RecvBytes int     `json:"recv_bytes"`
	Ms        float64 `json:"ms"`
	Denied    string  `json:"denied,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// DeniedError is a request the grant does not allow; Rule names which part of the grant refused it.
type DeniedError struct {
	Rule, Msg string
}

func (e *DeniedError) Error() string { return "outbound HTTP denied (" + e.Rule + "): " + e.Msg }

type hostRule struct {
	scheme   string // "" = https
	host     string // lower case; "*.x" = any subdomain of x
	port     string // "" = the scheme's default; "*" = any
	wildcard bool
}

// Client enforces a Grant. It is safe for concurrent use.
type Client struct {
	g       Grant
	rules   []hostRule
	headers map[string]string // resolved from the environment at New
	limiter *rate.Limiter
	http    *http.Client

	mu       sync.Mutex
	episodes map[string]int
}

// New checks the grant and resolves its headers; a header naming an unset environment variable is an error (a
// missing secret found at start, not at the first call).
func New(g Grant) (*Client, error) {
	if len(g.Methods) == 0 {
		g.Methods = []string{"GET"}
	}
	for i, m := range g.Methods {
		g.Methods[i] = strings.ToUpper(m)
	}
	if g.Timeout <= 0 {
		g.Timeout = 10 * time.Second
	}
	if g.MaxRequestBytes <= 0 {
		g.MaxRequestBytes = 64 << 10
	}
	if g.MaxResponseBytes <= 0 {
		g.MaxResponseBytes = 1 << 20
	}
	if g.PerEpisode < 0 || g.PerSecond < 0 {
		return nil, errors.New("outbound: requests_per_episode and requests_per_second must be >= 0")
	}
	c := &Client{g: g, headers: map[string]string{}, episodes: map[string]int{}}
	for _, h := range g.Hosts {
		r, err := parseRule(h)
		if err != nil {
			return nil, err
		}
		c.rules = append(c.rules, r)
	}
	for k, v := range g.Headers {
		name, isVar := strings.CutPrefix(v, "$")
		if !isVar {
			return nil, fmt.Errorf("outbound: header %s: value must name an environment variable ($NAME), not hold the secret itself", k)
		}
		val, ok := os.LookupEnv(name)
		if !ok {
			return nil, fmt.Errorf("outbound: header %s: environment variable %s is not set", k, name)
		}
		c.headers[http.CanonicalHeaderKey(k)] = val
	}
	if g.PerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(g.PerSecond), max(1, int(math.Ceil(g.PerSecond))))
	}
	c.http = &http.Client{
		Timeout:       g.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

func parseRule(s string) (hostRule, error) {
	r := hostRule{}
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		if scheme != "http" && scheme != "https" {
			return r, fmt.Errorf("outbound: hosts: %q: scheme must be http or https", s)
		}
		r.scheme, rest = scheme, after
	}
	if strings.ContainsAny(rest, "/?#@") || rest == "" {
		return r, fmt.Errorf("outbound: hosts: %q: want [scheme://]host[:port], no path or user", s)
	}
	host, port := rest, ""
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.Contains(rest[i:], "]") {
		host, port = rest[:i], rest[i+1:]
		if port == "" {
			return r, fmt.Errorf("outbound: hosts: %q: empty port", s)
		}
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if strings.HasPrefix(host, "*.") {
		r.wildcard, host = true, host[2:]
	}
	if host == "" || strings.Contains(host, "*") {
		return r, fmt.Errorf("outbound: hosts: %q: a wildcard may only be a leading \"*.\"", s)
	}
	r.host, r.port = host, port
	return r, nil
}

// check returns the rule that refuses u, or nil.
func (c *Client) check(method string, u *url.URL) *DeniedError {
	if !slices.Contains(c.g.Methods, method) {
		return &DeniedError{"methods", fmt.Sprintf("method %s is not granted (granted: %s)", method, strings.Join(c.g.Methods, ", "))}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &DeniedError{"hosts", fmt.Sprintf("scheme %q is not http or https", u.Scheme)}
	}
	if u.User != nil {
		return &DeniedError{"hosts", "URLs with user info are not allowed"}
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, r := range c.rules {
		scheme := r.scheme
		if scheme == "" {
			scheme = "https"
		}
		rport := r.port
		if rport == "" {
			rport = map[string]string{"http": "80", "https": "443"}[scheme]
		}
		okHost := host == r.host || (r.wildcard && strings.HasSuffix(host, "."+r.host))
		if r.wildcard && host == r.host {
			okHost = false
		}
		if okHost && u.Scheme == scheme && (rport == "*" || rport == port) {
			return nil
		}
	}
	return &DeniedError{"hosts", fmt.Sprintf("%s://%s is not in the granted hosts", u.Scheme, net.JoinHostPort(host, port))}
}

// Do runs req for an episode under the grant. It returns the response, the audit record (always filled, also
// for denied and failed requests) and an error: a *DeniedError, or what went wrong on the wire (timeouts
// included). Injected headers replace any the guest set under the same name.
func (c *Client) Do(ctx context.Context, episodeID string, req Request) (Response, Record, error) {
	t0 := time.Now()
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = "GET"
	}
	rec := Record{Method: method, SentBytes: len(req.Body)}
	fail := func(err error) (Response, Record, error) {
		var d *DeniedError
		if errors.As(err, &d) {
			rec.Denied = d.Rule
		} else {
			rec.Error = err.Error()
		}
		rec.Ms = float64(time.Since(t0).Microseconds()) / 1000
		return Response{}, rec, err
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return fail(&DeniedError{"hosts", fmt.Sprintf("bad URL %q: %v", req.URL, err)})
	}
	rec.Host = u.Host
	if d := c.check(method, u); d != nil {
		return fail(d)
	}
	if len(req.Body) > c.g.MaxRequestBytes {
		return fail(&DeniedError{"max_request_bytes", fmt.Sprintf("request body of %d bytes is over the %d-byte cap", len(req.Body), c.g.MaxRequestBytes)})
	}
	if d := c.count(episodeID); d != nil {
		return fail(d)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader([]byte(req.Body)))
	if err != nil {
		return fail(err)
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	for k, v := range c.headers {
		hr.Header.Set(k, v)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.g.MaxResponseBytes)+1))
	rec.RecvBytes = len(body)
	if err != nil {
		return fail(err)
	}
	if len(body) > c.g.MaxResponseBytes {
		return fail(fmt.Errorf("response body is over the %d-byte cap", c.g.MaxResponseBytes))
	}
	out := Response{Status: resp.StatusCode, Body: string(body), Headers: map[string]string{}}
	for k := range resp.Header {
		out.Headers[k] = resp.Header.Get(k)
	}
	rec.Ms = float64(time.Since(t0).Microseconds()) / 1000
	return out, rec, nil
}

// count charges one request to the episode and the rate limit.
func (c *Client) count(episodeID string) *DeniedError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g.PerEpisode > 0 && c.episodes[episodeID] >= c.g.PerEpisode {
		return &DeniedError{"requests_per_episode", fmt.Sprintf("this episode has made its %d requests", c.g.PerEpisode)}
	}
	if c.limiter != nil && !c.limiter.Allow() {
		return &DeniedError{"requests_per_second", fmt.Sprintf("over %g requests per second", c.g.PerSecond)}
	}
	c.episodes[episodeID]++
	return nil
}

// EndEpisode forgets an episode's count.
func (c *Client) EndEpisode(episodeID string) {
	c.mu.Lock()
	delete(c.episodes, episodeID)
	c.mu.Unlock()
}
