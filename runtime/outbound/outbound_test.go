package outbound

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// stub is a local search service: it echoes what it received, redirects, or never answers.
func stub(t *testing.T) *httptest.Server {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/search":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Result", "1")
			io.WriteString(w, r.Method+" q="+r.URL.Query().Get("q")+" auth="+r.Header.Get("Authorization")+" body="+string(body))
		case "/big":
			w.Write(make([]byte, 2048))
		case "/redirect":
			http.Redirect(w, r, "https://elsewhere.example.com/", http.StatusFound)
		case "/hang":
			<-block
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	return srv
}

func newClient(t *testing.T, g Grant) *Client {
	t.Helper()
	c, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func denied(t *testing.T, err error, rule string) {
	t.Helper()
	var d *DeniedError
	if !errors.As(err, &d) || d.Rule != rule {
		t.Errorf("err = %v, want a denial by %s", err, rule)
	}
}

func TestAllowedRequestInjectsHeadersAndRecords(t *testing.T) {
	srv := stub(t)
	t.Setenv("SEARCH_TOKEN", "Bearer s3cret")
	c := newClient(t, Grant{Hosts: []string{srv.URL}, Methods: []string{"get", "POST"}, Headers: map[string]string{"authorization": "$SEARCH_TOKEN"}})
	resp, rec, err := c.Do(context.Background(), "e1", Request{Method: "POST", URL: srv.URL + "/search?q=wasm",
		Headers: map[string]string{"Authorization": "guest tries its own"}, Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// The stub echoes the injected header: the service got it, the guest gets it redacted.
	if resp.Status != 200 || resp.Body != "POST q=wasm auth="+Redacted+" body=x" || resp.Headers["X-Result"] != "1" {
		t.Errorf("response = %+v", resp)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	// Received bytes count the headers too ("Name: value\r\n" each) and the body as the service sent it.
	headers := 0
	for k, v := range resp.Headers {
		headers += len(k) + len(v) + 4
	}
	if rec.Host != host || rec.Status != 200 || rec.SentBytes != 1 || rec.RecvBytes != headers+len("POST q=wasm auth=Bearer s3cret body=x") || rec.Denied != "" || rec.Error != "" {
		t.Errorf("record = %+v", rec)
	}
}

func TestDenials(t *testing.T) {
	srv := stub(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := newClient(t, Grant{Hosts: []string{srv.URL, "*.example.com", "https://api.search.dev:*"}, MaxRequestBytes: 4})
	for _, tt := range []struct {
		req  Request
		rule string
	}{
		{Request{URL: "http://127.0.0.2:" + port + "/search"}, "hosts"},
		{Request{URL: "http://localhost:" + port + "/search"}, "hosts"}, // names are matched, not addresses
		{Request{URL: "https://example.com/"}, "hosts"},                 // *.x is subdomains only
		{Request{URL: "http://a.example.com/"}, "hosts"},                // https by default
		{Request{URL: "https://a.example.com:8443/"}, "hosts"},          // the default port by default
		{Request{URL: "ftp://a.example.com/"}, "hosts"},
		{Request{URL: "https://user:pw@a.example.com/"}, "hosts"},
		{Request{URL: "::bad"}, "hosts"},
		{Request{Method: "DELETE", URL: srv.URL + "/search"}, "methods"},
		{Request{Method: "GET", URL: srv.URL + "/search", Body: "12345"}, "max_request_bytes"},
	} {
		_, rec, err := c.Do(context.Background(), "e1", tt.req)
		denied(t, err, tt.rule)
		if rec.Denied != tt.rule {
			t.Errorf("%+v: record %+v, want denied by %s", tt.req, rec, tt.rule)
		}
	}
	for _, u := range []string{"https://a.example.com/", "https://x.y.example.com/", "https://api.search.dev:9000/"} {
		if d := c.check("GET", mustURL(t, u)); d != nil {
			t.Errorf("%s: %v, want allowed", u, d)
		}
	}
}

func TestLimits(t *testing.T) {
	srv := stub(t)
	c := newClient(t, Grant{Hosts: []string{srv.URL}, PerEpisode: 2, MaxResponseBytes: 1024})
	for range 2 {
		if _, _, err := c.Do(context.Background(), "e1", Request{URL: srv.URL + "/search"}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.Do(context.Background(), "e1", Request{URL: srv.URL + "/search"})
	denied(t, err, "requests_per_episode")
	if _, _, err := c.Do(context.Background(), "e2", Request{URL: srv.URL + "/search"}); err != nil {
		t.Errorf("another episode: %v", err)
	}
	c.EndEpisode("e1")
	if _, _, err := c.Do(context.Background(), "e1", Request{URL: srv.URL + "/search"}); err != nil {
		t.Errorf("after EndEpisode: %v", err)
	}
	if _, rec, err := c.Do(context.Background(), "e3", Request{URL: srv.URL + "/big"}); err == nil || !strings.Contains(err.Error(), "1024-byte cap") || rec.Status != 200 {
		t.Errorf("big response: %v %+v, want the cap's error", err, rec)
	}

	// A rate this low refills nothing during the test: the burst of one is all there is.
	slow := newClient(t, Grant{Hosts: []string{srv.URL}, PerSecond: 0.001})
	if _, _, err := slow.Do(context.Background(), "e1", Request{URL: srv.URL + "/search"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = slow.Do(context.Background(), "e2", Request{URL: srv.URL + "/search"})
	denied(t, err, "requests_per_second")
}

func TestTimeoutAndRedirect(t *testing.T) {
	srv := stub(t)
	c := newClient(t, Grant{Hosts: []string{srv.URL}, Timeout: 50 * time.Millisecond})
	// The handler never answers, so the timeout is the only way out.
	_, rec, err := c.Do(context.Background(), "e1", Request{URL: srv.URL + "/hang"})
	if err == nil || rec.Error == "" {
		t.Errorf("hanging server: err %v, record %+v", err, rec)
	}
	resp, _, err := c.Do(context.Background(), "e1", Request{URL: srv.URL + "/redirect"})
	if err != nil || resp.Status != http.StatusFound || resp.Headers["Location"] != "https://elsewhere.example.com/" {
		t.Errorf("redirect: %+v %v, want the 302 itself (not followed)", resp, err)
	}
}

func TestNewRejectsBadGrants(t *testing.T) {
	for _, tt := range []struct {
		g    Grant
		want string
	}{
		{Grant{Headers: map[string]string{"Authorization": "Bearer literal"}}, "must name an environment variable"},
		{Grant{Headers: map[string]string{"Authorization": "$AGENTRT_SURELY_UNSET_VAR"}}, "is not set"},
		{Grant{Hosts: []string{"ftp://x"}}, "scheme must be http or https"},
		{Grant{Hosts: []string{"x.com/path"}}, "no path"},
		{Grant{Hosts: []string{"a.*.com"}}, "leading"},
		{Grant{PerEpisode: -1}, ">= 0"},
	} {
		if _, err := New(tt.g); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.g, err, tt.want)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
