// Package outbound is the policy side of outbound HTTP as a granted capability (issue 14): a Grant says which
// URLs a plugin may reach (hosts with ports and schemes, methods), with what limits (per-call timeout, response
// cap, requests per episode and per second) and which headers the runtime injects from environment variables
// (secrets the guest never sees: their values are redacted from what comes back). A Client enforces a grant: a
// denied request is a *DeniedError naming the rule, never a request on the wire; every request, allowed or
// denied, yields a Record (host, status, bytes, ms) for metrics and provenance. Redirects are not followed: each
// hop would otherwise escape the host check. No proxy is used (the environment's HTTP_PROXY would see the
// secrets and reach hosts outside the grant), and every connection's address is checked when it is dialed: a
// granted name that resolves to a loopback, private, link-local or otherwise internal address is refused unless
// the grant names that address or opts in.
package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentrt/agentrt/runtime/outbound/audit"
)

// Grant is one plugin's outbound HTTP permission. The zero Grant allows nothing.
type Grant struct {
	// Hosts are the allowed destinations: "api.example.com" (https, port 443), "*.example.com" (any subdomain,
	// not the apex), "http://127.0.0.1:8080" (scheme and port explicit), "https://search.internal:*" (any port).
	Hosts []string `toml:"hosts"`
	// Methods are the allowed HTTP methods (default: GET).
	Methods []string `toml:"methods"`
	// Timeout bounds each request, body included (default 10 s). The plugin's call limit covers it (runtime
	// config: an entry's timeout shorter than its grant's is refused).
	Timeout time.Duration `toml:"timeout"`
	// MaxRequestBytes caps the request body (default 64 KiB); MaxResponseBytes caps the response, its headers
	// and body together (default 1 MiB). A larger response is an error, not a silent truncation.
	MaxRequestBytes  int `toml:"max_request_bytes"`
	MaxResponseBytes int `toml:"max_response_bytes"`
	// PerEpisode caps the requests of one episode (0: no cap); PerSecond caps the plugin's rate over all
	// episodes (0: no cap; bursts up to max(1, PerSecond)).
	PerEpisode int     `toml:"requests_per_episode"`
	PerSecond  float64 `toml:"requests_per_second"`
	// Headers are set on every request, values from environment variables: {"Authorization" = "$SEARCH_TOKEN"}.
	// The guest can neither read nor override them, and their values are redacted from the response it gets.
	Headers map[string]string `toml:"headers"`
	// AllowPrivateAddresses lets granted names resolve to loopback, private, link-local, CGNAT, unspecified or
	// multicast addresses (internal services). Off, such an address is only dialed when the grant names it
	// literally ("http://127.0.0.1:8080").
	AllowPrivateAddresses bool `toml:"allow_private_addresses"`
}

// Defaults of a Grant's zero fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxRequestBytes  = 64 << 10
	DefaultMaxResponseBytes = 1 << 20
)

// RequestTimeout is the grant's per-request timeout, its default applied.
func (g Grant) RequestTimeout() time.Duration {
	if g.Timeout <= 0 {
		return DefaultTimeout
	}
	return g.Timeout
}

// Redacted replaces every injected header value found in a response's headers and body.
const Redacted = "[REDACTED]"

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

// Record is one request's audit line (package audit, which the episode loop reads without reaching this client).
type Record = audit.Record

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
	g        Grant
	rules    []hostRule
	literals []netip.Addr      // addresses the hosts name literally: dialed whatever their class
	headers  map[string]string // resolved from the environment at New
	secrets  [][]byte          // the injected values and their encodings, longest first, for redaction
	limiter  *rate.Limiter
	http     *http.Client

	mu       sync.Mutex
	episodes map[string]int
}

// New checks the grant and resolves its headers; a header naming an unset environment variable is an error (a
// missing secret found at start, not at the first call).
func New(g Grant) (*Client, error) {
	g.Methods = slices.Clone(g.Methods)
	if len(g.Methods) == 0 {
		g.Methods = []string{"GET"}
	}
	for i, m := range g.Methods {
		g.Methods[i] = strings.ToUpper(m)
	}
	g.Timeout = g.RequestTimeout()
	if g.MaxRequestBytes <= 0 {
		g.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if g.MaxResponseBytes <= 0 {
		g.MaxResponseBytes = DefaultMaxResponseBytes
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
		if ip, err := netip.ParseAddr(r.host); err == nil {
			c.literals = append(c.literals, ip.Unmap())
		}
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
		c.secrets = append(c.secrets, secretForms(val)...)
	}
	sort.Slice(c.secrets, func(i, j int) bool { return len(c.secrets[i]) > len(c.secrets[j]) })
	if g.PerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(g.PerSecond), max(1, int(math.Ceil(g.PerSecond))))
	}
	dialer := &net.Dialer{Timeout: g.Timeout, KeepAlive: 30 * time.Second, Control: c.checkAddress}
	c.http = &http.Client{
		Timeout: g.Timeout,
		Transport: &http.Transport{
			Proxy:                  nil, // never HTTP_PROXY: a proxy would get the secrets and reach any host
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    g.Timeout,
			MaxIdleConns:           16,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: int64(g.MaxResponseBytes),
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// secretForms are the spellings of an injected value that a service echoing it would write: the value, its
// credential after an auth scheme ("Bearer TOKEN"), each also JSON-escaped and URL-encoded.
func secretForms(val string) [][]byte {
	vals := []string{val}
	if _, cred, ok := strings.Cut(val, " "); ok && strings.TrimSpace(cred) != "" {
		vals = append(vals, strings.TrimSpace(cred))
	}
	var out [][]byte
	add := func(s string) {
		if s != "" && !slices.ContainsFunc(out, func(b []byte) bool { return string(b) == s }) {
			out = append(out, []byte(s))
		}
	}
	for _, v := range vals {
		add(v)
		j, _ := json.Marshal(v)
		add(string(j[1 : len(j)-1]))
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
	}
	return out
}

// redact replaces every form of every injected value in b.
func (c *Client) redact(b []byte) []byte {
	for _, s := range c.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	return b
}

// checkAddress runs when a connection is dialed, on the resolved address: a granted name may not lead to an
// internal address (loopback, a private network, cloud metadata at 169.254.169.254, ...) unless the grant names
// that address literally or allows private addresses.
func (c *Client) checkAddress(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{"addresses", fmt.Sprintf("cannot check the dialed address %q: %v", address, err)}
	}
	ip := ap.Addr().Unmap()
	if c.g.AllowPrivateAddresses || slices.Contains(c.literals, ip) {
		return nil
	}
	if class := internalClass(ip); class != "" {
		return &DeniedError{"addresses", fmt.Sprintf("the host resolved to %s, a %s address, which the grant does not name (name it in hosts, or set allow_private_addresses = true)", ip, class)}
	}
	return nil
}

var (
	cgnat      = netip.MustParsePrefix("100.64.0.0/10")
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")
	broadcast  = netip.MustParseAddr("255.255.255.255")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	v4Compat   = netip.MustParsePrefix("::/96")
	reserved4  = netip.MustParsePrefix("240.0.0.0/4")
	benchmark4 = netip.MustParsePrefix("198.18.0.0/15")
)

// internalClass names the kind of internal address ip is ("" for a public one). IPv6 addresses that embed an
// IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged by it.
func internalClass(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		b := ip.As16()
		var embedded netip.Addr
		switch {
		case nat64.Contains(ip), v4Compat.Contains(ip) && !ip.IsUnspecified() && !ip.IsLoopback():
			embedded = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if embedded.IsValid() {
			if class := internalClass(embedded); class != "" {
				return class + " (embedded in IPv6)"
			}
		}
	}
	switch {
	case ip.IsUnspecified() || thisNet.Contains(ip):
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast() || ip == broadcast:
		return "multicast or broadcast"
	case cgnat.Contains(ip):
		return "shared (CGNAT)"
	case reserved4.Contains(ip) || benchmark4.Contains(ip):
		return "reserved"
	}
	return ""
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
// included). Injected headers replace any the guest set under the same name, and every form of their values is
// replaced by Redacted in the response's headers and body. The guest's Accept-Encoding is dropped: the client
// negotiates compression itself and hands back the decoded body, so the cap and the redaction see what the
// guest gets.
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
			err = d // the wire's wrapping (url.Error, net.OpError) adds nothing the rule does not say
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
		if http.CanonicalHeaderKey(k) != "Accept-Encoding" {
			hr.Header.Set(k, v)
		}
	}
	for k, v := range c.headers {
		hr.Header.Set(k, v)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		var d *DeniedError
		if errors.As(err, &d) && d.Rule == "addresses" {
			return fail(&DeniedError{d.Rule, u.Hostname() + ": " + d.Msg})
		}
		if strings.Contains(err.Error(), "server response headers exceeded") {
			return fail(fmt.Errorf("response headers are over the %d-byte cap (max_response_bytes counts headers and body)", c.g.MaxResponseBytes))
		}
		return fail(err)
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	headerBytes := 0
	for k, vs := range resp.Header {
		for _, v := range vs {
			headerBytes += len(k) + len(v) + 4 // "Name: value\r\n"
		}
	}
	room := c.g.MaxResponseBytes - headerBytes
	if room < 0 {
		rec.RecvBytes = headerBytes
		return fail(fmt.Errorf("response headers of %d bytes are over the %d-byte cap (max_response_bytes counts headers and body)", headerBytes, c.g.MaxResponseBytes))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(room)+1))
	rec.RecvBytes = headerBytes + len(body)
	if err != nil {
		return fail(err)
	}
	if len(body) > room {
		return fail(fmt.Errorf("response is over the %d-byte cap (max_response_bytes counts headers and body: %d bytes of headers)", c.g.MaxResponseBytes, headerBytes))
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !resp.Uncompressed && len(c.secrets) > 0 {
		return fail(fmt.Errorf("response body is encoded (Content-Encoding: %s), so it cannot be checked for the injected headers' values", enc))
	}
	out := Response{Status: resp.StatusCode, Body: string(c.redact(body)), Headers: map[string]string{}}
	for k := range resp.Header {
		out.Headers[string(c.redact([]byte(k)))] = string(c.redact([]byte(resp.Header.Get(k))))
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
