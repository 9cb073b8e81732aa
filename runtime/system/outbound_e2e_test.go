package system_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/outbound"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// An agent with the example search tool (plugins/examples/go-websearch) granted one request per episode to a
// local stub: the first search reaches it (with the injected header), the second is denied with a clear error
// result, and both are in the trajectory's provenance and metrics.
func TestOutboundHTTPToolEpisode(t *testing.T) {
	var gotKey atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.Header.Get("X-Api-Key"))
		io.WriteString(w, "top hit for "+r.URL.Query().Get("q")+" ["+r.Header.Get("X-Api-Key")+"]")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("STUB_KEY", "k-123")
	call := func(q string) string {
		b, _ := json.Marshal(map[string]any{"name": "search", "arguments": map[string]string{"query": q}})
		return "<tool_call>\n" + string(b) + "\n</tool_call>"
	}
	line, _ := json.Marshal(map[string]any{"key": "web", "replies": []string{call("agentrt"), call("again"), "Done."}})
	script, err := emulator.ParseScript(strings.NewReader(string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	wasmPath, _ := filepath.Abs("../../plugins/examples/go-websearch/websearch.wasm")
	ac := config.DefaultAgent()
	ac.Name = "web"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	ac.Tools = []config.Plugin{{Plugin: wasmPath, Config: map[string]any{"endpoint": srv.URL + "/search"},
		HTTP: &outbound.Grant{Hosts: []string{srv.URL}, PerEpisode: 1, Headers: map[string]string{"X-Api-Key": "$STUB_KEY"}}}}
	h := newPythonHarness(t, ec, ac, emulator.WithScript(script))
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	tr := h.runLabeled(t, "web", "[script:web] Search.", "")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	results := toolMessages(t, tr)
	// The service got the injected key and echoed it; the model reads it redacted (issue 27).
	if k, _ := gotKey.Load().(string); k != "k-123" {
		t.Fatalf("the service got X-Api-Key %q, want the injected k-123", k)
	}
	if len(results) != 2 || results[0] != "top hit for agentrt ["+outbound.Redacted+"]" || !strings.HasPrefix(results[1], "Error") ||
		!strings.Contains(results[1], "requests_per_episode") {
		t.Fatalf("tool results %q: want the stub's answer, then the per-episode denial", results)
	}
	calls, _ := tr.Provenance[runtime.ProvOutboundHTTP].([]runtime.OutboundCall)
	if len(calls) != 2 || calls[0].Tool != "search" || calls[0].Status != 200 || calls[0].RecvBytes <= len("top hit for agentrt [k-123]") || calls[1].Denied != "requests_per_episode" {
		t.Errorf("provenance %+v", tr.Provenance[runtime.ProvOutboundHTTP])
	}
	if tr.Metrics["outbound_http.requests"] != 2 || tr.Metrics["outbound_http.denied"] != 1 {
		t.Errorf("metrics %v", tr.Metrics)
	}
	// A second episode has its own count.
	if tr2 := h.runLabeled(t, "web2", "[script:web] Search.", ""); toolMessages(t, tr2)[0] != results[0] {
		t.Errorf("second episode: %q", toolMessages(t, tr2))
	}
}

// A granted request may use the grant's whole timeout: the entry sets no timeout of its own, the service answers
// after 2.5 s (past the plugin host's 2 s default call limit, which used to cut every granted request short), and
// the model reads the answer (issue 27).
func TestOutboundHTTPGrantTimeoutIsCovered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a slow service, not a wait of the test's
		case <-time.After(2500 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "slow hit for "+r.URL.Query().Get("q"))
	}))
	t.Cleanup(srv.Close)
	b, _ := json.Marshal(map[string]any{"name": "search", "arguments": map[string]string{"query": "patience"}})
	line, _ := json.Marshal(map[string]any{"key": "slow", "replies": []string{"<tool_call>\n" + string(b) + "\n</tool_call>", "Done."}})
	script, err := emulator.ParseScript(strings.NewReader(string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	wasmPath, _ := filepath.Abs("../../plugins/examples/go-websearch/websearch.wasm")
	ac := config.DefaultAgent()
	ac.Name = "slow"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	ac.Tools = []config.Plugin{{Plugin: wasmPath, Config: map[string]any{"endpoint": srv.URL + "/search"},
		HTTP: &outbound.Grant{Hosts: []string{srv.URL}, Timeout: 30 * time.Second}}}
	h := newPythonHarness(t, ec, ac, emulator.WithScript(script))
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	tr := h.runLabeled(t, "slow", "[script:slow] Search slowly.", "")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if results := toolMessages(t, tr); len(results) != 1 || results[0] != "slow hit for patience" {
		t.Fatalf("tool results %q: want the slow service's answer", results)
	}
}

// The web-agent example's runtime.toml decodes strictly: a granted search tool and an MCP server.
func TestWebAgentExampleConfig(t *testing.T) {
	t.Setenv("SEARCH_KEY", "demo")
	t.Setenv("AGENTRT_MCP_PYTHON", "/opt/venv/bin/python")
	cfg, err := config.Load("../../examples/web-agent/runtime.toml")
	if err != nil {
		t.Fatal(err)
	}
	tools := cfg.Agents[0].Tools
	if len(tools) != 2 || tools[0].HTTP == nil || tools[0].HTTP.PerEpisode != 5 || tools[0].HTTP.Headers["X-Api-Key"] != "$SEARCH_KEY" ||
		tools[1].MCP == nil || tools[1].MCP.Command[0] != "/opt/venv/bin/python" || tools[1].MCP.MaxCalls != 10 {
		t.Errorf("tools %+v", tools)
	}
}
