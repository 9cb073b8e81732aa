// Package metrics exposes the runtime's Prometheus metrics (/metrics of `agentrt serve`). It implements
// rollout.Observer from finished trajectories and reads gauges from the service, the SGLang client and the
// stream on every scrape. It is the only package that imports the Prometheus client.
package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// Gauges are read at scrape time.
type Gauges struct {
	InFlight     func() float64 // episodes running
	SpoolBacklog func() float64 // messages for trainers not yet acked (on the bus: every trainer's)
	SGLangQueued func() float64 // /generate calls waiting for a worker slot
	SGLangLimit  func() float64 // in-flight bound over all workers (sglang.adaptive moves it)
	// StaleWeightConsumers: consumers whose weight_version has not changed for server.weight_version_warn_after
	StaleWeightConsumers func() float64
	// PluginLogsDropped counts plugin log lines dropped past the per-call budget (a counter, read at scrape time).
	PluginLogsDropped func() float64
	// SGLang reads the client's per-target counters (in flight, queued, limit, health, requests, failures).
	SGLang func() sglang.Stats
	// Stream reads the trajectory stream's counters (connections, spool bytes, messages spooled, sent, acked).
	Stream func() stream.Stats
}

// Metrics is a Prometheus registry with agentrt's metrics. Safe for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	episodes     *prometheus.CounterVec
	turns        prometheus.Counter
	tokensIn     prometheus.Counter
	tokensOut    prometheus.Counter
	cachedTokens prometheus.Counter
	promptTokens prometheus.Counter
	toolCalls    *prometheus.CounterVec
	parseErrors  *prometheus.CounterVec
	drift        *prometheus.CounterVec
	latency      prometheus.Histogram
	overhead     prometheus.Histogram
	queued       prometheus.Gauge
	reward       prometheus.Histogram
	pluginCalls  *prometheus.HistogramVec
	historyDrift *prometheus.CounterVec
}

// New returns the metrics; g's functions may be nil.
func New(g Gauges) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.episodes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentrt_episodes_total",
		Help: "Finished episodes by status and reason."}, []string{"status", "reason"})
	m.turns = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentrt_turns_total", Help: "Model calls of finished episodes."})
	m.tokensIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentrt_prompt_tokens_total", Help: "Prompt tokens (loss mask 0) of finished trajectories."})
	m.tokensOut = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentrt_response_tokens_total", Help: "Generated tokens (loss mask 1) of finished trajectories."})
	m.cachedTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentrt_sglang_cached_tokens_total", Help: "Prompt tokens SGLang served from its radix cache (meta_info.cached_tokens)."})
	m.promptTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentrt_sglang_prompt_tokens_total", Help: "Prompt tokens SGLang processed (meta_info.prompt_tokens); cached/prompt is the prefix-cache hit ratio."})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentrt_tool_calls_total", Help: "Tool calls by outcome (ok, error, timeout, cancelled, unknown_tool, parse_error)."}, []string{"outcome"})
	m.parseErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentrt_parse_errors_total", Help: "Malformed tool calls by reason."}, []string{"reason"})
	m.drift = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentrt_drift_segments_total", Help: "Response segments audited for re-tokenization drift, and those that drifted."}, []string{"result"})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentrt_sglang_generate_seconds", Help: "Latency of /generate calls as the client saw them.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)})
	m.overhead = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentrt_turn_overhead_seconds",
		Help:    "The runtime's own time per model call (all but waiting on SGLang and tools: rendering, tokenizing, parsing, hooks).",
		Buckets: prometheus.ExponentialBuckets(25e-6, 2.5, 12)})
	m.queued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentrt_episodes_queued", Help: "Episodes waiting for a concurrency slot."})
	m.reward = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentrt_reward", Help: "Rewards of finished episodes that have one.",
		Buckets: prometheus.LinearBuckets(-1, 0.25, 9)})
	m.pluginCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentrt_plugin_call_seconds",
		Help:    "Wasm plugin call latency (parser, tool, hook) as the runtime saw it.",
		Buckets: prometheus.ExponentialBuckets(5e-6, 3, 14)}, []string{"kind", "plugin"})
	m.historyDrift = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentrt_frontdoor_history_drift_total",
		Help: "Front-door calls whose messages did not extend their session's history, by drift policy and reason."}, []string{"policy", "reason"})
	for _, c := range []prometheus.Collector{m.historyDrift, m.pluginCalls, m.episodes, m.turns, m.tokensIn, m.tokensOut, m.cachedTokens, m.promptTokens,
		m.toolCalls, m.parseErrors, m.drift, m.latency, m.overhead, m.queued, m.reward} {
		f(c)
	}
	gauge := func(name, help string, fn func() float64) {
		if fn != nil {
			f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
		}
	}
	gauge("agentrt_episodes_in_flight", "Episodes running.", g.InFlight)
	gauge("agentrt_spool_backlog", "Messages for trainers (trajectories, request_done) not yet acked; on the bus every "+
		"trainer's, the same figure on every node.", g.SpoolBacklog)
	gauge("agentrt_sglang_queued_requests", "/generate calls waiting for a worker slot.", g.SGLangQueued)
	gauge("agentrt_sglang_in_flight_limit", "The /generate in-flight bound summed over workers (max_in_flight_per_worker, "+
		"or the adaptive limits of sglang.adaptive).", g.SGLangLimit)
	gauge("agentrt_weight_version_stale_consumers", "Consumers whose trajectories kept one weight_version for "+
		"server.weight_version_warn_after: the SGLang server is probably not the one the trainer updates.", g.StaleWeightConsumers)
	if g.PluginLogsDropped != nil {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentrt_plugin_log_lines_dropped_total",
			Help: "Plugin log lines dropped past the per-call budget (100 lines, 64 KiB)."}, g.PluginLogsDropped))
	}
	if g.SGLang != nil {
		f(sglangCollector(g.SGLang))
	}
	if g.Stream != nil {
		f(streamCollector(g.Stream))
	}
	f(prometheus.NewGoCollector())
	f(prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// PluginCall records one plugin call (system.BuildEnv.PluginCall).
func (m *Metrics) PluginCall(kind, plugin string, d time.Duration) {
	m.pluginCalls.WithLabelValues(kind, plugin).Observe(d.Seconds())
}

// HistoryDrift counts one front-door call that edited its session's history (frontdoor.Server.OnDrift).
func (m *Metrics) HistoryDrift(policy, reason string) {
	m.historyDrift.WithLabelValues(policy, reason).Inc()
}

// EpisodeQueued implements rollout.Observer.
func (m *Metrics) EpisodeQueued(delta int) { m.queued.Add(float64(delta)) }

// EpisodeFinished implements rollout.Observer: everything is counted from the trajectory, the turns, tokens and
// drift audit of every sample of a multi-sample episode.
func (m *Metrics) EpisodeFinished(t *tito.Trajectory) {
	m.episodes.WithLabelValues(t.Status, t.StatusReason).Inc()
	for _, smp := range t.AllSamples() {
		m.countSegments(smp.Segments)
	}
	for k, v := range t.Metrics {
		if r, ok := strings.CutPrefix(k, "parse_errors."); ok {
			m.parseErrors.WithLabelValues(r).Add(v)
		} else if o, ok := strings.CutPrefix(k, "tool_calls."); ok {
			m.toolCalls.WithLabelValues(o).Add(v)
		}
	}
	if t.Reward != nil {
		m.reward.Observe(*t.Reward)
	}
}

// countSegments counts one sample's turns, tokens and drift audit.
func (m *Metrics) countSegments(segs []tito.Segment) {
	for _, s := range segs {
		switch s.Kind {
		case tito.KindPrompt:
			m.tokensIn.Add(float64(s.Length))
		case tito.KindResponse:
			m.tokensOut.Add(float64(s.Length))
			m.turns.Inc()
			if s.Info != nil {
				m.cachedTokens.Add(float64(s.Info.CachedTokens))
				m.promptTokens.Add(float64(s.Info.PromptTokens))
				m.latency.Observe(s.Info.LatencyMS / 1000)
				m.overhead.Observe(s.Info.OverheadMS / 1000)
			}
			if s.Drift != nil {
				m.drift.WithLabelValues("audited").Inc()
				if !s.Drift.Canonical {
					m.drift.WithLabelValues("drifted").Inc()
				}
			}
		}
	}
}

// collector emits metrics read from one snapshot per scrape.
type collector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// sglangCollector: each SGLang target's (each worker's, or the gateway's) load and health.
func sglangCollector(stats func() sglang.Stats) prometheus.Collector {
	worker := []string{"worker"}
	var (
		inFlight = prometheus.NewDesc("agentrt_sglang_worker_in_flight", "/generate calls in flight to the worker (or gateway).", worker, nil)
		queued   = prometheus.NewDesc("agentrt_sglang_worker_queued", "/generate calls waiting for one of the worker's in-flight slots.", worker, nil)
		limit    = prometheus.NewDesc("agentrt_sglang_worker_in_flight_limit", "The worker's in-flight bound (max_in_flight_per_worker, or sglang.adaptive's).", worker, nil)
		healthy  = prometheus.NewDesc("agentrt_sglang_worker_healthy", "1 while the worker is taken as healthy, 0 while it is marked unhealthy.", worker, nil)
		requests = prometheus.NewDesc("agentrt_sglang_worker_requests_total", "/generate attempts started on the worker.", worker, nil)
		failures = prometheus.NewDesc("agentrt_sglang_worker_failures_total", "/generate attempts on the worker that failed transiently (and were retried or gave up).", worker, nil)
		retries  = prometheus.NewDesc("agentrt_sglang_retries_total", "/generate retries (attempts after the first).", nil, nil)
	)
	return &collector{descs: []*prometheus.Desc{inFlight, queued, limit, healthy, requests, failures, retries},
		collect: func(ch chan<- prometheus.Metric) {
			st := stats()
			for _, w := range st.Workers {
				ch <- prometheus.MustNewConstMetric(inFlight, prometheus.GaugeValue, float64(w.InFlight), w.URL)
				ch <- prometheus.MustNewConstMetric(queued, prometheus.GaugeValue, float64(w.Queued), w.URL)
				ch <- prometheus.MustNewConstMetric(limit, prometheus.GaugeValue, float64(w.Limit), w.URL)
				h := 0.0
				if w.Healthy {
					h = 1
				}
				ch <- prometheus.MustNewConstMetric(healthy, prometheus.GaugeValue, h, w.URL)
				ch <- prometheus.MustNewConstMetric(requests, prometheus.CounterValue, float64(w.Requests), w.URL)
				ch <- prometheus.MustNewConstMetric(failures, prometheus.CounterValue, float64(w.Failures), w.URL)
			}
			ch <- prometheus.MustNewConstMetric(retries, prometheus.CounterValue, float64(st.Retries))
		}}
}

// streamCollector: the trajectory stream's connections and spool.
func streamCollector(stats func() stream.Stats) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	var (
		conns    = d("agentrt_stream_connections", "Trainer (consumer) connections open on the WebSocket stream.")
		active   = d("agentrt_stream_active_requests", "Rollout requests running (accepted, not yet done).")
		bytes    = d("agentrt_spool_bytes", "Bytes of the messages in the spool, not yet acked by a trainer.")
		spooled  = d("agentrt_stream_trajectories_spooled_total", "Trajectories written to the spool.")
		sent     = d("agentrt_stream_messages_sent_total", "Spooled messages sent to trainers (a redelivery counts again).")
		acked    = d("agentrt_stream_messages_acked_total", "Spooled messages acked by trainers (and deleted from the spool).")
		accepted = d("agentrt_stream_requests_accepted_total", "Rollout requests accepted.")
		rejected = d("agentrt_stream_requests_rejected_total", "Rollout requests rejected (invalid, overloaded, shutting down).")
		dropped  = d("agentrt_stream_events_dropped_total", "Per-turn events dropped (the trainer not connected or its queue full).")
	)
	return &collector{descs: []*prometheus.Desc{conns, active, bytes, spooled, sent, acked, accepted, rejected, dropped},
		collect: func(ch chan<- prometheus.Metric) {
			st := stats()
			g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
			c := func(d *prometheus.Desc, v uint64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
			}
			g(conns, float64(st.Connections))
			g(active, float64(st.ActiveRequests))
			g(bytes, float64(st.SpoolBytes))
			c(spooled, st.Spooled)
			c(sent, st.Sent)
			c(acked, st.Acked)
			c(accepted, st.Accepted)
			c(rejected, st.Rejected)
			c(dropped, st.EventsDropped)
		}}
}
