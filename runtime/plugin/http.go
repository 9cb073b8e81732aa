package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentrt/agentrt/runtime/outbound"
)

// Outbound HTTP (plugins/ABI.md section 3.1): agentrt_v1.http_request runs a guest's request under the module's
// grant (runtime/outbound enforces it) and keeps the result envelope for agentrt_v1.http_result to copy out, so
// the host never allocates in guest memory.

// The outbound HTTP imports of agentrt_v1 (ABI.md 3.1). They are not in plugins/sdk/abi: a constant there changes
// every committed Go guest's bytes.
const (
	// funcHTTPRequest is `(func (param $ptr i32) (param $len i32) (result i32))`: run the JSON request in
	// [ptr, ptr+len) under the grant; returns the length of the JSON result envelope for http_result.
	funcHTTPRequest = "http_request"
	// funcHTTPResult is `(func (param $ptr i32) (param $len i32))`: copy that envelope into [ptr, ptr+len).
	funcHTTPResult = "http_result"
)

// maxHTTPRequestJSON bounds the request envelope read from the guest (the grant's body cap applies after).
const maxHTTPRequestJSON = 8 << 20

// pendingHTTP holds each instance's last result envelope until http_result copies it: api.Module -> []byte.
var pendingHTTP sync.Map

type callInfoKey struct{}

type callInfo struct {
	episode string
	record  func(outbound.Record)
}

// WithEpisode tags a plugin call's context with its episode (the grant's per-episode count) and a function told
// of every outbound request the call makes (nil: none), for metrics and provenance.
func WithEpisode(ctx context.Context, episodeID string, record func(outbound.Record)) context.Context {
	return context.WithValue(ctx, callInfoKey{}, callInfo{episodeID, record})
}

// EndEpisode forgets an episode's outbound request count.
func (m *Module) EndEpisode(episodeID string) {
	if m.http != nil {
		m.http.EndEpisode(episodeID)
	}
}

// HTTPGranted reports whether the module may make outbound requests (for inspect and the start-up log).
func (m *Module) HTTPGranted() bool { return m.http != nil }

func newHTTPClient(spec Spec) (*outbound.Client, error) {
	if spec.Grants.HTTP == nil {
		return nil, nil
	}
	c, err := outbound.New(*spec.Grants.HTTP)
	if err != nil {
		return nil, &LoadError{Plugin: spec.Name, Reason: "http grant: " + err.Error()}
	}
	return c, nil
}

type httpErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// hostHTTPRequest implements agentrt_v1.http_request(ptr, len) -> result length.
func (h *Host) hostHTTPRequest(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	var env any
	var m *Module
	if v, ok := h.owners.Load(mod); ok {
		m = v.(owner).m
	}
	switch {
	case n > maxHTTPRequestJSON:
		env = map[string]any{"error": httpErr{"bad_request", fmt.Sprintf("request envelope of %d bytes is over %d", n, maxHTTPRequestJSON)}}
	case m == nil || m.http == nil:
		env = map[string]any{"error": httpErr{"denied", "outbound HTTP is not granted to this plugin (runtime.toml: http = { hosts = [...] } on its entry)"}}
	default:
		b, ok := mod.Memory().Read(ptr, n)
		if !ok {
			panic(fmt.Sprintf("out of memory reading the http_request envelope [%d, %d)", ptr, uint64(ptr)+uint64(n)))
		}
		var req outbound.Request
		if err := json.Unmarshal(b, &req); err != nil {
			env = map[string]any{"error": httpErr{"bad_request", "request envelope is not valid JSON: " + err.Error()}}
			break
		}
		info, _ := ctx.Value(callInfoKey{}).(callInfo)
		resp, rec, err := m.http.Do(ctx, info.episode, req)
		if info.record != nil {
			info.record(rec)
		}
		h.log.Debug("plugin outbound http", "plugin", m.name, "host", rec.Host, "method", rec.Method, "status", rec.Status, "ms", rec.Ms, "denied", rec.Denied, "error", rec.Error)
		var d *outbound.DeniedError
		switch {
		case errors.As(err, &d):
			env = map[string]any{"error": httpErr{"denied", d.Error()}}
		case err != nil:
			env = map[string]any{"error": httpErr{"failed", err.Error()}}
		default:
			env = map[string]any{"ok": resp}
		}
	}
	out, _ := json.Marshal(env)
	pendingHTTP.Store(mod, out)
	stack[0] = uint64(uint32(len(out)))
}

// hostHTTPResult implements agentrt_v1.http_result(ptr, len): copies the pending envelope out and forgets it.
func (h *Host) hostHTTPResult(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	v, ok := pendingHTTP.LoadAndDelete(mod)
	if !ok {
		return
	}
	out := v.([]byte)
	if int(n) < len(out) {
		out = out[:n]
	}
	if !mod.Memory().Write(ptr, out) {
		panic(fmt.Sprintf("out of memory writing the http_result envelope [%d, %d)", ptr, uint64(ptr)+uint64(len(out))))
	}
}
