package plugin_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// Example_tool loads the built-in calculator and limiter and uses them the way the agent loop does.
func Example_tool() {
	ctx := context.Background()
	host, err := plugin.NewHost(ctx, plugin.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer host.Close(ctx)

	calc, err := host.Load(ctx, plugin.Spec{Name: "builtin:calculator", Wasm: builtin.Calculator, Trusted: true, PoolSize: 1})
	if err != nil {
		panic(err)
	}
	tool, _ := calc.Tool()
	res, _ := tool.Call(ctx, "calculator", []byte(`{"expression": "(1 + 2) * 3 ** 2"}`))
	fmt.Println(res.Text)
	res, _ = tool.Call(ctx, "calculator", []byte(`{"expression": "1 / 0"}`))
	fmt.Println(res.IsError, res.Text)

	lim, err := host.Load(ctx, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1,
		Config: []byte(`{"max_tool_iters": 1}`)})
	if err != nil {
		panic(err)
	}
	hook, _ := lim.Hook()
	resp, _ := hook.Handle(ctx, &abi.Event{Event: abi.EventMessageAdded, EpisodeID: "e1",
		Counts: abi.Counts{Messages: 3, ToolIters: 1, ToolCalls: 1}, Message: &abi.Message{Role: abi.RoleTool}})
	fmt.Println(resp.Stop.Reason, "-", resp.Stop.Message)
	// Output:
	// 27
	// true division by zero at offset 2
	// max_tool_iters - Max tool iterations (1) reached.
}
