package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// qwenScript answers every episode with the same script, per episode: a hermes tool call of the episode's tool
// (the part of its id before "/"), then a final answer; each reply ends with <|im_end|>. Safe for concurrent use.
type qwenScript struct {
	mu    sync.Mutex
	turns map[string]int
}

func (g *qwenScript) Generate(_ context.Context, episodeID string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.mu.Lock()
	k := g.turns[episodeID]
	g.turns[episodeID]++
	g.mu.Unlock()
	// The episode id is TOOL[:ARGS]/...; ARGS is one JSON object, which may hold a "/" itself.
	tool, args, hasArgs := strings.Cut(episodeID, ":")
	if hasArgs && !strings.Contains(tool, "/") {
		var raw json.RawMessage
		if err := json.NewDecoder(strings.NewReader(args)).Decode(&raw); err != nil {
			return nil, fmt.Errorf("episode %s: arguments: %w", episodeID, err)
		}
		args = string(raw)
	} else {
		tool, args = strings.SplitN(episodeID, "/", 2)[0], "{}"
	}
	reply := "The answer is 5."
	if k == 0 {
		reply = fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", tool, args)
	}
	out := append(qwen3.Tokenizer.Encode(reply, false), qwen3.Tokenizer.Encode("<|im_end|>", false)...)
	var in []sglang.LogprobEntry // none on a first prompt (logprob_start_len -1), as SGLang
	if req.LogprobStartLen >= 0 {
		in = make([]sglang.LogprobEntry, len(req.InputIDs)-req.LogprobStartLen)
		for i := range in {
			in[i] = sglang.LogprobEntry{Logprob: -1, Null: i == 0}
		}
	}
	lp := make([]sglang.LogprobEntry, len(out))
	for i := range lp {
		lp[i] = sglang.LogprobEntry{Logprob: -0.5}
	}
	return &sglang.GenerateResponse{OutputIDs: out, MetaInfo: sglang.MetaInfo{ID: req.RID, PromptTokens: len(req.InputIDs),
		FinishReason: &sglang.FinishReason{Type: sglang.FinishStop, MatchedTokenID: out[len(out)-1]}, InputTokenLogprobs: in, OutputTokenLogprobs: lp}}, nil
}

// goodTool is the well-behaved tool of the bystander episodes.
type goodTool struct{}

func (goodTool) Call(context.Context, string, json.RawMessage) (abi.ToolResult, error) {
	s := "5"
	return abi.ToolResult{Text: &s}, nil
}

// TestHostilePlugins runs misbehaving tool, hook and parser plugins through the real plugin host and agent loop.
// Each case: the process survives, the error is clear, the episode's status is honest, and bystander episodes
// running at the same time (sharing the host and the generator) complete untouched.
func TestHostilePlugins(t *testing.T) {
	wat := func(name string) string { return filepath.Join("..", "plugin", "testdata", "wat", name+".wasm") }
	probe := filepath.Join("..", "plugin", "testdata", "go", "probe", "probe.wasm")
	const hostileLimit = 500 * time.Millisecond
	type want struct {
		status, reason string
		errText        string // in the trajectory's error (hooks, parsers) or the tool message the model read (tools)
		notText        string // must not reach the model
	}
	tests := []struct {
		name   string
		kind   string // tool, hook, parser
		plugin string
		call   string // the tool the model calls, with its arguments ("name:{json}")
		grants func(*config.Plugin)
		load   string // non-empty: the agent must refuse to build, with this in the error
		want   want
	}{
		// Tools: the call becomes an error result the model reads; the episode goes on and completes.
		{name: "tool infinite loop", kind: "tool", plugin: wat("hostile_tool_spin"), call: "hostile", want: want{runtime.StatusCompleted, "", "timed out", ""}},
		{name: "tool memory growth", kind: "tool", plugin: wat("hostile_tool_grow"), call: "hostile", want: want{runtime.StatusCompleted, "", "trapped", ""}},
		{name: "tool trap", kind: "tool", plugin: wat("hostile_tool_trap"), call: "hostile", want: want{runtime.StatusCompleted, "", "unreachable", ""}},
		{name: "tool stack overflow", kind: "tool", plugin: wat("hostile_tool_stack"), call: "hostile", want: want{runtime.StatusCompleted, "", "stack overflow", ""}},
		{name: "tool output past the cap", kind: "tool", plugin: wat("hostile_tool_huge"), call: "hostile", want: want{runtime.StatusCompleted, "", "exceeds the limit of 1048576 bytes", ""}},
		{name: "tool invalid JSON", kind: "tool", plugin: wat("hostile_tool_badjson"), call: "hostile", want: want{runtime.StatusCompleted, "", "not a JSON object", ""}},
		{name: "tool Go guest memory blow-up", kind: "tool", plugin: probe, call: "grow", want: want{runtime.StatusCompleted, "", "out of memory", ""}},
		{name: "tool Go guest stack overflow", kind: "tool", plugin: probe, call: "stackoverflow", want: want{runtime.StatusCompleted, "", "trapped", ""}},
		{name: "tool file without grant", kind: "tool", plugin: probe, call: `readfile:{"path":"/etc/passwd"}`, want: want{runtime.StatusCompleted, "", "Error", "root:"}},
		{name: "tool env without grant", kind: "tool", plugin: probe, call: "env", want: want{runtime.StatusCompleted, "", "", "PATH="}},
		// Without the random grant the guest reads wazero's deterministic source: the same bytes on every fresh instance.
		{name: "tool random without grant", kind: "tool", plugin: probe, call: "random", want: want{runtime.StatusCompleted, "", "dfd79b4d76429b61", ""}},
		{name: "tool clock without grant", kind: "tool", plugin: probe, call: "now", want: want{runtime.StatusCompleted, "", "16409952", ""}},
		{name: "tool never returns (clock granted, sleeps)", kind: "tool", plugin: probe, call: "sleep", grants: func(pc *config.Plugin) { pc.Clock = true },
			want: want{runtime.StatusCompleted, "", "timed out", ""}},
		{name: "tool claims ABI 2", kind: "tool", plugin: wat("hostile_tool_abi2"), load: "ABI version 2"},
		{name: "tool missing export", kind: "tool", plugin: wat("hostile_tool_noexport"), load: "agentrt_call"},
		// Hooks: a failing hook aborts the episode (hook_failure), naming the plugin and the event.
		{name: "hook infinite loop", kind: "hook", plugin: wat("hostile_hook_spin"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "limit", ""}},
		{name: "hook memory growth", kind: "hook", plugin: wat("hostile_hook_grow"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "trapped", ""}},
		{name: "hook trap", kind: "hook", plugin: wat("hostile_hook_trap"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "unreachable", ""}},
		{name: "hook stack overflow", kind: "hook", plugin: wat("hostile_hook_stack"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "stack overflow", ""}},
		{name: "hook output past the cap", kind: "hook", plugin: wat("hostile_hook_huge"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "exceeds the limit", ""}},
		{name: "hook invalid JSON", kind: "hook", plugin: wat("hostile_hook_badjson"), want: want{runtime.StatusAborted, runtime.ReasonHookFailure, "not a JSON object", ""}},
		{name: "hook claims ABI 2", kind: "hook", plugin: wat("hostile_hook_abi2"), load: "ABI version 2"},
		{name: "hook missing export", kind: "hook", plugin: wat("hostile_hook_noexport"), load: "agentrt_call"},
		// Parsers: a failing parser fails the episode (parser), naming the plugin.
		{name: "parser infinite loop", kind: "parser", plugin: wat("hostile_parser_spin"), want: want{runtime.StatusFailed, runtime.ReasonParser, "limit", ""}},
		{name: "parser memory growth", kind: "parser", plugin: wat("hostile_parser_grow"), want: want{runtime.StatusFailed, runtime.ReasonParser, "trapped", ""}},
		{name: "parser trap", kind: "parser", plugin: wat("hostile_parser_trap"), want: want{runtime.StatusFailed, runtime.ReasonParser, "unreachable", ""}},
		{name: "parser stack overflow", kind: "parser", plugin: wat("hostile_parser_stack"), want: want{runtime.StatusFailed, runtime.ReasonParser, "stack overflow", ""}},
		{name: "parser output past the cap", kind: "parser", plugin: wat("hostile_parser_huge"), want: want{runtime.StatusFailed, runtime.ReasonParser, "exceeds the limit", ""}},
		{name: "parser invalid JSON", kind: "parser", plugin: wat("hostile_parser_badjson"), want: want{runtime.StatusFailed, runtime.ReasonParser, "not a JSON object", ""}},
		{name: "parser claims ABI 2", kind: "parser", plugin: wat("hostile_parser_abi2"), load: "ABI version 2"},
		{name: "parser missing export", kind: "parser", plugin: wat("hostile_parser_noexport"), load: "agentrt_call"},
		// A parser that calls tools nobody declared: each call is an unknown_tool error result; the episode goes on.
		// (every response, so the episode runs until its context window is full).
		{name: "parser calls an unknown tool", kind: "parser", plugin: wat("hostile_parser_unknowntool"), want: want{runtime.StatusTruncated, runtime.ReasonContextWindow, `Error: unknown tool "rm_rf"`, ""}},
	}

	tmpl, err := qwen3.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	gen := &qwenScript{turns: map[string]int{}}
	spec := json.RawMessage(`{"type": "function", "function": {"name": "calculator", "description": "Evaluate.", "parameters": {"type": "object"}}}`)
	hermes, err := host.Load(context.Background(), pluginSpecHermes())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hermes.Close(context.Background()) })
	hp, _ := hermes.Parser()
	deps := func() runtime.Deps {
		return runtime.Deps{Model: &turn.Model{Generator: gen, Tokenizer: qwen3.Tokenizer, Template: tmpl, Parser: hp, StopIDs: qwen3.StopIDs, ContextWindow: 1 << 15}}
	}
	good := deps()
	good.Tools = []runtime.ToolBinding{{Plugin: "good", Tool: goodTool{}, Specs: []json.RawMessage{spec}}}
	bystander, err := runtime.NewAgent(system.Settings(config.DefaultAgent()), good)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Only the cases about the clock run under the short limit; every other failure must come from its own
			// guard (memory limit, stack guard, output cap...), however slow a loaded machine makes getting there.
			limit := time.Minute
			if strings.Contains(tc.name, "infinite loop") || strings.Contains(tc.name, "never returns") {
				limit = hostileLimit
			}
			pc := config.Plugin{Plugin: tc.plugin, Timeout: limit, MaxMemoryMB: 16}
			if tc.grants != nil {
				tc.grants(&pc)
			}
			d := deps()
			var agent *runtime.Agent
			var err error
			switch tc.kind {
			case "tool", "hook":
				ac := config.DefaultAgent()
				ac.Name, ac.Family, ac.ContextWindow = "hostile", "qwen3", 1<<15
				ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
				if tc.kind == "tool" {
					ac.Tools = []config.Plugin{pc}
				} else {
					ac.Tools = []config.Plugin{{Plugin: "builtin:calculator"}}
					ac.Hooks = []config.Plugin{pc}
				}
				agent, err = system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: gen, Model: qwen3})
				if a := agent; err == nil {
					t.Cleanup(func() { a.Close(context.Background()) })
				}
			case "parser":
				var mod *pluginModule
				mod, err = loadParserPlugin(pc)
				if err == nil {
					t.Cleanup(func() { mod.Close(context.Background()) })
					p, _ := mod.Parser()
					d.Model.Parser = p
					d.Model.ContextWindow = 1024
					agent, err = runtime.NewAgent(system.Settings(config.DefaultAgent()), d)
				}
			}
			if tc.load != "" {
				if err == nil || !strings.Contains(err.Error(), tc.load) || !strings.Contains(err.Error(), filepath.Base(tc.plugin)) {
					t.Fatalf("building the agent: %v; want an error naming %s and containing %q", err, filepath.Base(tc.plugin), tc.load)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			before := liveOf(filepath.Base(tc.plugin))
			call := tc.call
			if call == "" {
				call = "calculator"
			}
			// The hostile episode and four bystanders at once, on the same host and generator.
			var wg sync.WaitGroup
			var by [4]*tito.Trajectory
			for i := range by {
				wg.Go(func() {
					by[i] = bystander.Run(context.Background(), runtime.Episode{ID: fmt.Sprintf("calculator/%s/by%d", tc.name, i), Messages: []tito.Message{{Role: "user", Content: "2+3?"}}})
				})
			}
			tr := agent.Run(context.Background(), runtime.Episode{ID: call + "/" + tc.name, Messages: []tito.Message{{Role: "user", Content: "2+3?"}}})
			wg.Wait()
			// Memory returns to its bound: an instance that grew to the limit was closed, not pooled; what the
			// module holds now is no more per instance than at load.
			if after := liveOf(filepath.Base(tc.plugin)); before.Instances > 0 && after.Instances > 0 &&
				after.MemoryBytes/uint64(after.Instances) > before.MemoryBytes/uint64(before.Instances) {
				t.Errorf("%s holds %d bytes in %d instances after the episode, %d in %d at load", filepath.Base(tc.plugin),
					after.MemoryBytes, after.Instances, before.MemoryBytes, before.Instances)
			}
			for i, b := range by {
				if b.Status != runtime.StatusCompleted || b.Metrics["tool_calls.ok"] != 1 {
					t.Errorf("bystander %d: %s/%s (%s), metrics %v; want completed with one ok tool call", i, b.Status, b.StatusReason, b.Error, b.Metrics)
				}
			}
			if tr.Status != tc.want.status || tr.StatusReason != tc.want.reason {
				t.Fatalf("status %s/%s (%s); want %s/%s", tr.Status, tr.StatusReason, tr.Error, tc.want.status, tc.want.reason)
			}
			if err := tr.Validate(); err != nil {
				t.Errorf("trajectory invariants: %v", err)
			}
			if tr.Error != "" && tc.want.reason != runtime.ReasonContextWindow {
				if !strings.Contains(tr.Error, tc.want.errText) || !strings.Contains(tr.Error, "hostile") {
					t.Errorf("error %q; want it to name the plugin and contain %q", tr.Error, tc.want.errText)
				}
				return
			}
			var msgs []struct {
				Role, Content string
			}
			if err := json.Unmarshal(tr.Messages, &msgs); err != nil {
				t.Fatal(err)
			}
			var toolMsg string
			for _, m := range msgs {
				if m.Role == "tool" {
					toolMsg = m.Content
					break
				}
			}
			if !strings.Contains(toolMsg, tc.want.errText) || (tc.want.notText != "" && strings.Contains(toolMsg, tc.want.notText)) {
				t.Errorf("the model read %.300q; want it to contain %q and not %q", toolMsg, tc.want.errText, tc.want.notText)
			}
		})
	}
}

type pluginModule = plugin.Module

// liveOf sums what the test host holds of the modules whose load name contains base.
func liveOf(base string) plugin.Live {
	var sum plugin.Live
	for name, l := range host.Live() {
		if strings.Contains(name, base) {
			sum.Instances += l.Instances
			sum.MemoryBytes += l.MemoryBytes
		}
	}
	return sum
}

// pluginSpecHermes is the built-in hermes parser, as BuildAgent loads it.
func pluginSpecHermes() plugin.Spec {
	cfg, _ := parsers.WasmConfig("hermes")
	return plugin.Spec{Name: "builtin:parser:hermes", Wasm: parsers.Wasm(), Trusted: true, Config: cfg, Tools: calcSpecs()}
}

func calcSpecs() []abi.ToolSpec {
	return []abi.ToolSpec{{Name: "calculator", Description: "Evaluate.", Parameters: abi.RawJSON(`{"type":"object"}`)}}
}

// loadParserPlugin loads a parser plugin file sandboxed with the entry's limits, as an agent's parser = "x.wasm".
func loadParserPlugin(pc config.Plugin) (*plugin.Module, error) {
	b, err := os.ReadFile(pc.Plugin)
	if err != nil {
		return nil, err
	}
	return host.Load(context.Background(), plugin.Spec{Name: pc.Plugin, Wasm: b, Tools: calcSpecs(),
		Limits: plugin.Limits{Timeout: pc.Timeout, MaxMemoryMB: pc.MaxMemoryMB}})
}
