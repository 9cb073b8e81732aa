package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// loadLimiter loads the built-in loop limiter (plugins/builtin/limiter) with the JSON config cfg ("": none).
func loadLimiter(t testing.TB, h *plugin.Host, cfg string) *plugin.Hook {
	t.Helper()
	spec := plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1}
	if cfg != "" {
		spec.Config = []byte(cfg)
	}
	hook, err := load(t, h, spec).Hook()
	if err != nil {
		t.Fatal(err)
	}
	return hook
}

// TestLimiterDecisions is the limiter's decision table (plugins/ABI.md section 5.4), run through the host.
func TestLimiterDecisions(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	const all = `{"max_tool_iters": 2, "max_tool_calls": 3, "max_parallel_tool_calls": 2, "max_messages": 10}`
	hooks := map[string]*plugin.Hook{}
	for _, cfg := range []string{all, "", "null", "{}", `{"max_tool_iters": 0, "max_tool_calls": 0, "max_parallel_tool_calls": 0, "max_messages": 0}`,
		`{"max_tool_iters": null, "max_tool_calls": null, "max_parallel_tool_calls": null, "max_messages": null}`,
		`{"max_tool_iters": 2.0, "max_tool_calls": 3e0, "max_parallel_tool_calls": 20e-1, "max_messages": 1e1}`} {
		hooks[cfg] = loadLimiter(t, h, cfg)
	}
	noLimits := []string{"", "null", "{}", `{"max_tool_iters": 0, "max_tool_calls": 0, "max_parallel_tool_calls": 0, "max_messages": 0}`,
		`{"max_tool_iters": null, "max_tool_calls": null, "max_parallel_tool_calls": null, "max_messages": null}`}
	// Integral numbers in other spellings are the same limits.
	allLimits := []string{all, `{"max_tool_iters": 2.0, "max_tool_calls": 3e0, "max_parallel_tool_calls": 20e-1, "max_messages": 1e1}`}

	msg := func(role string, c abi.Counts) abi.Event {
		return abi.Event{Event: abi.EventMessageAdded, Counts: c, Message: &abi.Message{Role: role, Content: "x"}}
	}
	call := func(i int) abi.Event {
		return abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &abi.ToolCall{ID: "c", Name: "calculator", Arguments: abi.RawJSON(`{"expression":"1"}`), Index: &i}}
	}
	const (
		iters    = "Max tool iterations (2) reached."
		calls    = "Max tool calls (3) reached."
		messages = "Max messages (10) reached."
		cancel   = "Max parallel tool calls (2) reached. This tool call was not executed."
	)
	tests := []struct {
		name        string
		cfgs        []string
		ev          abi.Event
		stop, stopM string // reason, message
		cancel      string
	}{
		{"assistant message never stops", allLimits, msg(abi.RoleAssistant, abi.Counts{Messages: 50, ToolIters: 9, ToolCalls: 9}), "", "", ""},
		{"system message never stops", allLimits, msg(abi.RoleSystem, abi.Counts{Messages: 50, ToolIters: 9, ToolCalls: 9}), "", "", ""},
		{"tool result under limits", allLimits, msg(abi.RoleTool, abi.Counts{Messages: 3, ToolIters: 1, ToolCalls: 1}), "", "", ""},
		{"tool iters reached", allLimits, msg(abi.RoleTool, abi.Counts{Messages: 5, ToolIters: 2, ToolCalls: 2}), abi.StopMaxToolIters, iters, ""},
		{"iters checked before calls", allLimits, msg(abi.RoleTool, abi.Counts{Messages: 5, ToolIters: 2, ToolCalls: 5}), abi.StopMaxToolIters, iters, ""},
		{"tool calls reached", allLimits, msg(abi.RoleTool, abi.Counts{Messages: 5, ToolIters: 1, ToolCalls: 3}), abi.StopMaxToolCalls, calls, ""},
		{"messages checked first", allLimits, msg(abi.RoleTool, abi.Counts{Messages: 10, ToolIters: 2, ToolCalls: 3}), abi.StopMaxMessages, messages, ""},
		{"user message at max messages", allLimits, msg(abi.RoleUser, abi.Counts{Messages: 10}), abi.StopMaxMessages, messages, ""},
		{"user message under max messages", allLimits, msg(abi.RoleUser, abi.Counts{Messages: 9}), "", "", ""},
		{"user message does not check tool limits", allLimits, msg(abi.RoleUser, abi.Counts{Messages: 4, ToolIters: 5, ToolCalls: 5}), "", "", ""},
		{"message without a role", allLimits, abi.Event{Event: abi.EventMessageAdded, Counts: abi.Counts{Messages: 50, ToolIters: 9}}, "", "", ""},
		{"initial conversation too long", allLimits, abi.Event{Event: abi.EventBeforeInvocation, Counts: abi.Counts{Messages: 10}}, abi.StopMaxMessages, messages, ""},
		{"initial conversation fits", allLimits, abi.Event{Event: abi.EventBeforeInvocation, Counts: abi.Counts{Messages: 9, ToolIters: 9, ToolCalls: 9}}, "", "", ""},
		{"parallel call within limit", allLimits, call(1), "", "", ""},
		{"parallel call beyond limit", allLimits, call(2), "", "", cancel},
		{"parallel call far beyond limit", allLimits, call(7), "", "", cancel},
		{"tool call without an index", allLimits, abi.Event{Event: abi.EventBeforeToolCall, ToolCall: &abi.ToolCall{Name: "calculator", Arguments: abi.RawJSON(`{}`)}}, "", "", ""},
		{"unsubscribed event", allLimits, abi.Event{Event: abi.EventEpisodeEnd, Counts: abi.Counts{Messages: 99, ToolIters: 99, ToolCalls: 99}}, "", "", ""},
		{"no limits: tool result", noLimits, msg(abi.RoleTool, abi.Counts{Messages: 1e6, ToolIters: 1e6, ToolCalls: 1e6}), "", "", ""},
		{"no limits: start", noLimits, abi.Event{Event: abi.EventBeforeInvocation, Counts: abi.Counts{Messages: 1e6}}, "", "", ""},
		{"no limits: parallel call", noLimits, call(100), "", "", ""},
	}
	ctx := context.Background()
	for _, tt := range tests {
		for _, cfg := range tt.cfgs {
			ev := tt.ev
			ev.EpisodeID = "ep-1"
			resp, err := hooks[cfg].Handle(ctx, &ev)
			if err != nil {
				t.Fatalf("%s (config %s): %v", tt.name, cfg, err)
			}
			var stop, stopM, cancel string
			if resp.Stop != nil {
				stop, stopM = resp.Stop.Reason, resp.Stop.Message
			}
			if resp.CancelTool != nil {
				cancel = *resp.CancelTool
			}
			if stop != tt.stop || stopM != tt.stopM || cancel != tt.cancel || resp.ToolArguments != nil || resp.ToolResult != nil || resp.Reward != nil || resp.Metrics != nil || resp.State != nil {
				t.Errorf("%s (config %s): %+v; want stop %q %q, cancel %q", tt.name, cfg, resp, tt.stop, tt.stopM, tt.cancel)
			}
		}
	}
}

// TestLimiterRawEvents feeds the limiter events the host's encoder never writes, to pin how it reads them: an
// escaped role, numbers spelled as floats, and fields of the wrong type.
func TestLimiterRawEvents(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1,
		Config: []byte(`{"max_tool_iters": 2, "max_parallel_tool_calls": 2, "max_messages": 10}`)})
	const none = `{"ok":{}}`
	tests := []struct{ in, want string }{
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2},"message":{"role":"t\u006fol"}}`, `{"ok":{"stop":{"reason":"max_tool_iters","message":"Max tool iterations (2) reached."}}}`},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2.0},"message":{"role":"tool"}}`, `{"ok":{"stop":{"reason":"max_tool_iters","message":"Max tool iterations (2) reached."}}}`},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2.5},"message":{"role":"tool"}}`, none},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":"2"},"message":{"role":"tool"}}`, none},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2},"message":{"role":"TOOL"}}`, none},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2},"message":{"role":7}}`, none},
		{`{"event":"message_added","counts":{"messages":3,"tool_iters":2},"message":"tool"}`, none},
		{`{"event":"message_added","counts":[10],"message":{"role":"user"}}`, none},
		{`{"event":"message_added","counts":{"messages":1e1},"message":{"role":"user"}}`, `{"ok":{"stop":{"reason":"max_messages","message":"Max messages (10) reached."}}}`},
		{`{"event":"before_tool_call","tool_call":{"name":"x","arguments":{"index":0},"index":2.0}}`, `{"ok":{"cancel_tool":"Max parallel tool calls (2) reached. This tool call was not executed."}}`},
		{`{"event":"before_tool_call","tool_call":{"name":"x","index":"2"}}`, none},
		{`{"event":"before_tool_call","tool_call":{"name":"x","index":1.5}}`, none},
		{`{"event":"before_tool_call","tool_call":{"name":"x","index":-3}}`, none},
		{`{"event":"before_tool_call","tool_call":{"name":"x","index":1e30}}`, none},
		{`{"event":"before_tool_call","tool_call":{"name":"x","index":9223372036854775807}}`, `{"ok":{"cancel_tool":"Max parallel tool calls (2) reached. This tool call was not executed."}}`},
		{`{"event":"before_invocation","counts":{"messages":9223372036854775807}}`, `{"ok":{"stop":{"reason":"max_messages","message":"Max messages (10) reached."}}}`},
		{`{"event":"before_invocation","counts":{"messages":-5}}`, none},
	}
	for _, tt := range tests {
		out, err := m.CallRaw(context.Background(), []byte(tt.in))
		if err != nil || string(out) != tt.want {
			t.Errorf("CallRaw(%s) = %s, %v; want %s", tt.in, out, err, tt.want)
		}
	}
}

func TestLimiterManifest(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	mf := loadLimiter(t, h, "").Module().Manifest()
	want := abi.Manifest{ABIVersion: 1, Kind: abi.KindHook, Name: "loop_limiter", Version: "1.0.0",
		Description:  "Stops the agent loop at tool-iteration, tool-call and message limits; cancels extra parallel tool calls.",
		Events:       []string{abi.EventBeforeInvocation, abi.EventMessageAdded, abi.EventBeforeToolCall},
		MessageRoles: []string{abi.RoleUser, abi.RoleTool},
		ConfigSchema: abi.RawJSON(`{"type":"object","additionalProperties":false,"properties":{` +
			`"max_tool_iters":{"type":"integer","minimum":0},"max_tool_calls":{"type":"integer","minimum":0},` +
			`"max_parallel_tool_calls":{"type":"integer","minimum":0},"max_messages":{"type":"integer","minimum":0}}}`)}
	if fmt.Sprintf("%+v", mf) != fmt.Sprintf("%+v", want) || string(mf.ConfigSchema) != string(want.ConfigSchema) {
		t.Errorf("manifest\n %+v\nwant\n %+v", mf, want)
	}
}

// TestLimiterConfigErrors checks that a bad config fails the load with the limiter's exact bad_config message.
func TestLimiterConfigErrors(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	const keys = "(want max_tool_iters, max_tool_calls, max_parallel_tool_calls, max_messages)"
	unknown := func(k string) string { return fmt.Sprintf("unknown key %q %s", k, keys) }
	tests := []struct{ cfg, want string }{
		{`{"max_tool_iter": 3}`, unknown("max_tool_iter")},
		{`{"max_messages": 3, "bogus": 1}`, unknown("bogus")},
		{`{"bogus": 1, "max_messages": -1}`, unknown("bogus")}, // members are checked in order
		{`{"max_messages\u0000": 1}`, unknown("max_messages\x00")},
		{`{"tab\there \"quoted\" back\\slash \u00e9\u00a0\u200b\ud83d\ude00\ud800\u0378\ue000\u007f\u001b\u000b": 1}`,
			unknown("tab\there \"quoted\" back\\slash \u00e9\u00a0\u200b\U0001F600\uFFFD\u0378\ue000\x7f\x1b\v")},
		{`{"max_tool_iters": -1}`, "max_tool_iters must be a non-negative integer, got -1"},
		{`{"max_tool_calls": 1.5}`, "max_tool_calls must be a non-negative integer, got 1.5"},
		{`{"max_parallel_tool_calls": "4"}`, `max_parallel_tool_calls must be a non-negative integer, got "4"`},
		{`{"max_messages": "ten"}`, `max_messages must be a non-negative integer, got "ten"`},
		{`{"max_messages": true}`, "max_messages must be a non-negative integer, got true"},
		{`{"max_messages": [1, 2]}`, "max_messages must be a non-negative integer, got [1,2]"},
		{`{"max_messages": {"n": 1}}`, `max_messages must be a non-negative integer, got {"n":1}`},
		{`{"max_messages": 1e400}`, "max_messages must be a non-negative integer, got 1e400"},
		{`{"max_messages": 5e-324}`, "max_messages must be a non-negative integer, got 5e-324"},
		{`{"max_messages": -0.5}`, "max_messages must be a non-negative integer, got -0.5"},
		{`{"max_messages": 1e19}`, "max_messages must be a non-negative integer, got 1e19"},
		{`{"max_messages": -1, "max_messages": 3}`, "max_messages must be a non-negative integer, got -1"},
		{`[1]`, "config must be a JSON object: fastjson: expected an object at offset 0"},
		{`"x"`, "config must be a JSON object: fastjson: expected an object at offset 0"},
		{`3`, "config must be a JSON object: fastjson: expected an object at offset 0"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		_, err := h.Load(ctx, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1, Config: []byte(tt.cfg)})
		var le *plugin.LoadError
		var ge *plugin.GuestError
		if !errors.As(err, &le) || !errors.As(err, &ge) || ge.Code != abi.CodeBadConfig || ge.Message != tt.want {
			t.Errorf("config %s: %v\nwant a LoadError wrapping a bad_config GuestError with message\n  %s", tt.cfg, err, tt.want)
		}
	}
	// Accepted: -0, a null member, an underflow to 0, integral floats, the int64 edge (2^63 saturates to the largest
	// int64).
	for _, cfg := range []string{`{"max_messages": -0}`, `{"max_messages": -0.0}`, `{"max_messages": null}`, `{"max_messages": 1e-400}`,
		`{"max_messages": 9223372036854775807}`, `{"max_messages": 9223372036854775808}`, `{"max_messages": 9.2e18}`} {
		if _, err := h.Load(ctx, plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1, Config: []byte(cfg)}); err != nil {
			t.Errorf("config %s refused: %v", cfg, err)
		}
	}
	// The last of duplicate keys is the limit.
	hook := loadLimiter(t, h, `{"max_messages": 3, "max_messages": 4}`)
	resp, err := hook.Handle(ctx, &abi.Event{Event: abi.EventBeforeInvocation, Counts: abi.Counts{Messages: 3}})
	if err != nil || resp.Stop != nil {
		t.Errorf("duplicate key: %+v, %v; want the last value (4) to count", resp, err)
	}
}

// TestLimiterQuotesEveryRune checks the limiter's quoting of an unknown config key against Go's %q over every code
// point: a guest not written in Go needs Go's table of printable runes to match it.
func TestLimiterQuotesEveryRune(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	const chunk = 1 << 16 // runes per key: the error message stays under the 1 MiB output limit
	for lo := rune(0); lo <= utf8.MaxRune; lo += chunk {
		var sb strings.Builder
		for r := lo; r < lo+chunk && r <= utf8.MaxRune; r++ {
			if utf8.ValidRune(r) { // not a surrogate
				sb.WriteRune(r)
			}
		}
		key := sb.String()
		cfg, err := json.Marshal(map[string]int{key: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Load(context.Background(), plugin.Spec{Name: "builtin:limiter", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1, Config: cfg})
		want := fmt.Sprintf("unknown key %q (want max_tool_iters, max_tool_calls, max_parallel_tool_calls, max_messages)", key)
		var ge *plugin.GuestError
		if !errors.As(err, &ge) || ge.Message != want {
			got := fmt.Sprint(err)
			if ge != nil {
				got = ge.Message
			}
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("key of runes U+%04X..: message differs from %%q at byte %d: got %.40q, want %.40q", lo, i, got[min(i, len(got)):], want[i:])
		}
	}
}

// BenchmarkLimiterHookTurn measures the limiter on the events of a realistic tool-calling turn: the assistant
// message (~400 bytes of content, two tool calls), a before_tool_call, and a tool result message.
func BenchmarkLimiterHookTurn(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	hook := loadLimiter(b, h, `{"max_tool_iters":5,"max_tool_calls":10,"max_parallel_tool_calls":4,"max_messages":32}`)
	counts := abi.Counts{Messages: 8, ModelCalls: 3, ToolIters: 3, ToolCalls: 5, PromptTokens: 1210, ResponseTokens: 655}
	content := strings.Repeat("The user wants the weather in Paris and the local time there. ", 6) + "I'll look both up."
	index := 1
	events := []struct {
		name string
		ev   abi.Event
	}{
		{"assistant", abi.Event{Event: abi.EventMessageAdded, EpisodeID: "episode-000001", Turn: 3, Counts: counts,
			Message: &abi.Message{Role: abi.RoleAssistant, Content: content, ToolCalls: []abi.ToolCall{
				{ID: "call_5", Name: "get_weather", Arguments: abi.RawJSON(`{"city":"Paris","unit":"celsius","days":3}`)},
				{ID: "call_6", Name: "get_time", Arguments: abi.RawJSON(`{"tz":"Europe/Paris"}`)}}}}},
		{"before_tool_call", abi.Event{Event: abi.EventBeforeToolCall, EpisodeID: "episode-000001", Turn: 3, Counts: counts,
			ToolCall: &abi.ToolCall{ID: "call_6", Name: "get_time", Arguments: abi.RawJSON(`{"tz":"Europe/Paris"}`), Index: &index}}},
		{"tool", abi.Event{Event: abi.EventMessageAdded, EpisodeID: "episode-000001", Turn: 3, Counts: counts,
			Message: &abi.Message{Role: abi.RoleTool, ToolCallID: "call_5", Name: "get_weather", Content: `{"temperature": 21, "sky": "clear", "wind_kmh": 12}`}}},
	}
	for _, e := range events {
		b.Run(e.name, func(b *testing.B) {
			resp, err := hook.Handle(ctx, &e.ev)
			if err != nil || resp.Stop != nil || resp.CancelTool != nil {
				b.Fatalf("%+v %v", resp, err)
			}
			measure(b, func() error { _, err := hook.Handle(ctx, &e.ev); return err })
		})
	}
}

// TestLimiterMessageRoles checks message_roles end to end: the limiter (C SDK, agentrt_message_role) declares user and
// tool, and the host calls it for those messages only. With a cancelled context a call that reaches the guest fails
// (the instance is never acquired); one the host skips answers the zero response.
func TestLimiterMessageRoles(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	hook := loadLimiter(t, h, `{"max_messages": 1}`)
	if got := hook.Module().Manifest().MessageRoles; !slices.Equal(got, []string{abi.RoleUser, abi.RoleTool}) {
		t.Fatalf("manifest message_roles %v, want [user tool]", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	counts := abi.Counts{Messages: 5}
	for _, tt := range []struct {
		ev     *abi.Event
		called bool
	}{
		{&abi.Event{Event: abi.EventMessageAdded, Counts: counts, Message: &abi.Message{Role: abi.RoleAssistant, Content: "hi"}}, false},
		{&abi.Event{Event: abi.EventMessageAdded, Counts: counts, Message: &abi.Message{Role: abi.RoleSystem, Content: "be brief"}}, false},
		{&abi.Event{Event: abi.EventMessageAdded, Counts: counts, Message: &abi.Message{Role: abi.RoleTool, Content: "42"}}, true},
		{&abi.Event{Event: abi.EventMessageAdded, Counts: counts, Message: &abi.Message{Role: abi.RoleUser, Content: "and?"}}, true},
		{&abi.Event{Event: abi.EventBeforeToolCall, Counts: counts, ToolCall: &abi.ToolCall{Name: "calculator"}}, true},
	} {
		r, err := hook.Handle(ctx, tt.ev)
		if called := err != nil; called != tt.called || (!called && !reflect.DeepEqual(r, abi.HookResponse{})) {
			t.Errorf("%s %+v: response %+v, error %v; want the guest called: %v", tt.ev.Event, tt.ev.Message, r, err, tt.called)
		}
	}
	// And with a live context the limiter still stops on a tool message past max_messages.
	r, err := hook.Handle(context.Background(), &abi.Event{Event: abi.EventMessageAdded, Counts: counts, Message: &abi.Message{Role: abi.RoleTool, Content: "42"}})
	if err != nil || r.Stop == nil || r.Stop.Reason != "max_messages" {
		t.Fatalf("tool message past max_messages: %+v, %v; want a max_messages stop", r, err)
	}
}
