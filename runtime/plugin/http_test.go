package plugin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/runtime/outbound"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// The Go SDK's example search tool (plugins/examples/go-websearch, plugins/sdk/go/fetch) against a local stub
// search service, through agentrt_v1.http_request: granted, denied, no grant, the per-episode cap, the injected
// header the guest never sees, and every request recorded.
func TestOutboundHTTPWebSearch(t *testing.T) {
	var mu sync.Mutex
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = r.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "results for "+r.URL.Query().Get("q")+" (auth "+r.Header.Get("Authorization")+")")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("SEARCH_TOKEN", "Bearer s3cret")
	h := newHost(t)
	wasmBytes := repoFile(t, "plugins/examples/go-websearch/websearch.wasm")
	cfg, _ := json.Marshal(map[string]string{"endpoint": srv.URL + "/search"})
	tool := func(grant *outbound.Grant) *plugin.Tool {
		m := load(t, h, plugin.Spec{Name: "websearch.wasm", Wasm: wasmBytes, PoolSize: 1, Config: cfg,
			Grants: plugin.Grants{HTTP: grant}})
		tl, err := m.Tool()
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	var recs []outbound.Record
	ctx := plugin.WithEpisode(context.Background(), "e1", func(r outbound.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	search := func(tl *plugin.Tool, q string) (string, bool) {
		t.Helper()
		r, err := tl.Call(ctx, "search", json.RawMessage(`{"query":"`+q+`"}`))
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		return r.Text, r.IsError
	}

	granted := tool(&outbound.Grant{Hosts: []string{srv.URL}, PerEpisode: 2, Headers: map[string]string{"Authorization": "$SEARCH_TOKEN"}})
	// The service got the injected header; its echo reaches the guest redacted.
	if text, isErr := search(granted, "wasm runtimes"); isErr || text != "results for wasm runtimes (auth "+outbound.Redacted+")" {
		t.Errorf("granted search = %q (error %v)", text, isErr)
	}
	mu.Lock()
	if gotAuth != "Bearer s3cret" {
		t.Errorf("the service got Authorization %q, want the injected one", gotAuth)
	}
	mu.Unlock()
	search(granted, "second")
	if text, isErr := search(granted, "third"); !isErr || !strings.Contains(text, "denied") || !strings.Contains(text, "requests_per_episode") {
		t.Errorf("third search in the episode = %q, want the per-episode denial", text)
	}
	if len(recs) != 3 || recs[0].Status != 200 || recs[0].Host != strings.TrimPrefix(srv.URL, "http://") || recs[0].RecvBytes == 0 || recs[2].Denied != "requests_per_episode" {
		t.Errorf("records %+v", recs)
	}

	otherHost := tool(&outbound.Grant{Hosts: []string{"search.example.com"}})
	if text, isErr := search(otherHost, "x"); !isErr || !strings.Contains(text, "not in the granted hosts") {
		t.Errorf("search to a host outside the grant = %q, want the denial", text)
	}
	none := tool(nil)
	if text, isErr := search(none, "x"); !isErr || !strings.Contains(text, "not granted to this plugin") {
		t.Errorf("search without a grant = %q, want the denial", text)
	}
	if _, err := h.Load(context.Background(), plugin.Spec{Name: "websearch.wasm", Wasm: wasmBytes, Config: cfg,
		Grants: plugin.Grants{HTTP: &outbound.Grant{Headers: map[string]string{"X-Key": "$AGENTRT_SURELY_UNSET"}}}}); err == nil || !strings.Contains(err.Error(), "AGENTRT_SURELY_UNSET is not set") {
		t.Errorf("load with a header from an unset variable = %v, want a load error naming it", err)
	}
}

// BenchmarkOutboundHTTPSearch is one sandboxed websearch tool call that makes one granted GET to a loopback stub:
// the host function's overhead on top of a plain Wasm tool call (bench/results/outbound.md).
func BenchmarkOutboundHTTPSearch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hit") }))
	defer srv.Close()
	h := newHost(b)
	cfg, _ := json.Marshal(map[string]string{"endpoint": srv.URL + "/search"})
	m := load(b, h, plugin.Spec{Name: "websearch.wasm", Wasm: repoFile(b, "plugins/examples/go-websearch/websearch.wasm"), PoolSize: 1,
		Config: cfg, Grants: plugin.Grants{HTTP: &outbound.Grant{Hosts: []string{srv.URL}}}})
	tl, err := m.Tool()
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"query":"q"}`)
	for b.Loop() {
		if r, err := tl.Call(context.Background(), "search", args); err != nil || r.IsError {
			b.Fatal(err, r.Text)
		}
	}
}

// BenchmarkOutboundHTTPDirect is the same GET made from Go through the grant, without Wasm: the baseline that
// BenchmarkOutboundHTTPSearch adds the guest, the host function and JSON envelopes to.
func BenchmarkOutboundHTTPDirect(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hit") }))
	defer srv.Close()
	c, err := outbound.New(outbound.Grant{Hosts: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := c.Do(context.Background(), "", outbound.Request{URL: srv.URL + "/search?q=q"}); err != nil {
			b.Fatal(err)
		}
	}
}
