package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testmodel"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// The loop's own tests run episodes of runtime.Agent built by hand: fake generators and tokenizers, real chat
// templates and parsers (natively, or the built-in Wasm module through the plugin host). The whole product, built
// from config against the SGLang emulator, is tested in runtime/system.

var (
	qwen3 *tito.Model
	host  *plugin.Host
)

func TestMain(m *testing.M) { testmodel.Main(m, "runtime", &qwen3, &host) }

// defaultSettings are an [[agent]] table's defaults (runtime/config's DefaultAgent), as the loop takes them.
func defaultSettings() runtime.Settings {
	return runtime.Settings{Sampling: turn.Sampling{MaxNewTokens: 1024}, ToolTimeout: 30 * time.Second,
		ParseErrors: runtime.ParseFeedback, PartialRollout: runtime.PartialDrop}
}

func wantStatus(t *testing.T, tr *tito.Trajectory, status, reason string) {
	t.Helper()
	if tr.Status != status || tr.StatusReason != reason {
		t.Fatalf("%s: status %s/%s (error %q), want %s/%s", tr.ID, tr.Status, tr.StatusReason, tr.Error, status, reason)
	}
}

// goodTool answers every call with "5".
type goodTool struct{}

func (goodTool) Call(context.Context, string, json.RawMessage) (abi.ToolResult, error) {
	s := "5"
	return abi.ToolResult{Text: &s}, nil
}
