package system

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/envtool"
)

// An environment service shows in the agent's start-up log, with its limits; only narrows its tools, and a name
// the service lacks is a start-up error.
func TestOpenEnvLogsAndFilters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tools" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"tools": [{"name": "click", "parameters": {"type": "object"}}, {"name": "type_text"}]}`))
	}))
	defer srv.Close()
	var buf bytes.Buffer
	env := BuildEnv{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	pc := config.Plugin{Env: &envtool.Config{URL: srv.URL, MaxConcurrent: 8, CreatesPerSecond: 2}, Only: []string{"click"}}
	tb, specs, err := openTool(context.Background(), pc, config.Agent{ToolTimeout: 5 * time.Second}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Tool.(envAdapter).Close(context.Background())
	if len(specs) != 1 || specs[0].Name != "click" || len(tb.Specs) != 1 || tb.Plugin != "env:"+srv.URL {
		t.Errorf("binding %+v, specs %+v: want click only", tb, specs)
	}
	if _, ok := tb.Tool.(runtime.EpisodeEnv); !ok {
		t.Errorf("the binding's tool %T is not an EpisodeEnv", tb.Tool)
	}
	log := buf.String()
	for _, want := range []string{"environment service configured", "service=env:" + srv.URL, "tools=1", "max_concurrent=8", "creates_per_second=2", "retries=3", "call_timeout=5s"} {
		if !strings.Contains(log, want) {
			t.Errorf("start-up log %q lacks %q", log, want)
		}
	}
	pc.Only = []string{"scroll"}
	if _, _, err := openTool(context.Background(), pc, config.Agent{ToolTimeout: 5 * time.Second}, env, nil); err == nil || !strings.Contains(err.Error(), `no tool "scroll"`) {
		t.Errorf("only naming a missing tool: %v", err)
	}
}
