// Command limiter is agentrt's built-in loop limiter, a hook plugin (GOOS=wasip1, -buildmode=c-shared) with the
// semantics of strands-sglang's LoopLimiter (plugins/ABI.md section 5.4):
//
//   - max_tool_iters: at most N assistant responses with tool calls; checked when a tool result is added, so the
//     trajectory ends cleanly on the model's tool-calling response and that turn's results are never rendered;
//   - max_tool_calls: at most N tool calls in total, checked at the same boundary;
//   - max_parallel_tool_calls: at most N calls of one response run; the extra ones are cancelled with a message
//     to the model;
//   - max_messages: at most N conversation messages, checked when a user or tool message lands (and on the
//     initial conversation).
//
// Each limit is optional (absent or 0 = none). The limiter keeps no state: the runtime's counts suffice. The
// decision logic (this file) builds natively and is unit-tested; registration is in plugin_wasip1.go.
package main

import (
	"fmt"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

func main() {}

// limits is the limiter's config; 0 means no limit.
type limits struct {
	maxToolIters, maxToolCalls, maxParallelToolCalls, maxMessages int64
}

// decision is what the limiter answers for one event.
type decision struct {
	stopReason, stopMessage string
	cancel                  string // non-empty: cancel the tool call with this message
}

// event is the part of an event the limiter reads.
type event struct {
	name      string
	counts    abi.Counts
	role      string // message_added
	toolIndex int64  // before_tool_call; -1 if absent
}

func (l limits) decide(ev event) decision {
	c := ev.counts
	switch ev.name {
	case abi.EventBeforeInvocation:
		if l.maxMessages > 0 && int64(c.Messages) >= l.maxMessages {
			return stop(abi.StopMaxMessages, "Max messages (%d) reached.", l.maxMessages)
		}
	case abi.EventMessageAdded:
		if ev.role != abi.RoleUser && ev.role != abi.RoleTool {
			return decision{}
		}
		if l.maxMessages > 0 && int64(c.Messages) >= l.maxMessages {
			return stop(abi.StopMaxMessages, "Max messages (%d) reached.", l.maxMessages)
		}
		if ev.role != abi.RoleTool {
			return decision{}
		}
		if l.maxToolIters > 0 && int64(c.ToolIters) >= l.maxToolIters {
			return stop(abi.StopMaxToolIters, "Max tool iterations (%d) reached.", l.maxToolIters)
		}
		if l.maxToolCalls > 0 && int64(c.ToolCalls) >= l.maxToolCalls {
			return stop(abi.StopMaxToolCalls, "Max tool calls (%d) reached.", l.maxToolCalls)
		}
	case abi.EventBeforeToolCall:
		if l.maxParallelToolCalls > 0 && ev.toolIndex >= l.maxParallelToolCalls {
			return decision{cancel: fmt.Sprintf("Max parallel tool calls (%d) reached. This tool call was not executed.", l.maxParallelToolCalls)}
		}
	}
	return decision{}
}

func stop(reason, format string, n int64) decision {
	return decision{stopReason: reason, stopMessage: fmt.Sprintf(format, n)}
}
