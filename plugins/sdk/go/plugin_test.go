package sdk

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// These tests drive the SDK's ABI core natively (the wasm exports in exports_wasip1.go only move bytes): every
// output must be a valid envelope that the host's types decode.

func decodeEnv(t *testing.T, out []byte) abi.Envelope {
	t.Helper()
	var env abi.Envelope
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatalf("output %s is not a JSON envelope: %v", out, err)
	}
	if (env.OK == nil) == (env.Error == nil) {
		t.Fatalf("output %s: want exactly one of ok and error", out)
	}
	return env
}

func TestToolsModule(t *testing.T) {
	var m module
	m.register(nil, &Tools{
		Info:  Info{Name: "t", Version: "1", Description: "d \"q\"", ConfigSchema: RawJSON(`{"type":"object"}`)},
		Specs: []ToolSpec{{Name: "echo", Description: "e", Parameters: RawJSON(`{"type":"object"}`)}, {Name: "fail"}, {Name: "boom"}},
		Call: func(name string, args Value) (Result, error) {
			switch name {
			case "echo":
				return JSON(append([]byte(nil), args...)), nil
			case "fail":
				return Result{}, Errorf("nope", "failed on %s", args.Get("x").StrOr("?"))
			case "boom":
				panic("kaboom")
			}
			return Text("unreachable"), nil
		},
	}, nil)
	var mf abi.Manifest
	if err := json.Unmarshal(m.describe(), &mf); err != nil {
		t.Fatal(err)
	}
	if mf.ABIVersion != 1 || mf.Kind != abi.KindTool || mf.Name != "t" || mf.Description != `d "q"` || len(mf.Tools) != 3 || string(mf.ConfigSchema) != `{"type":"object"}` {
		t.Fatalf("manifest %+v", mf)
	}
	if env := decodeEnv(t, m.init([]byte(`{"config":null,"tools":[]}`))); string(env.OK) != `{}` {
		t.Fatalf("init: %+v", env)
	}
	tests := []struct {
		in, wantOK, wantCode, wantMsg string
	}{
		{`{"name":"echo","arguments":{"a":[1,"x"]}}`, `{"json":{"a":[1,"x"]}}`, "", ""},
		{`{"name":"fail","arguments":{"x":"y"}}`, "", "nope", "failed on y"},
		{`{"name":"boom","arguments":{}}`, "", "internal", "panic: kaboom"},
		{`{"name":"other","arguments":{}}`, "", "unknown_tool", `unknown tool "other"`},
		{`{"arguments":{}}`, "", "bad_input", "tool call without a name"},
	}
	for _, tt := range tests {
		env := decodeEnv(t, m.call([]byte(tt.in)))
		if tt.wantOK != "" {
			if string(env.OK) != tt.wantOK {
				t.Errorf("call %s = %s, want %s", tt.in, env.OK, tt.wantOK)
			}
			continue
		}
		if env.Error == nil || env.Error.Code != tt.wantCode || env.Error.Message != tt.wantMsg {
			t.Errorf("call %s = %+v, want error %s %q", tt.in, env, tt.wantCode, tt.wantMsg)
		}
	}
}

func TestToolsInitReplacesSpecs(t *testing.T) {
	var m module
	m.register(nil, &Tools{
		Info:  Info{Name: "t"},
		Specs: []ToolSpec{{Name: "a"}},
		Init: func(cfg Value) ([]ToolSpec, error) {
			if cfg.Get("bad").Exists() {
				return nil, errors.New("bad config")
			}
			return []ToolSpec{{Name: cfg.Get("name").StrOr("b")}}, nil
		},
		Call: func(name string, args Value) (Result, error) { return Text(name), nil },
	}, nil)
	env := decodeEnv(t, m.init([]byte(`{"config":{"name":"zed"},"tools":[]}`)))
	var ir abi.InitResult
	if err := json.Unmarshal(env.OK, &ir); err != nil || len(ir.Tools) != 1 || ir.Tools[0].Name != "zed" {
		t.Fatalf("init result %s: %+v %v", env.OK, ir, err)
	}
	if env := decodeEnv(t, m.call([]byte(`{"name":"a","arguments":{}}`))); env.Error == nil || env.Error.Code != "unknown_tool" {
		t.Fatalf("call of a replaced tool: %+v", env)
	}
	if env := decodeEnv(t, m.call([]byte(`{"name":"zed","arguments":{}}`))); string(env.OK) != `{"text":"zed"}` {
		t.Fatalf("call of the new tool: %s", env.OK)
	}
	if env := decodeEnv(t, m.init([]byte(`{"config":{"bad":1},"tools":[]}`))); env.Error == nil || env.Error.Code != abi.CodeBadConfig || env.Error.Message != "bad config" {
		t.Fatalf("bad config: %+v", env)
	}
}

func TestParserModule(t *testing.T) {
	var m module
	var gotTools []ToolSpec
	m.register(&Parser{
		Info: Info{Name: "p"},
		Init: func(cfg Value, tools []ToolSpec) error { gotTools = tools; return nil },
		Parse: func(text string, out *ParseOutput) {
			if _, ok := out.Tool("get_weather"); !ok {
				out.AddError(abi.ReasonUnknownTool, "no tools", text, 0, len(text))
				return
			}
			if err := out.AddCall("", "get_weather", []byte(` {"city":"Paris"}`), 3, 10); err != nil {
				t.Error(err)
			}
			if err := out.AddCall("c1", "get_weather", []byte(`[1]`), 0, 1); err == nil {
				t.Error("AddCall accepted non-object arguments")
			}
			out.AddError(abi.ReasonMalformedJSON, "bad \"json\"\n", "<tool_call>{</tool_call>", 11, 35)
			out.AppendNormal("héllo\t")
			out.AppendNormal("world")
		},
	}, nil, nil)
	init := `{"config":{"x":1},"tools":[{"name":"get_weather","description":"w","parameters":{"type":"object"}}]}`
	if env := decodeEnv(t, m.init([]byte(init))); string(env.OK) != `{}` {
		t.Fatalf("init %+v", env)
	}
	if len(gotTools) != 1 || gotTools[0].Name != "get_weather" || string(gotTools[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("tools at init %+v", gotTools)
	}
	for i := 0; i < 2; i++ { // the second call reuses every buffer
		env := decodeEnv(t, m.call([]byte(strings.Repeat("x", 40))))
		var pr abi.ParseResult
		if err := json.Unmarshal(env.OK, &pr); err != nil {
			t.Fatal(err)
		}
		if len(pr.Calls) != 1 || pr.Calls[0].Name != "get_weather" || string(pr.Calls[0].Arguments) != `{"city":"Paris"}` || pr.Calls[0].Span != (abi.Span{3, 10}) ||
			len(pr.Errors) != 1 || pr.Errors[0].Message != "bad \"json\"\n" || pr.Errors[0].Span != (abi.Span{11, 35}) || pr.NormalText != "héllo\tworld" {
			t.Fatalf("call %d: %s", i, env.OK)
		}
	}
}

func TestHookModule(t *testing.T) {
	var m module
	m.register(nil, nil, &Hook{
		Info:         Info{Name: "h"},
		Events:       []string{abi.EventMessageAdded, abi.EventEpisodeEnd},
		MessageRoles: []string{abi.RoleTool, abi.RoleUser},
		Handle: func(ev Event) (Response, error) {
			var r Response
			c := ev.Counts()
			switch ev.Name() {
			case abi.EventMessageAdded:
				if ev.Message().Get("role").StrOr("") == "tool" && c.ToolCalls >= 2 && ev.EpisodeID() == "e\"1" && ev.Turn() == 4 {
					r.Stop = &Stop{Reason: "custom", Message: "enough"}
					msg := "cancelled"
					r.CancelTool = &msg
				}
				r.State = RawJSON(`{"seen":` + string(ev.State().Get("seen")) + `}`)
			case abi.EventEpisodeEnd:
				reward := 0.5
				r.Reward = &reward
				r.Metrics = map[string]float64{"z": 1, "a": 2.5}
				text := "new"
				r.ToolResult = &abi.ToolResult{Text: &text, IsError: true}
			}
			return r, nil
		},
	})
	var mf abi.Manifest
	if err := json.Unmarshal(m.describe(), &mf); err != nil || len(mf.Events) != 2 || !slices.Equal(mf.MessageRoles, []string{"tool", "user"}) {
		t.Fatalf("manifest %s: %v", m.describe(), err)
	}
	ev := `{"event":"message_added","episode_id":"e\"1","turn":4,"counts":{"messages":3,"tool_calls":2},"state":{"seen":7},"message":{"role":"tool","content":"x"}}`
	env := decodeEnv(t, m.call([]byte(ev)))
	want := `{"stop":{"reason":"custom","message":"enough"},"cancel_tool":"cancelled","state":{"seen":7}}`
	if string(env.OK) != want {
		t.Fatalf("message_added -> %s\nwant %s", env.OK, want)
	}
	env = decodeEnv(t, m.call([]byte(`{"event":"episode_end","episode_id":"e","turn":9,"counts":{}}`)))
	want = `{"tool_result":{"text":"new","is_error":true},"reward":0.5,"metrics":{"a":2.5,"z":1}}`
	if string(env.OK) != want {
		t.Fatalf("episode_end -> %s\nwant %s", env.OK, want)
	}
}

func TestNoPluginRegistered(t *testing.T) {
	var m module
	if env := decodeEnv(t, m.init([]byte(`{}`))); env.Error == nil || !strings.Contains(env.Error.Message, "no plugin registered") {
		t.Fatalf("%+v", env)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration did not panic")
		}
	}()
	m.register(&Parser{}, nil, nil)
	m.register(&Parser{}, nil, nil)
}

// TestMessagesRoundTrip: a before_generate hook reads the event's messages with MessageOf and answers with
// messages that the host decodes as it decodes any hook response (encoding/json into abi.HookResponse).
func TestMessagesRoundTrip(t *testing.T) {
	in := `{"event":"before_generate","messages":[{"role":"system","content":"s \"q\""},` +
		`{"role":"assistant","content":"","reasoning_content":"r","tool_calls":[{"id":"c1","name":"calc","arguments":{"x":[1,2]}}]},` +
		`{"role":"tool","content":"3","tool_call_id":"c1","name":"calc"}],"context_tokens":812}`
	ev := newEvent([]byte(in))
	var msgs []abi.Message
	if err := ev.Get("messages").Elems(func(v Value) bool { msgs = append(msgs, MessageOf(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if ev.Get("context_tokens").IntOr(0) != 812 || len(msgs) != 3 {
		t.Fatalf("read %d messages, context %d", len(msgs), ev.Get("context_tokens").IntOr(0))
	}
	out := AppendResponse(nil, &Response{Messages: msgs})
	var back abi.HookResponse
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var want struct {
		Messages []abi.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(back.Messages)
	b, _ := json.Marshal(want.Messages)
	if string(a) != string(b) {
		t.Fatalf("round trip:\n%s\nwant\n%s", a, b)
	}
}
