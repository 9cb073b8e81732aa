package runtime

import (
	"context"
	"sync"

	"github.com/agentrt/agentrt/runtime/outbound/audit"
	"github.com/agentrt/agentrt/tito"
)

// ProvOutboundHTTP is the provenance key listing an episode's outbound HTTP requests (granted plugins' calls of
// agentrt_v1.http_request): tool, host, method, status, bytes, ms, and why one was denied or failed.
const ProvOutboundHTTP = "outbound_http"

// OutboundCall is one outbound request in a trajectory's provenance.
type OutboundCall struct {
	Tool string `json:"tool"`
	audit.Record
}

// outboundLog collects an episode's outbound requests; tool calls of a turn run concurrently.
type outboundLog struct {
	mu    sync.Mutex
	calls []OutboundCall
}

type outboundKey struct{}

// withOutboundLog makes the requests of tool call name land in l.
func withOutboundLog(ctx context.Context, l *outboundLog, name string) context.Context {
	return context.WithValue(ctx, outboundKey{}, func(r audit.Record) {
		l.mu.Lock()
		l.calls = append(l.calls, OutboundCall{name, r})
		l.mu.Unlock()
	})
}

// finish records the requests in the trajectory: provenance, and counts in metrics.
func (l *outboundLog) finish(t *tito.Trajectory) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return
	}
	denied := 0
	for _, c := range l.calls {
		if c.Denied != "" {
			denied++
		}
	}
	t.SetProvenance(ProvOutboundHTTP, l.calls)
	t.SetMetric("outbound_http.requests", float64(len(l.calls)))
	t.SetMetric("outbound_http.denied", float64(denied))
}

// OutboundRecorder is the recorder of the tool call running in ctx: what a granted plugin's outbound requests
// are told to (runtime/plugin.WithEpisode), so that they land in the episode's provenance. Nil outside a call.
func OutboundRecorder(ctx context.Context) func(audit.Record) {
	rec, _ := ctx.Value(outboundKey{}).(func(audit.Record))
	return rec
}
