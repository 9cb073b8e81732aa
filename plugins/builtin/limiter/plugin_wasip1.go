//go:build wasip1

package main

import (
	"fmt"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

// cfg is set once per instance by Init; it is configuration, not per-episode state.
var cfg limits

func init() {
	sdk.RegisterHook(sdk.Hook{
		Info: sdk.Info{
			Name:        "loop_limiter",
			Version:     "1.0.0",
			Description: "Stops the agent loop at tool-iteration, tool-call and message limits; cancels extra parallel tool calls.",
			ConfigSchema: sdk.RawJSON(`{"type":"object","additionalProperties":false,"properties":{` +
				`"max_tool_iters":{"type":"integer","minimum":0},"max_tool_calls":{"type":"integer","minimum":0},` +
				`"max_parallel_tool_calls":{"type":"integer","minimum":0},"max_messages":{"type":"integer","minimum":0}}}`),
		},
		Events: []string{abi.EventBeforeInvocation, abi.EventMessageAdded, abi.EventBeforeToolCall},
		Init:   configure,
		Handle: handle,
	})
}

func configure(v sdk.Value) error {
	cfg = limits{}
	if v.IsNull() {
		return nil
	}
	var err error
	perr := v.Each(func(k string, val sdk.Value) bool {
		var dst *int64
		switch k {
		case "max_tool_iters":
			dst = &cfg.maxToolIters
		case "max_tool_calls":
			dst = &cfg.maxToolCalls
		case "max_parallel_tool_calls":
			dst = &cfg.maxParallelToolCalls
		case "max_messages":
			dst = &cfg.maxMessages
		default:
			err = fmt.Errorf("unknown key %q (want max_tool_iters, max_tool_calls, max_parallel_tool_calls, max_messages)", k)
			return false
		}
		if val.IsNull() {
			return true
		}
		n, e := val.Int()
		if e != nil || n < 0 {
			err = fmt.Errorf("%s must be a non-negative integer, got %s", k, val.Raw())
			return false
		}
		*dst = n
		return true
	})
	if perr != nil {
		return fmt.Errorf("config must be a JSON object: %w", perr)
	}
	return err
}

func handle(e sdk.Event) (sdk.Response, error) {
	ev := event{name: e.Name(), counts: e.Counts(), toolIndex: -1}
	switch ev.name {
	case abi.EventMessageAdded:
		ev.role = e.Message().Get("role").StrOr("")
	case abi.EventBeforeToolCall:
		ev.toolIndex = e.ToolCall().Get("index").IntOr(-1)
	}
	d := cfg.decide(ev)
	var r sdk.Response
	if d.stopReason != "" {
		r.Stop = &sdk.Stop{Reason: d.stopReason, Message: d.stopMessage}
	}
	if d.cancel != "" {
		r.CancelTool = &d.cancel
	}
	return r, nil
}
