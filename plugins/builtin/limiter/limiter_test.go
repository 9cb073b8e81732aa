package main

import (
	"testing"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

func TestDecide(t *testing.T) {
	all := limits{maxToolIters: 2, maxToolCalls: 3, maxParallelToolCalls: 2, maxMessages: 10}
	tests := []struct {
		name       string
		l          limits
		ev         event
		wantStop   string
		wantCancel bool
	}{
		{"assistant message never stops", all, event{name: abi.EventMessageAdded, role: abi.RoleAssistant, counts: abi.Counts{Messages: 50, ToolIters: 9, ToolCalls: 9}}, "", false},
		{"tool result under limits", all, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 3, ToolIters: 1, ToolCalls: 1}}, "", false},
		{"tool iters reached", all, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 5, ToolIters: 2, ToolCalls: 2}}, abi.StopMaxToolIters, false},
		{"iters checked before calls", all, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 5, ToolIters: 2, ToolCalls: 5}}, abi.StopMaxToolIters, false},
		{"tool calls reached", all, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 5, ToolIters: 1, ToolCalls: 3}}, abi.StopMaxToolCalls, false},
		{"messages checked first", all, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 10, ToolIters: 2, ToolCalls: 3}}, abi.StopMaxMessages, false},
		{"user message at max messages", all, event{name: abi.EventMessageAdded, role: abi.RoleUser, counts: abi.Counts{Messages: 10}}, abi.StopMaxMessages, false},
		{"user message does not check tool limits", all, event{name: abi.EventMessageAdded, role: abi.RoleUser, counts: abi.Counts{Messages: 4, ToolIters: 5, ToolCalls: 5}}, "", false},
		{"initial conversation too long", all, event{name: abi.EventBeforeInvocation, counts: abi.Counts{Messages: 10}}, abi.StopMaxMessages, false},
		{"parallel call within limit", all, event{name: abi.EventBeforeToolCall, toolIndex: 1}, "", false},
		{"parallel call beyond limit", all, event{name: abi.EventBeforeToolCall, toolIndex: 2}, "", true},
		{"no limits", limits{}, event{name: abi.EventMessageAdded, role: abi.RoleTool, counts: abi.Counts{Messages: 1e6, ToolIters: 1e6, ToolCalls: 1e6}}, "", false},
		{"no parallel limit", limits{}, event{name: abi.EventBeforeToolCall, toolIndex: 100}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.l.decide(tt.ev)
			if d.stopReason != tt.wantStop || (d.cancel != "") != tt.wantCancel {
				t.Fatalf("decide = %+v; want stop %q cancel %v", d, tt.wantStop, tt.wantCancel)
			}
			if tt.wantCancel && d.cancel != "Max parallel tool calls (2) reached. This tool call was not executed." {
				t.Fatalf("cancel message %q", d.cancel)
			}
		})
	}
}
