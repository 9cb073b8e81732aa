package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// One example per SDK and plugin kind: the same plugin written with each SDK, the code blocks of the SDK reference
// pages (plugins/sdk/*/README.md; scripts/test.d/30-sdk-references.sh keeps the pages and these files equal, and
// builds the pages' blocks from scratch with `make plugin`).
var kinds = map[string][]string{
	"tool":   {"c-repeat/repeat.wasm", "rust-repeat/repeat.wasm", "as-repeat/repeat.wasm", "go-repeat/repeat.wasm"},
	"hook":   {"c-stop-phrase/stop_phrase.wasm", "rust-stop-phrase/stop_phrase.wasm", "as-stop-phrase/stop_phrase.wasm", "go-stop-phrase/stop_phrase.wasm"},
	"reward": {"c-reward/reward.wasm", "rust-reward/reward.wasm", "as-reward/reward.wasm", "go-reward/reward.wasm"},
	"parser": {"c-xmltag/xmltag.wasm", "rust-xmltag/xmltag.wasm", "as-xmltag/xmltag.wasm", "go-xmltag/xmltag.wasm"},
}

func TestRepeatTools(t *testing.T) {
	h := newHost(t)
	for _, f := range kinds["tool"] {
		t.Run(f, func(t *testing.T) { checkRepeat(t, h, f) })
	}
}

func TestStopPhraseHooks(t *testing.T) {
	h := newHost(t)
	for _, f := range kinds["hook"] {
		t.Run(f, func(t *testing.T) { checkStopPhrase(t, h, f) })
	}
}

func TestRewardHooks(t *testing.T) {
	h := newHost(t)
	for _, f := range kinds["reward"] {
		t.Run(f, func(t *testing.T) { checkReward(t, h, f) })
	}
}

func TestXMLTagParsers(t *testing.T) {
	h := newHost(t)
	for _, f := range kinds["parser"] {
		t.Run(f, func(t *testing.T) { checkXMLTag(t, h, f) })
	}
}

// TestReferencePlugins checks the modules named in AGENTRT_REFERENCE_WASM ("KIND=FILE ...", KIND one of tool, hook,
// reward): scripts/test.d/30-sdk-references.sh builds each SDK reference page's plugins from a fresh template with
// the page's own commands and runs this on them. Skipped when the variable is unset.
func TestReferencePlugins(t *testing.T) {
	specs := strings.Fields(os.Getenv("AGENTRT_REFERENCE_WASM"))
	if len(specs) == 0 {
		t.Skip("AGENTRT_REFERENCE_WASM is not set (scripts/test.d/30-sdk-references.sh sets it)")
	}
	h := newHost(t)
	check := map[string]func(*testing.T, *plugin.Host, string){"tool": checkRepeat, "hook": checkStopPhrase, "reward": checkReward}
	for _, s := range specs {
		kind, file, _ := strings.Cut(s, "=")
		fn := check[kind]
		if fn == nil {
			t.Fatalf("AGENTRT_REFERENCE_WASM: %q: want KIND=FILE with KIND tool, hook or reward", s)
		}
		t.Run(s, func(t *testing.T) { fn(t, h, file) })
	}
}

// loadErr loads file with config and returns the load error (nil when it loads).
func loadErr(h *plugin.Host, file, config string) error {
	wasm, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	m, err := h.Load(context.Background(), plugin.Spec{Name: file, Wasm: wasm, Config: []byte(config), PoolSize: 1})
	if err == nil {
		m.Close(context.Background())
	}
	return err
}

// wantRefused checks that each config is refused at load with a bad_config error and exactly the message.
func wantRefused(t *testing.T, h *plugin.Host, file string, configs [][2]string) {
	t.Helper()
	for _, c := range configs {
		err := loadErr(h, file, c[0])
		var le *plugin.LoadError
		var ge *plugin.GuestError
		if !errors.As(err, &le) || !errors.As(err, &ge) || ge.Code != abi.CodeBadConfig || ge.Message != c[1] {
			t.Errorf("config %s: load error %v, want a bad_config refusal %q", c[0], err, c[1])
		}
	}
}

func wantManifest(t *testing.T, m *plugin.Module, kind, name string, tools, events []string) {
	t.Helper()
	mf := m.Manifest()
	var names []string
	for _, s := range mf.Tools {
		names = append(names, s.Name)
	}
	if mf.Kind != kind || mf.Name != name || mf.Version != "1.0.0" || mf.Description == "" || len(mf.ConfigSchema) == 0 ||
		!slices.Equal(names, tools) || !slices.Equal(mf.Events, events) {
		t.Errorf("manifest %+v, want a %s %s 1.0.0 with a description, a config schema, tools %v and events %v", mf, kind, name, tools, events)
	}
}

// checkRepeat checks a repeat tool (plugins/examples/*-repeat): typed arguments, config, error results.
func checkRepeat(t *testing.T, h *plugin.Host, file string) {
	m := load(t, h, file, "")
	wantManifest(t, m, abi.KindTool, "repeat", []string{"repeat"}, nil)
	tl, _ := m.Tool()
	ok := func(tl *plugin.Tool, args, want string) {
		t.Helper()
		if r := call(t, tl, "repeat", json.RawMessage(args)); r.IsError || r.Text != want {
			t.Errorf("repeat(%s) = %+v, want the text %q", args, r, want)
		}
	}
	ok(tl, `{"text":"ab","times":3}`, "ab ab ab")
	ok(tl, `{"text":"ab","times":2,"upper":true}`, "AB AB")
	ok(tl, `{"text":"hé","times":2.0,"upper":true,"unused":1}`, "Hé Hé") // ASCII letters only
	ok(tl, `{"text":"x","times":1,"upper":null}`, "x")
	for args, msg := range map[string]string{
		`{"times":2}`:                         `repeat: argument "text" must be a string`,
		`{"text":5,"times":2}`:                `repeat: argument "text" must be a string`,
		`{"text":"a","times":"2"}`:            `repeat: argument "times" must be an integer from 1 to 10`,
		`{"text":"a","times":0}`:              `repeat: argument "times" must be an integer from 1 to 10`,
		`{"text":"a","times":11}`:             `repeat: argument "times" must be an integer from 1 to 10`,
		`{"text":"a","times":1.5}`:            `repeat: argument "times" must be an integer from 1 to 10`,
		`{"text":"a","times":2,"upper":"no"}`: `repeat: argument "upper" must be a boolean`,
	} {
		wantError(t, call(t, tl, "repeat", json.RawMessage(args)), abi.CodeBadInput, msg)
	}
	wantError(t, call(t, tl, "shout", json.RawMessage(`{}`)), abi.CodeUnknownTool, "shout")
	cm := load(t, h, file, `{"separator":"-","max_bytes":5}`)
	ctl, _ := cm.Tool()
	ok(ctl, `{"text":"ab","times":2}`, "ab-ab")
	wantError(t, call(t, ctl, "repeat", json.RawMessage(`{"text":"ab","times":3}`)), "too_long", "the result would be 8 bytes, more than max_bytes (5)")
	wantRefused(t, h, file, [][2]string{
		{`[1]`, "config must be a table"},
		{`{"separator":1}`, "separator must be a string"},
		{`{"max_bytes":0}`, "max_bytes must be an integer >= 1"},
		{`{"max_bytes":2.5}`, "max_bytes must be an integer >= 1"},
		{`{"sep":"-"}`, `unknown key "sep" (known: separator, max_bytes)`},
	})
}

// checkStopPhrase checks a stop_phrase hook (plugins/examples/*-stop-phrase): config, state, stop.
func checkStopPhrase(t *testing.T, h *plugin.Host, file string) {
	m := load(t, h, file, `{"phrase":"DONE"}`)
	wantManifest(t, m, abi.KindHook, "stop_phrase", nil, []string{abi.EventMessageAdded})
	if got := m.Manifest().MessageRoles; !slices.Equal(got, []string{abi.RoleAssistant}) {
		t.Errorf("message_roles %v, want [assistant] (the SDK's message role call)", got)
	}
	msg := func(role, content string, state string) *abi.Event {
		ev := &abi.Event{Event: abi.EventMessageAdded, EpisodeID: "ep", Turn: 1, Message: &abi.Message{Role: role, Content: content}}
		if state != "" {
			ev.State = abi.RawJSON(state)
		}
		return ev
	}
	handle := func(m *plugin.Module, ev *abi.Event, want abi.HookResponse) {
		t.Helper()
		hk, _ := m.Hook()
		got, err := hk.Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		got.State, want.State = compact(t, got.State), compact(t, want.State)
		if !reflect.DeepEqual(got, want) {
			gs, _ := json.Marshal(got)
			ws, _ := json.Marshal(want)
			t.Errorf("%s %q (state %s): response %s, want %s", ev.Message.Role, ev.Message.Content, ev.State, gs, ws)
		}
	}
	stop := func(msg string) *abi.Stop { return &abi.Stop{Reason: "stop_phrase", Message: msg} }
	handle(m, msg("assistant", "all DONE now", ""), abi.HookResponse{State: abi.RawJSON(`{"hits":1}`), Stop: stop(`the model wrote "DONE" (1 of 1)`)})
	handle(m, msg("assistant", "not yet", ""), abi.HookResponse{})
	handle(m, msg("user", "DONE", ""), abi.HookResponse{})
	twice := load(t, h, file, `{"phrase":"DONE","after":2}`)
	handle(twice, msg("assistant", "DONE", ""), abi.HookResponse{State: abi.RawJSON(`{"hits":1}`)})
	handle(twice, msg("assistant", "DONE", `{"hits":1}`), abi.HookResponse{State: abi.RawJSON(`{"hits":2}`), Stop: stop(`the model wrote "DONE" (2 of 2)`)})
	wantRefused(t, h, file, [][2]string{
		{``, "phrase must be a non-empty string"},
		{`{"phrase":""}`, "phrase must be a non-empty string"},
		{`{"phrase":7}`, "phrase must be a non-empty string"},
		{`{"phrase":"x","after":0}`, "after must be an integer >= 1"},
		{`{"phrase":"x","after":"2"}`, "after must be an integer >= 1"},
		{`{"phrase":"x","when":1}`, `unknown key "when" (known: phrase, after)`},
		{`"DONE"`, "config must be a table"},
	})
}

func compact(t *testing.T, raw abi.RawJSON) abi.RawJSON {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("state %s: %v", raw, err)
	}
	return b.Bytes()
}

// checkReward checks a label_reward hook (plugins/examples/*-reward): config at init, the reward and metrics at
// episode_end, and refused configs.
func checkReward(t *testing.T, h *plugin.Host, file string) {
	conv := []abi.Message{
		{Role: abi.RoleUser, Content: "What is the capital of France?"},
		{Role: abi.RoleAssistant, Content: "Let me check.", ToolCalls: []abi.ToolCall{{Name: "search", Arguments: abi.RawJSON(`{}`)}}},
		{Role: abi.RoleTool, Content: "Paris is the capital of France."},
		{Role: abi.RoleAssistant, Content: "The answer is PARIS."},
	}
	end := func(label string) *abi.Event {
		ev := &abi.Event{Event: abi.EventEpisodeEnd, EpisodeID: "ep-1", Turn: 2, Status: abi.StatusCompleted,
			Counts: abi.Counts{ToolCalls: 1, ToolIters: 1, Messages: 4}, Messages: conv}
		if label != "" {
			ev.Label = abi.RawJSON(args(t, label))
		}
		return ev
	}
	m := load(t, h, file, "")
	wantManifest(t, m, abi.KindHook, "label_reward", nil, []string{abi.EventEpisodeEnd})
	tests := []struct {
		name, config, label string
		want                abi.HookResponse
	}{
		{"correct", "", "Paris", abi.HookResponse{Reward: f64(1), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 1}}},
		{"white space and case", "", " paris\n", abi.HookResponse{Reward: f64(1), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 1}}},
		{"wrong", "", "Rome", abi.HookResponse{Reward: f64(0), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 0}}},
		{"no label", "", "", abi.HookResponse{Metrics: map[string]float64{"turns": 2, "tool_calls": 1}}},
		{"config", `{"reward_correct":2.5,"reward_wrong":-1}`, "paris", abi.HookResponse{Reward: f64(2.5), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 1}}},
		{"config wrong", `{"reward_correct":2.5,"reward_wrong":-1}`, "Lyon", abi.HookResponse{Reward: f64(-1), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 0}}},
		{"case sensitive", `{"case_sensitive":true}`, "Paris", abi.HookResponse{Reward: f64(0), Metrics: map[string]float64{"turns": 2, "tool_calls": 1, "correct": 0}}},
	}
	for _, tt := range tests {
		hk, err := load(t, h, file, tt.config).Hook()
		if err != nil {
			t.Fatal(err)
		}
		got, err := hk.Handle(context.Background(), end(tt.label))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: response %+v (reward %v), want %+v (reward %v)", tt.name, got, deref(got.Reward), tt.want, deref(tt.want.Reward))
		}
	}
	wantRefused(t, h, file, [][2]string{
		{`{"reward_correct":"high"}`, "reward_correct must be a number"},
		{`{"reward_wrong":true}`, "reward_wrong must be a number"},
		{`{"case_sensitive":1}`, "case_sensitive must be a boolean"},
		{`{"bonus":1}`, `unknown key "bonus" (known: reward_correct, reward_wrong, case_sensitive)`},
		{`[1]`, "config must be a table"},
	})
}

// xmlCall and xmlError are what the xmltag parsers must find; refXMLTag is the reference (the Go example's rules):
// calls are JSON between the tags with a non-empty string "name" and an object "arguments" (absent: {}); errors
// are unclosed_tag (the rest of the text), malformed_json, missing_name, unknown_tool (tools given, name not among
// them) and bad_arguments; the normal text is everything outside the tags, untrimmed.
type xmlCall struct {
	Name string
	Args string // canonical JSON
	Span abi.Span
}

type xmlError struct {
	Reason string
	Raw    string
	Span   abi.Span
}

func refXMLTag(text, open, close string, known []string) (calls []xmlCall, errs []xmlError, normal string) {
	pos := 0
	for {
		i := strings.Index(text[pos:], open)
		if i < 0 {
			return calls, errs, normal + text[pos:]
		}
		start := pos + i
		normal += text[pos:start]
		j := strings.Index(text[start+len(open):], close)
		if j < 0 {
			return calls, append(errs, xmlError{abi.ReasonUnclosedTag, text[start:], abi.Span{start, len(text)}}), normal
		}
		end := start + len(open) + j + len(close)
		span := abi.Span{start, end}
		pos = end
		var body map[string]json.RawMessage
		raw := text[start+len(open) : start+len(open)+j]
		if !json.Valid([]byte(raw)) {
			errs = append(errs, xmlError{abi.ReasonMalformedJSON, text[start:end], span})
			continue
		}
		var name string
		if json.Unmarshal([]byte(raw), &body) != nil || json.Unmarshal(body["name"], &name) != nil || name == "" {
			errs = append(errs, xmlError{abi.ReasonMissingName, text[start:end], span})
			continue
		}
		if len(known) > 0 && !slices.Contains(known, name) {
			errs = append(errs, xmlError{abi.ReasonUnknownTool, text[start:end], span})
			continue
		}
		a, ok := body["arguments"]
		if !ok {
			a = json.RawMessage(`{}`)
		}
		var obj map[string]any
		if json.Unmarshal(a, &obj) != nil || obj == nil {
			errs = append(errs, xmlError{abi.ReasonBadArguments, text[start:end], span})
			continue
		}
		c, _ := json.Marshal(obj)
		calls = append(calls, xmlCall{name, string(c), span})
	}
}

// checkXMLTag runs an xmltag parser over a corpus (non-ASCII text before calls: spans are UTF-8 byte offsets) with
// and without the agent's tools and with other tags, against refXMLTag.
func checkXMLTag(t *testing.T, h *plugin.Host, file string) {
	corpus := []string{
		"",
		"no calls here",
		`<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, {"n": null}]}}</tool_call>`,
		"héllo 😀 <tool_call>\n{\"name\": \"f\"}\n</tool_call> wörld <tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Zürich\"}}</tool_call>!",
		`a <tool_call>{"name": }</tool_call> b <tool_call>{"arguments": {}}</tool_call> c <tool_call>{"name": ""}</tool_call>`,
		`<tool_call>{"name": "nope", "arguments": {}}</tool_call><tool_call>{"name": "f", "arguments": [1]}</tool_call>`,
		`<tool_call>{"name": "f", "arguments": null}</tool_call> then <tool_call>{"name": "f", "arguments": {}}`,
		`<tool_call>[1, 2]</tool_call><call>{"name": "f"}</call>`,
	}
	tools := []abi.ToolSpec{{Name: "get_weather", Parameters: abi.RawJSON(`{"type":"object"}`)}, {Name: "f"}}
	for _, setup := range []struct {
		name, config, open, close string
		tools                     []abi.ToolSpec
	}{
		{"no tools", "", "<tool_call>", "</tool_call>", nil},
		{"tools", "", "<tool_call>", "</tool_call>", tools},
		{"other tags", `{"open":"<call>","close":"</call>"}`, "<call>", "</call>", tools},
	} {
		wasm, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := h.Load(context.Background(), plugin.Spec{Name: file, Wasm: wasm, Config: []byte(setup.config), Tools: setup.tools, PoolSize: 1})
		if err != nil {
			t.Fatalf("%s: %v", setup.name, err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		if setup.name == "no tools" {
			wantManifest(t, m, abi.KindParser, "xmltag", nil, nil)
		}
		p, _ := m.Parser()
		var known []string
		for _, s := range setup.tools {
			known = append(known, s.Name)
		}
		for _, text := range corpus {
			res, err := p.Parse(context.Background(), text)
			if err != nil {
				t.Fatalf("%s %q: %v", setup.name, text, err)
			}
			var calls []xmlCall
			for _, c := range res.Calls {
				var obj map[string]any
				if err := json.Unmarshal(c.Arguments, &obj); err != nil {
					t.Fatalf("%s %q: arguments %s: %v", setup.name, text, c.Arguments, err)
				}
				b, _ := json.Marshal(obj)
				calls = append(calls, xmlCall{c.Name, string(b), c.Span})
			}
			var errs []xmlError
			for _, e := range res.Errors {
				if e.Message == "" {
					t.Errorf("%s %q: error %s without a message", setup.name, text, e.Reason)
				}
				errs = append(errs, xmlError{e.Reason, e.Raw, e.Span})
			}
			wc, we, wn := refXMLTag(text, setup.open, setup.close, known)
			if fmt.Sprint(calls) != fmt.Sprint(wc) || fmt.Sprint(errs) != fmt.Sprint(we) || res.NormalText != wn {
				t.Errorf("%s %q:\ngot  calls %v errors %v normal %q\nwant calls %v errors %v normal %q", setup.name, text, calls, errs, res.NormalText, wc, we, wn)
			}
		}
	}
	wantRefused(t, h, file, [][2]string{{`{"open":""}`, "open and close must be non-empty strings"}, {`{"close":5}`, "open and close must be non-empty strings"}})
}
