package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

func TestMetricsFromTrajectories(t *testing.T) {
	m := New(Gauges{InFlight: func() float64 { return 3 }, SpoolBacklog: func() float64 { return 7 },
		SGLang: func() sglang.Stats {
			return sglang.Stats{Retries: 4, Workers: []sglang.WorkerStats{
				{URL: "http://w1", InFlight: 5, Queued: 2, Limit: 8, Healthy: true, Requests: 90, Failures: 1},
				{URL: "http://w2", Limit: 8}}}
		},
		Stream: func() stream.Stats {
			return stream.Stats{Connections: 2, ActiveRequests: 3, SpoolRecords: 7, SpoolBytes: 4096, Spooled: 11, Sent: 12, Acked: 4,
				Accepted: 5, Rejected: 1, EventsDropped: 6}
		}})
	r := 1.0
	tr := &tito.Trajectory{Status: "truncated", StatusReason: "max_tool_iters", Reward: &r,
		Segments: []tito.Segment{
			{Kind: tito.KindPrompt, Length: 100},
			{Kind: tito.KindResponse, Length: 20, Info: &tito.TurnInfo{PromptTokens: 100, CachedTokens: 0, LatencyMS: 12, OverheadMS: 0.2},
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
		`agentrt_turn_overhead_seconds_count 2`,
		`agentrt_turn_overhead_seconds_bucket{le="0.00015625"} 1`,
		`agentrt_turn_overhead_seconds_bucket{le="0.000390625"} 2`,
		`agentrt_sglang_worker_in_flight{worker="http://w1"} 5`,
		`agentrt_sglang_worker_in_flight{worker="http://w2"} 0`,
		`agentrt_sglang_worker_queued{worker="http://w1"} 2`,
		`agentrt_sglang_worker_in_flight_limit{worker="http://w2"} 8`,
		`agentrt_sglang_worker_healthy{worker="http://w1"} 1`,
		`agentrt_sglang_worker_healthy{worker="http://w2"} 0`,
		`agentrt_sglang_worker_requests_total{worker="http://w1"} 90`,
		`agentrt_sglang_worker_failures_total{worker="http://w1"} 1`,
		`agentrt_sglang_retries_total 4`,
		`agentrt_stream_connections 2`,
		`agentrt_stream_active_requests 3`,
		`agentrt_spool_bytes 4096`,
		`agentrt_stream_trajectories_spooled_total 11`,
		`agentrt_stream_messages_sent_total 12`,
		`agentrt_stream_messages_acked_total 4`,
		`agentrt_stream_requests_accepted_total 5`,
		`agentrt_stream_requests_rejected_total 1`,
		`agentrt_stream_events_dropped_total 6`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsEverySample: a multi-sample episode counts the turns, tokens and drift audit of each of its samples,
// not only the last (the trajectory's own chain).
func TestMetricsEverySample(t *testing.T) {
	m := New(Gauges{})
	seg := func(drifted bool) []tito.Segment {
		return []tito.Segment{{Kind: tito.KindPrompt, Length: 100},
			{Kind: tito.KindResponse, Length: 20, Drift: &tito.SegmentDrift{Canonical: !drifted}}}
	}
	tr := &tito.Trajectory{Status: "completed", Samples: []tito.Sample{{Segments: seg(true)}, {Segments: seg(false)}},
		Segments: seg(false)}
	m.EpisodeFinished(tr)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`agentrt_turns_total 3`,
		`agentrt_prompt_tokens_total 300`,
		`agentrt_response_tokens_total 60`,
		`agentrt_drift_segments_total{result="audited"} 3`,
		`agentrt_drift_segments_total{result="drifted"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
