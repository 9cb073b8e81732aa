package system_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// The math-agent recipe end to end: the emulator's agentic policy writes Python for the task's arithmetic, the
// execute_python_code tool (CPython 3.12 for WASI, sandboxed) runs it, the policy boxes the printed value, and the
// built-in math_reward hook scores the final answer against the label. A scripted episode then drives the tool
// into each sandbox failure (time limit, host file, socket, memory) and shows the episode carries on.

// pythonWasm is CPython for WASI, installed by scripts/setup.d/60-python-wasi.sh.
func pythonWasm(t *testing.T) string {
	t.Helper()
	p := os.Getenv("AGENTRT_PYTHON_WASM")
	if p == "" {
		t.Skip("AGENTRT_PYTHON_WASM is not set: run `make setup` and source ~/.cache/agentrt/env.sh")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("AGENTRT_PYTHON_WASM: %v (run scripts/setup.d/60-python-wasi.sh)", err)
	}
	return p
}

func mathAgent(t *testing.T, timeout time.Duration) config.Agent {
	ac := config.DefaultAgent()
	ac.Name = "math"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.SystemPrompt = "Solve the problem. Use execute_python_code for any computation, then give the final answer as \\boxed{answer}."
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	ac.Tools = []config.Plugin{{Plugin: pythonWasm(t), Timeout: timeout, MaxMemoryMB: 64,
		Command: &config.Command{Preset: "python"}}}
	ac.Hooks = []config.Plugin{{Plugin: "builtin:limiter", Config: map[string]any{"max_tool_iters": 8}}}
	ac.Reward = &config.Plugin{Plugin: "builtin:math_reward"}
	return ac
}

func newPythonHarness(t *testing.T, ec emulator.Config, ac config.Agent, opts ...emulator.Option) *harness {
	t.Helper()
	ec.StopIDs, ec.VocabSize = qwen3.StopIDs, qwen3.Tokenizer.VocabSize()
	h := &harness{log: &syncBuffer{}}
	emu, err := emulator.New(ec, qwen3.Tokenizer, append(opts, emulator.WithLog(h.log))...)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(emu)
	t.Cleanup(h.srv.Close)
	sc := sglang.DefaultConfig()
	sc.Workers = []string{h.srv.URL}
	sc.Retry = fastRetry()
	client, err := sglang.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h.agent, err = system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: client, Model: qwen3,
		MaxModelLen: func(ctx context.Context) (int, error) { return client.MaxModelLen(ctx, "") }, Server: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) runLabeled(t *testing.T, id, prompt, label string) *tito.Trajectory {
	t.Helper()
	lb, _ := json.Marshal(label)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: id, ItemID: id, GroupID: id, Label: lb,
		Messages: []tito.Message{{Role: "user", Content: prompt}}})
	h.check(t, tr)
	return tr
}

func toolMessages(t *testing.T, tr *tito.Trajectory) []string {
	var out []string
	for _, m := range messages(t, tr) {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestPythonToolMathEpisodes(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the episodes' scratch directories go here (os.TempDir), and must be gone at the end
	h := newPythonHarness(t, emulator.DefaultConfig(), mathAgent(t, 20*time.Second))
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	if specs := h.agent.ToolSpecs(); len(specs) != 1 || !strings.Contains(string(specs[0]), `"name":"execute_python_code"`) {
		t.Fatalf("tool specs %s", specs)
	}
	tests := []struct {
		id, task, label string
		toolOut         string // the tool result, exactly
		reward          float64
		rule            string // the math_reward metric that must be 1
	}{
		{"int", "What is 12*7+3?", "87", "87", 1, "math_match_exact"},
		{"float-vs-int", "What is 144/12?", "12", "12.0", 1, "math_match_exact"},
		{"fraction", "Compute 7/8+1/2 exactly.", `\frac{11}{8}`, "1.375", 1, "math_match_numeric"},
		{"two-exprs", "Compute (17+25)*3 and then 126-5.", "121", "126\n121", 1, "math_match_exact"},
		{"wrong-label", "What is 2+2?", "5", "4", 0, "math_extract_boxed"},
		{"exception", "What is 5/0?", "0", "", 0, "math_extract_none"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			tr := h.runLabeled(t, tt.id, tt.task, tt.label)
			wantStatus(t, tr, runtime.StatusCompleted, "")
			results := toolMessages(t, tr)
			if len(results) != 1 {
				t.Fatalf("tool results %q, want one", results)
			}
			if tt.toolOut != "" && results[0] != tt.toolOut {
				t.Errorf("tool result %q, want %q", results[0], tt.toolOut)
			}
			if tr.Reward == nil || *tr.Reward != tt.reward {
				t.Errorf("reward %v, want %v (metrics %v)", tr.Reward, tt.reward, tr.Metrics)
			}
			if tr.Metrics[tt.rule] != 1 || tr.Metrics["math_correct"] != tt.reward {
				t.Errorf("metrics %v: want %s = 1, math_correct = %v", tr.Metrics, tt.rule, tt.reward)
			}
			if tt.id == "exception" {
				if !strings.HasPrefix(results[0], "Error: the program exited with status 1") ||
					!strings.Contains(results[0], "ZeroDivisionError: division by zero") || tr.Metrics["tool_calls.error"] != 1 {
					t.Errorf("exception: result %q, metrics %v", results[0], tr.Metrics)
				}
			} else if tr.Metrics["tool_calls.ok"] != 1 {
				t.Errorf("metrics %v: want tool_calls.ok = 1", tr.Metrics)
			}
			plugins, _ := tr.Provenance[tito.ProvPlugins].(map[string]string)
			if sha := plugins[mathAgent(t, 0).Tools[0].Plugin]; len(sha) != 64 {
				t.Errorf("provenance lacks the python module's sha256: %v", tr.Provenance[tito.ProvPlugins])
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "agentrt-scratch-*")); len(left) != 0 {
				t.Errorf("the episode's scratch directory outlived it: %v", left)
			}
		})
	}
}

// A scripted model drives the sandbox into every failure in one episode; each is an error result the model sees
// and the episode goes on to a scored answer.
func TestPythonToolSandboxFailuresKeepTheEpisodeGoing(t *testing.T) {
	call := func(code string) string {
		b, _ := json.Marshal(map[string]any{"name": "execute_python_code", "arguments": map[string]string{"code": code}})
		return "<tool_call>\n" + string(b) + "\n</tool_call>"
	}
	replies := []string{
		call("while True: pass"),
		call(`print(open("/etc/passwd").read())`),
		call(`import socket; socket.create_connection(("10.0.0.1", 80), timeout=1)`),
		call("x = bytearray(1 << 30)"),
		call(`open("/tmp/n.txt", "w").write("6"); print(int(open("/tmp/n.txt").read()) * 7)`),
		`The answer is \boxed{42}.`,
	}
	line, _ := json.Marshal(map[string]any{"key": "sandbox", "replies": replies})
	script, err := emulator.ParseScript(strings.NewReader(string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	// The limit stops the endless loop; it is long enough that the other calls (a CPython start each) finish
	// within it on a loaded machine.
	h := newPythonHarness(t, ec, mathAgent(t, 10*time.Second), emulator.WithScript(script))
	tr := h.runLabeled(t, "sandbox", "[script:sandbox] What is 6*7?", "42")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	results := toolMessages(t, tr)
	want := []string{
		"Error: execution stopped at the 10s time limit",
		"FileNotFoundError: [Errno 44] No such file or directory: '/etc/passwd'",
		"module '_socket' has no attribute",
		"MemoryError",
	}
	if len(results) != 5 {
		t.Fatalf("%d tool results %q, want 5", len(results), results)
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], "Error: ") || !strings.Contains(results[i], w) {
			t.Errorf("result %d = %q, want an error result containing %q", i, results[i], w)
		}
	}
	if results[4] != "42" {
		t.Errorf("result after the failures = %q, want 42", results[4])
	}
	if tr.Metrics["tool_calls.error"] != 4 || tr.Metrics["tool_calls.ok"] != 1 {
		t.Errorf("metrics %v: want 4 errors and 1 ok", tr.Metrics)
	}
	if tr.Reward == nil || *tr.Reward != 1 || tr.Metrics["math_match_exact"] != 1 {
		t.Errorf("reward %v, metrics %v", tr.Reward, tr.Metrics)
	}
}

// The recipe's runtime.toml decodes strictly and names the Python tool and the reward.
func TestMathPythonExampleConfig(t *testing.T) {
	t.Setenv("AGENTRT_PYTHON_WASM", "/opt/python.wasm")
	cfg, err := config.Load("../../examples/math-python/runtime.toml")
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents[0]
	if len(a.Tools) != 1 || a.Tools[0].Plugin != "/opt/python.wasm" || a.Tools[0].Command == nil ||
		a.Tools[0].Command.Preset != "python" || a.Tools[0].Command.MaxOutputBytes != 8192 {
		t.Errorf("tools %+v", a.Tools)
	}
	if a.Reward == nil || a.Reward.Plugin != "builtin:math_reward" {
		t.Errorf("reward %+v", a.Reward)
	}
}

func TestCommandToolValidation(t *testing.T) {
	tests := []struct {
		name string
		tool config.Plugin
		want string
	}{
		{"no module", config.Plugin{Command: &config.Command{Preset: "python"}}, "is $AGENTRT_PYTHON_WASM set?"},
		{"preset", config.Plugin{Plugin: "p.wasm", Command: &config.Command{Preset: "ruby"}}, `unknown preset "ruby"`},
		{"no name", config.Plugin{Plugin: "p.wasm", Command: &config.Command{Args: []string{"p"}}}, "has no name"},
		{"no args", config.Plugin{Plugin: "p.wasm", Command: &config.Command{Name: "p"}}, "has no args"},
		{"builtin", config.Plugin{Plugin: "builtin:calculator", Command: &config.Command{Preset: "python"}}, "needs a .wasm command module"},
		{"config", config.Plugin{Plugin: "p.wasm", Config: map[string]any{"a": 1}, Command: &config.Command{Preset: "python"}}, "config is for ABI plugins"},
		{"only", config.Plugin{Plugin: "p.wasm", Only: []string{"x"}, Command: &config.Command{Preset: "python"}}, "only does not apply"},
		{"negative", config.Plugin{Plugin: "p.wasm", Command: &config.Command{Preset: "python", MaxOutputBytes: -1}}, "must be >= 0"},
		{"scratch scope", config.Plugin{Plugin: "p.wasm", Command: &config.Command{Preset: "python", ScratchScope: "turn"}}, `scratch_scope "turn": want "episode" or "call"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			ac := config.DefaultAgent()
			ac.Name, ac.Model, ac.Tools = "a", "m", []config.Plugin{tt.tool}
			cfg.Agents = []config.Agent{ac}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The math_reward module itself, through the plugin host: labels as strings or numbers, the last assistant message
// only, a missing label, and config errors.
func TestMathRewardHook(t *testing.T) {
	ctx := context.Background()
	load := func(cfg string) (*plugin.Module, error) {
		return host.Load(ctx, plugin.Spec{Name: "builtin:math_reward", Wasm: builtin.MathReward, Trusted: true,
			Config: []byte(cfg), PoolSize: 1})
	}
	mod, err := load(`{"tolerance": 0.01}`)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	h, err := mod.Hook()
	if err != nil {
		t.Fatal(err)
	}
	if !h.Wants(abi.EventEpisodeEnd) || h.Wants(abi.EventMessageAdded) {
		t.Error("math_reward should want episode_end only")
	}
	conv := func(answers ...string) []abi.Message {
		ms := []abi.Message{{Role: "user", Content: "What is 1/3? \\boxed{7}"}}
		for _, a := range answers {
			ms = append(ms, abi.Message{Role: "assistant", Content: a}, abi.Message{Role: "tool", Content: "99"})
		}
		return ms[:len(ms)-1]
	}
	tests := []struct {
		name   string
		msgs   []abi.Message
		label  string
		reward float64
		metric string
	}{
		{"number label", conv(`\boxed{42}`), `42`, 1, "math_match_exact"},
		{"string label", conv(`\boxed{0.5}`), `"\\frac{1}{2}"`, 1, "math_match_numeric"},
		{"tolerance from config", conv(`so 0.333`), `"1/3"`, 1, "math_match_approx"},
		{"last assistant only", conv(`\boxed{1}`, `I think \boxed{2}`), `"1"`, 0, "math_extract_boxed"},
		{"no label", conv(`\boxed{1}`), ``, 0, "math_no_label"},
		{"no answer", conv(`no idea`), `"3"`, 0, "math_extract_none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &abi.Event{Event: abi.EventEpisodeEnd, EpisodeID: "e", Status: "completed", Messages: tt.msgs}
			if tt.label != "" {
				ev.Label = abi.RawJSON(tt.label)
			}
			r, err := h.Handle(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if r.Reward == nil || *r.Reward != tt.reward || r.Metrics[tt.metric] != 1 || r.Metrics["math_correct"] != tt.reward {
				t.Errorf("reward %v metrics %v; want %v with %s", r.Reward, r.Metrics, tt.reward, tt.metric)
			}
		})
	}
	for _, cfg := range []string{`{"tolerance": -1}`, `{"boxed_only": 1}`, `{"strict": true}`} {
		if _, err := load(cfg); err == nil || !strings.Contains(err.Error(), "math_reward") {
			t.Errorf("config %s: err = %v, want a load error", cfg, err)
		}
	}
}
