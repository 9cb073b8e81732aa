package outbound

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// The adversarial probes of issue 27, as a hostile guest or service would run them against a grant. Each test
// says what it tried and what the guest gets.

// counting is a local service that counts the requests that reached it.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func wantNoSecret(t *testing.T, what string, resp Response, secrets ...string) {
	t.Helper()
	all, _ := json.Marshal(resp)
	for _, s := range secrets {
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("%s: the guest sees %q: %s", what, s, all)
		}
	}
}

// A granted service that echoes what it received (headers in the body as JSON, in response headers, URL-encoded,
// split across chunks, gzip-compressed) never hands the injected value back to the guest: each form is redacted.
func TestInjectedSecretsAreRedacted(t *testing.T) {
	const key, token = "k-9f8e7d6c5b4a", "tok+en/with=chars&more"
	t.Setenv("ECHO_KEY", key)
	t.Setenv("ECHO_TOKEN", "Bearer "+token)
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Api-Key")
		switch r.URL.Path {
		case "/json": // httpbin's /headers
			w.Header().Set("X-Echo", got)
			w.Header().Set("X-Echo-"+got, "1")
			json.NewEncoder(w).Encode(map[string]any{"headers": r.Header})
		case "/split": // the key split across two flushed writes, so the client reads it in two pieces
			io.WriteString(w, "key="+got[:5])
			w.(http.Flusher).Flush()
			io.WriteString(w, got[5:]+" done")
		case "/encoded":
			io.WriteString(w, "q="+r.URL.Query().Get("x")+" url="+strings.ReplaceAll(r.Header.Get("Authorization"), " ", "+")+
				" path="+strings.ReplaceAll(strings.ReplaceAll(token, "/", "%2F"), "&", "%26")+" bare="+token)
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "compressed "+got)
			zw.Close()
		case "/brotli": // an encoding the client did not ask for and cannot read
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, "opaque "+got)
		}
	})
	c := newClient(t, Grant{Hosts: []string{srv.URL}, Headers: map[string]string{"X-Api-Key": "$ECHO_KEY", "Authorization": "$ECHO_TOKEN"}})
	for _, path := range []string{"/json", "/split", "/encoded"} {
		resp, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + path})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		wantNoSecret(t, path, resp, key, token, strings.ReplaceAll(token, "/", "%2F"), strings.ReplaceAll(token, "+", "%2B"))
		if !strings.Contains(resp.Body+fmt.Sprint(resp.Headers), Redacted) {
			t.Errorf("%s: nothing redacted in %+v", path, resp)
		}
	}
	// The guest asks for gzip itself, hoping to get the compressed bytes and decode the key in its sandbox: the
	// client drops its Accept-Encoding, negotiates gzip on its own and hands back the decoded, redacted body.
	resp, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/gzip", Headers: map[string]string{"Accept-Encoding": "gzip"}})
	if err != nil || resp.Body != "compressed "+Redacted {
		t.Errorf("gzip: %+v %v", resp, err)
	}
	if _, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/brotli"}); err == nil || !strings.Contains(err.Error(), "cannot be checked") {
		t.Errorf("an unrequested encoding with secrets injected: %v, want an error", err)
	}
}

// With HTTP_PROXY and HTTPS_PROXY set in agentrt's environment, granted requests still go straight to the granted
// host: the proxy (which would get the injected secret and could reach any host) sees nothing. The environment's
// proxy is read once per process, so the request runs in a child process with the variables set.
func TestNoProxyFromEnvironment(t *testing.T) {
	if os.Getenv("OUTBOUND_PROXY_CHILD") == "1" {
		t.Setenv("PROXY_SECRET", "s3cret")
		c := newClient(t, Grant{Hosts: []string{"http://granted.invalid", "granted.invalid"}, Headers: map[string]string{"X-Api-Key": "$PROXY_SECRET"}})
		for _, u := range []string{"http://granted.invalid/x", "https://granted.invalid/x"} {
			_, _, err := c.Do(context.Background(), "e", Request{URL: u})
			fmt.Printf("RESULT %s %v\n", u, err)
		}
		return
	}
	proxy, hits := counting(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "proxied") })
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoProxyFromEnvironment$", "-test.v")
	cmd.Env = append(os.Environ(), "OUTBOUND_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "HTTPS_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "https_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the environment's proxy got %d requests:\n%s", n, out)
	}
	// The requests went to the granted name itself (which does not resolve here), not through the proxy.
	if strings.Count(string(out), "RESULT ") != 2 || strings.Contains(string(out), "<nil>") {
		t.Fatalf("child output:\n%s", out)
	}
}

// Headers count toward max_response_bytes: a service that answers 5 MB of headers and a tiny body gets an error
// (the client stops reading headers at the cap), and so does one whose headers and body together pass the cap
// though each fits alone. The record counts what was received.
func TestHeadersCountTowardTheCap(t *testing.T) {
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/5mb-headers":
			v := strings.Repeat("h", 8000)
			for i := range 640 {
				w.Header().Set(fmt.Sprintf("X-H%d", i), v)
			}
			io.WriteString(w, "small")
		case "/half-and-half":
			w.Header().Set("X-Big", strings.Repeat("h", 600))
			w.Write(make([]byte, 600))
		case "/fits":
			w.Header().Set("X-Small", "1")
			w.Write(make([]byte, 100))
		}
	})
	c := newClient(t, Grant{Hosts: []string{srv.URL}, MaxResponseBytes: 1024})
	_, rec, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/5mb-headers"})
	if err == nil || !strings.Contains(err.Error(), "1024-byte cap") || rec.Error == "" {
		t.Errorf("5 MB of headers: %v %+v, want the cap's error", err, rec)
	}
	_, rec, err = c.Do(context.Background(), "e", Request{URL: srv.URL + "/half-and-half"})
	if err == nil || !strings.Contains(err.Error(), "headers and body") || rec.RecvBytes <= 1024 {
		t.Errorf("600 bytes of headers + 600 of body: %v %+v, want the cap's error", err, rec)
	}
	resp, rec, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/fits"})
	if err != nil || len(resp.Body) != 100 || rec.RecvBytes <= 100 {
		t.Errorf("a response within the cap: %v %+v", err, rec)
	}
}

// A granted name that resolves to loopback is refused when the connection is dialed, unless the grant opts in;
// the request never reaches the service. A grant naming the address literally reaches it.
func TestResolvedAddressesAreChecked(t *testing.T) {
	srv, hits := counting(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "internal") })
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	byName := "http://localhost:" + port
	c := newClient(t, Grant{Hosts: []string{byName}})
	_, rec, err := c.Do(context.Background(), "e", Request{URL: byName + "/"})
	denied(t, err, "addresses")
	if rec.Denied != "addresses" || hits.Load() != 0 || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("localhost: %v %+v (%d requests reached the service)", err, rec, hits.Load())
	}
	optIn := newClient(t, Grant{Hosts: []string{byName}, AllowPrivateAddresses: true})
	if resp, _, err := optIn.Do(context.Background(), "e", Request{URL: byName + "/"}); err != nil || resp.Body != "internal" {
		t.Fatalf("localhost with allow_private_addresses: %+v %v", resp, err)
	}
	literal := newClient(t, Grant{Hosts: []string{srv.URL}})
	if resp, _, err := literal.Do(context.Background(), "e", Request{URL: srv.URL + "/"}); err != nil || resp.Body != "internal" {
		t.Fatalf("a literally granted loopback address: %+v %v", resp, err)
	}
}

func TestInternalClass(t *testing.T) {
	for addr, want := range map[string]string{
		"169.254.169.254":        "link-local", // cloud metadata
		"127.0.0.1":              "loopback",
		"127.8.9.10":             "loopback",
		"10.1.2.3":               "private",
		"172.16.0.1":             "private",
		"192.168.1.1":            "private",
		"100.64.0.1":             "shared (CGNAT)",
		"0.0.0.0":                "unspecified",
		"0.1.2.3":                "unspecified",
		"224.0.0.1":              "multicast or broadcast",
		"255.255.255.255":        "multicast or broadcast",
		"::1":                    "loopback",
		"::":                     "unspecified",
		"fe80::1":                "link-local",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"ff02::1":                "multicast or broadcast",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:169.254.169.254": "link-local",
		"64:ff9b::a9fe:a9fe":     "link-local (embedded in IPv6)",
		"2002:7f00:1::":          "loopback (embedded in IPv6)",
		"::7f00:1":               "loopback (embedded in IPv6)",
		"8.8.8.8":                "",
		"93.184.216.34":          "",
		"2001:4860:4860::8888":   "",
		"64:ff9b::808:808":       "",
	} {
		if got := internalClass(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

// Held before issue 27, kept: other spellings of a granted address, user info, opaque and scheme-relative URLs
// and a Host header override are not the granted host; a header or URL with CR/LF never goes on the wire.
func TestHostSpellingsAndCRLF(t *testing.T) {
	srv, hits := counting(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Host) })
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := newClient(t, Grant{Hosts: []string{srv.URL}, Methods: []string{"GET", "POST"}})
	for _, u := range []string{
		"http://127.1:" + port + "/",
		"http://0x7f000001:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://0177.0.0.1:" + port + "/",
		"http://[::1]:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://127.0.0.1.:" + port + "/",
		"http://evil.example@127.0.0.1:" + port + "/",
		"http://127.0.0.1:" + port + "@evil.example/",
		"http:127.0.0.1:" + port,
		"//127.0.0.1:" + port + "/",
		"http://127.0.0.1:" + port + "\r\nX-Injected: 1/",
	} {
		_, rec, err := c.Do(context.Background(), "e", Request{URL: u})
		var d *DeniedError
		if !errors.As(err, &d) || rec.Denied == "" {
			t.Errorf("%q: %v %+v, want a denial", u, err, rec)
		}
	}
	// The granted host with a path that looks like another URL stays on the granted host.
	if resp, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/http://evil.example/x"}); err != nil || resp.Body != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("absolute-form path: %+v %v", resp, err)
	}
	before := hits.Load()
	for _, h := range []map[string]string{
		{"X-Note": "a\r\nX-Injected: 1"},
		{"X-Note\r\nX-Injected": "1"},
		{"X-Note": "a\nb"},
	} {
		if _, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/", Headers: h}); err == nil {
			t.Errorf("headers %q: sent", h)
		}
	}
	if hits.Load() != before {
		t.Errorf("a header with CR/LF reached the service")
	}
	// A guest's Host header does not move the request: the service sees the granted host.
	resp, _, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/", Headers: map[string]string{"Host": "evil.example"}})
	if err != nil || resp.Body != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("Host header: %+v %v", resp, err)
	}
}

// Held before issue 27, kept: a gzip bomb (100 MiB of zeros in ~100 KiB) is decoded only up to the cap.
func TestGzipBomb(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 100 {
		zw.Write(zeros)
	}
	zw.Close()
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	c := newClient(t, Grant{Hosts: []string{srv.URL}})
	_, rec, err := c.Do(context.Background(), "e", Request{URL: srv.URL + "/"})
	if err == nil || !strings.Contains(err.Error(), "cap") || rec.RecvBytes > DefaultMaxResponseBytes+1 {
		t.Errorf("gzip bomb: %v %+v, want the cap's error after at most the cap", err, rec)
	}
}
