package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/tito"
)

func TestMetricsFromTrajectories(t *testing.T) {
	m := New(Gauges{InFlight: func() float64 { return 3 }, SpoolBacklog: func() float64 { return 7 }})
	r := 1.0
	tr := &tito.Trajectory{Status: "truncated", StatusReason: "max_tool_iters", Reward: &r,
		Segments: []tito.Segment{
			{Kind: tito.KindPrompt, Length: 100},
			{Kind: tito.KindResponse, Length: 20, Info: &tito.TurnInfo{PromptTokens: 100, CachedTokens: 0, LatencyMS: 12},
				Drift: &tito.SegmentDrift{Canonical: false}},
			{Kind: tito.KindPrompt, Length: 30},
			{Kind: tito.KindResponse, Length: 10, Info: &tito.TurnInfo{PromptTokens: 150, CachedTokens: 119, LatencyMS: 8},
				Drift: &tito.SegmentDrift{Canonical: true}},
		},
		Metrics: map[string]float64{"parse_errors.malformed_json": 2, "tool_calls.ok": 3, "tool_calls.timeout": 1, "turns": 2}}
	m.EpisodeQueued(2)
	m.EpisodeFinished(tr)
	m.PluginCall("tool", "builtin:calculator", 7*time.Microsecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`agentrt_episodes_total{reason="max_tool_iters",status="truncated"} 1`,
		`agentrt_turns_total 2`,
		`agentrt_prompt_tokens_total 130`,
		`agentrt_response_tokens_total 30`,
		`agentrt_sglang_cached_tokens_total 119`,
		`agentrt_sglang_prompt_tokens_total 250`,
		`agentrt_tool_calls_total{outcome="ok"} 3`,
		`agentrt_tool_calls_total{outcome="timeout"} 1`,
		`agentrt_parse_errors_total{reason="malformed_json"} 2`,
		`agentrt_drift_segments_total{result="audited"} 2`,
		`agentrt_drift_segments_total{result="drifted"} 1`,
		`agentrt_episodes_queued 2`,
		`agentrt_episodes_in_flight 3`,
		`agentrt_spool_backlog 7`,
		`agentrt_reward_count 1`,
		`agentrt_sglang_generate_seconds_count 2`,
		`agentrt_plugin_call_seconds_count{kind="tool",plugin="builtin:calculator"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
