package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

func TestCalculator(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "builtin:calculator", Wasm: builtin.Calculator, Trusted: true, PoolSize: 1})
	if m.Name() != "calculator" || m.Kind() != abi.KindTool || len(m.SHA256()) != 64 {
		t.Fatalf("module %s kind %s sha %s", m.Name(), m.Kind(), m.SHA256())
	}
	tool, err := m.Tool()
	if err != nil {
		t.Fatal(err)
	}
	if specs := tool.Specs(); len(specs) != 1 || specs[0].Name != "calculator" || !strings.Contains(string(specs[0].Parameters), `"expression"`) {
		t.Fatalf("specs %+v", specs)
	}
	tests := []struct {
		args     string
		want     string
		wantCode string
	}{
		{`{"expression":"(2 + 3) * 4"}`, "20", ""},
		{`{"expression":"2 ** 0.5"}`, "1.4142135623730951", ""},
		{`{"expression":"-7 % 3"}`, "2", ""},
		{`{"expression":"10 / 4"}`, "2.5", ""},
		{`{"expression":"1 / (2 - 2)"}`, "division by zero at offset 2", "division_by_zero"},
		{`{"expression":"2 +* 3"}`, "unexpected '*' at offset 3", "syntax_error"},
		{`{"expression":"import os"}`, "unexpected 'i' at offset 0", "syntax_error"},
		{`{"expression":""}`, "empty expression", "bad_input"},
		{`{"expr":"1"}`, `missing argument "expression"`, "bad_input"},
		{`{"expression":12}`, `argument "expression" must be a string`, "bad_input"},
	}
	for _, tt := range tests {
		res, err := tool.Call(context.Background(), "calculator", []byte(tt.args))
		if err != nil {
			t.Fatalf("Call(%s): %v", tt.args, err)
		}
		if res.IsError != (tt.wantCode != "") || res.ErrorCode != tt.wantCode || !strings.HasPrefix(res.Text, tt.want) {
			t.Errorf("Call(%s) = %+v; want text %q code %q", tt.args, res, tt.want, tt.wantCode)
		}
	}
	res, err := tool.Call(context.Background(), "abacus", []byte(`{}`))
	if err != nil || !res.IsError || res.ErrorCode != abi.CodeUnknownTool {
		t.Errorf("unknown tool: %+v, %v", res, err)
	}
	if _, err := tool.Call(context.Background(), "calculator", []byte(`[1]`)); err == nil {
		t.Error("non-object arguments accepted")
	}
	if _, err := m.Parser(); !errors.Is(err, plugin.ErrWrongKind) {
		t.Errorf("Parser() on a tool = %v, want ErrWrongKind", err)
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1,
		Config: []byte(`{"max_tool_iters": 2, "max_tool_calls": 5, "max_parallel_tool_calls": 2, "max_messages": 12}`)})
	hook, err := m.Hook()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{abi.EventBeforeInvocation, abi.EventMessageAdded, abi.EventBeforeToolCall} {
		if !hook.Wants(e) {
			t.Errorf("limiter does not want %s", e)
		}
	}
	if hook.Wants(abi.EventEpisodeEnd) {
		t.Error("limiter wants episode_end")
	}
	idx := func(i int) *int { return &i }
	ctx := context.Background()
	// An episode: user prompt; assistant calls 3 tools (the third is cancelled); results; assistant calls 1 tool;
	// its result lands with tool_iters = 2, so the loop stops there, before the result is rendered.
	steps := []struct {
		name       string
		ev         abi.Event
		wantStop   string
		wantCancel string
	}{
		{"start", abi.Event{Event: abi.EventBeforeInvocation, Counts: abi.Counts{Messages: 1}}, "", ""},
		{"assistant 1", abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{Messages: 2, ToolIters: 1, ToolCalls: 3, ModelCalls: 1}, Message: &abi.Message{Role: abi.RoleAssistant}}, "", ""},
		{"call 0", abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &abi.ToolCall{Name: "calculator", Arguments: abi.RawJSON(`{}`), Index: idx(0)}}, "", ""},
		{"call 1", abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &abi.ToolCall{Name: "calculator", Arguments: abi.RawJSON(`{}`), Index: idx(1)}}, "", ""},
		{"call 2", abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &abi.ToolCall{Name: "calculator", Arguments: abi.RawJSON(`{}`), Index: idx(2)}}, "", "Max parallel tool calls (2) reached. This tool call was not executed."},
		{"result 0", abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{Messages: 3, ToolIters: 1, ToolCalls: 3}, Message: &abi.Message{Role: abi.RoleTool, Content: "5"}}, "", ""},
		{"episode end ignored", abi.Event{Event: abi.EventEpisodeEnd}, "", ""},
		{"assistant 2", abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{Messages: 6, ToolIters: 2, ToolCalls: 4}, Message: &abi.Message{Role: abi.RoleAssistant}}, "", ""},
		{"result of iteration 2", abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{Messages: 7, ToolIters: 2, ToolCalls: 4}, Message: &abi.Message{Role: abi.RoleTool}}, abi.StopMaxToolIters, ""},
	}
	for _, s := range steps {
		s.ev.EpisodeID = "ep-1"
		resp, err := hook.Handle(ctx, &s.ev)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		gotStop, gotCancel := "", ""
		if resp.Stop != nil {
			gotStop = resp.Stop.Reason
		}
		if resp.CancelTool != nil {
			gotCancel = *resp.CancelTool
		}
		if gotStop != s.wantStop || gotCancel != s.wantCancel {
			t.Errorf("%s: stop %q cancel %q; want %q %q", s.name, gotStop, gotCancel, s.wantStop, s.wantCancel)
		}
	}

	bad := []struct{ cfg, want string }{
		{`{"max_tool_iters": -1}`, "max_tool_iters must be a non-negative integer"},
		{`{"max_tool_iter": 3}`, `unknown key "max_tool_iter"`},
		{`{"max_messages": "ten"}`, "max_messages must be a non-negative integer"},
		{`[1]`, "config must be a JSON object"},
	}
	for _, b := range bad {
		_, err := h.Load(ctx, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1, Config: []byte(b.cfg)})
		var le *plugin.LoadError
		var ge *plugin.GuestError
		if !errors.As(err, &le) || !errors.As(err, &ge) || ge.Code != abi.CodeBadConfig || !strings.Contains(err.Error(), b.want) {
			t.Errorf("config %s: %v; want a LoadError wrapping a bad_config GuestError containing %q", b.cfg, err, b.want)
		}
	}
}
