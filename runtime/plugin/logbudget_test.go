package plugin_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agentrt/agentrt/runtime/plugin"
)

// A guest that logs in a loop gets MaxLogLinesPerCall lines per call through; the rest are dropped, counted, and
// announced by one host warning per call. The next call gets a fresh budget.
func TestGuestLogFloodIsBounded(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	h := newHost(t, plugin.WithLogger(slog.New(rec)))
	m := load(t, h, plugin.Spec{Name: "logflood.wasm", Wasm: wasm(t, "wat/logflood.wasm"), PoolSize: 1})
	tool, _ := m.Tool()
	for i := range 2 {
		if res, err := tool.Call(context.Background(), "noop", nil); err != nil || res.Text != "ok" {
			t.Fatalf("call %d: %+v, %v", i, res, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	guest, warnings := 0, 0
	for _, r := range rec.recs {
		switch r.Message {
		case "flooding the log":
			guest++
		case "plugin log budget spent: dropping the call's further lines":
			warnings++
		default:
			t.Errorf("unexpected log record %q", r.Message)
		}
	}
	if guest != 2*plugin.MaxLogLinesPerCall || warnings != 2 {
		t.Errorf("%d guest lines and %d warnings, want %d and 2", guest, warnings, 2*plugin.MaxLogLinesPerCall)
	}
	if got, want := h.DroppedLogLines(), int64(2*(10000-plugin.MaxLogLinesPerCall)); got != want {
		t.Errorf("DroppedLogLines() = %d, want %d", got, want)
	}
}
