package plugin_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	m, err := h.Load(ctx, plugin.Spec{Name: "calc", Wasm: builtin.Calculator, Trusted: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := m.Tool()
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.Call(ctx, "calculator", []byte(`{"expression":"2**10 + 1"}`))
	t.Logf("%+v %v %+v", r, err, tool.Specs())
	r, err = tool.Call(ctx, "calculator", []byte(`{"expression":"1/0"}`))
	t.Logf("%+v %v", r, err)
	lm, err := h.Load(ctx, plugin.Spec{Name: "lim", Wasm: builtin.Limiter, Config: []byte(`{"max_tool_iters":2}`), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	hk, _ := lm.Hook()
	resp, err := hk.Handle(ctx, &abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{ToolIters: 2}, Message: &abi.Message{Role: "tool"}})
	t.Logf("%+v %+v %v", resp, resp.Stop, err)
}
