package system_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/envtool"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// referenceEnv starts examples/environments/reference_env.py (standard library only) with fault flags and
// returns its URL once it listens.
func referenceEnv(t *testing.T, flags ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not on PATH")
		}
		t.Skip("python3 is not on PATH")
	}
	cmd := exec.Command(py, append([]string{"../../examples/environments/reference_env.py", "--port", "0"}, flags...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		io.Copy(io.Discard, out)
	}()
	l, _ := testutil.Recv(t, "the reference environment's address", line)
	addr, ok := strings.CutPrefix(strings.TrimSpace(l), "listening ")
	if !ok {
		t.Fatalf("reference environment printed %q", l)
	}
	return addr
}

type envStats struct {
	Live, Creates, Hung, Rewards int
	Closed                       []string
}

func referenceStats(t *testing.T, url string) envStats {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st envStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// envAgent is an agent whose tools are a reference environment's, driven by the scripted emulator.
func envAgent(t *testing.T, cfg envtool.Config, replies ...string) *harness {
	t.Helper()
	return envAgentWith(t, cfg, nil, replies...)
}

// envAgentWith is envAgent with the agent's config changed by mod.
func envAgentWith(t *testing.T, cfg envtool.Config, mod func(*config.Agent), replies ...string) *harness {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"key": "env", "replies": replies})
	script, err := emulator.ParseScript(strings.NewReader(string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := config.DefaultAgent()
	ac.Name = "env"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	ac.Tools = []config.Plugin{{Timeout: 30 * time.Second, Env: &cfg}}
	if mod != nil {
		mod(&ac)
	}
	h := newPythonHarness(t, ec, ac, emulator.WithScript(script))
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	return h
}

func envCall(name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return "<tool_call>\n" + string(b) + "\n</tool_call>"
}

const envTask = `{"files": {"task.txt": "write 42 to answer.txt"}, "expect": {"answer.txt": "42"}}`

func runEnvEpisode(ctx context.Context, h *harness, id string) *tito.Trajectory {
	return runEnvEpisodeLabeled(ctx, h, id, nil)
}

func runEnvEpisodeLabeled(ctx context.Context, h *harness, id string, label json.RawMessage) *tito.Trajectory {
	return h.agent.Run(ctx, runtime.Episode{ID: id, ItemID: id, GroupID: id, Metadata: json.RawMessage(envTask), Label: label,
		Messages: []tito.Message{{Role: "user", Content: "[script:env] Do the task in task.txt."}}})
}

// An agent whose tools are a remote environment's: the episode's environment is created from the sample's
// metadata, the model's calls reach it and change its state, its reward is the trajectory's, and it is closed.
func TestEnvEpisode(t *testing.T) {
	url := referenceEnv(t)
	h := envAgent(t, envtool.Config{URL: url, Reward: true, MaxConcurrent: 4, CreatesPerSecond: 50},
		envCall("read_file", map[string]any{"path": "task.txt"}),
		envCall("write_file", map[string]any{"path": "answer.txt", "content": "42"}),
		envCall("read_file", map[string]any{"path": "missing.txt"}),
		`Done: answer.txt holds 42.`)
	if specs := h.agent.ToolSpecs(); len(specs) != 3 || !strings.Contains(string(specs[2]), `"name":"write_file"`) {
		t.Fatalf("tool specs %s, want the service's three tools", specs)
	}
	tr := runEnvEpisode(context.Background(), h, "ok")
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusCompleted, "")
	got := toolMessages(t, tr)
	want := []string{"write 42 to answer.txt", "wrote 2 bytes to answer.txt", "Error: no such file: missing.txt"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool results %q, want %q", got, want)
	}
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v, want the environment's 1", tr.Reward)
	}
	if _, ok := tr.Metrics["env.begin_ms"]; !ok || tr.Metrics["tool_calls.ok"] != 2 || tr.Metrics["tool_calls.error"] != 1 {
		t.Errorf("metrics %v", tr.Metrics)
	}
	if st := referenceStats(t, url); st.Creates != 1 || st.Live != 0 || len(st.Closed) != 1 {
		t.Errorf("service stats %+v: want one environment, created and closed", st)
	}
	if got := tr.Provenance[tito.ProvPlugins].(map[string]string)["env:"+url]; got != "service:agentrt-reference-env 1" {
		t.Errorf("provenance %q", got)
	}
}

// The service dies mid-episode: the episode is aborted with reason environment (never completed with a reward),
// its trajectory ends on the response that made the call, and the close was attempted (a warning says it failed).
func TestEnvEpisodeServiceCrash(t *testing.T) {
	url := referenceEnv(t, "--exit-on", "write_file")
	h := envAgent(t, envtool.Config{URL: url, Reward: true, Backoff: time.Millisecond, CloseTimeout: 10 * time.Second},
		envCall("read_file", map[string]any{"path": "task.txt"}),
		envCall("write_file", map[string]any{"path": "answer.txt", "content": "42"}),
		`Done.`)
	tr := runEnvEpisode(context.Background(), h, "crash")
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonEnvironment)
	if !strings.Contains(tr.Error, "environment env:"+url+": call write_file") {
		t.Errorf("error %q does not name the service and the call", tr.Error)
	}
	if tr.Reward != nil {
		t.Errorf("reward %v on an aborted episode", *tr.Reward)
	}
	if got := toolMessages(t, tr); len(got) != 1 || tr.Metrics["tool_calls.env_error"] != 1 {
		t.Errorf("tool results %q, metrics %v: want the first result only, one env_error", got, tr.Metrics)
	}
	if n := len(tr.Warnings); n != 1 || !strings.Contains(tr.Warnings[0], ": close env-1:") {
		t.Errorf("warnings %q, want the failed close", tr.Warnings)
	}
}

// A create that fails past its retries aborts the episode before its first model call.
func TestEnvEpisodeCreateFails(t *testing.T) {
	url := referenceEnv(t, "--fail-creates", "9")
	h := envAgent(t, envtool.Config{URL: url, Retries: new(1), Backoff: time.Millisecond}, `Done.`)
	tr := runEnvEpisode(context.Background(), h, "nocreate")
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonEnvironment)
	if !strings.Contains(tr.Error, "create: HTTP 503") || tr.Turns() != 0 {
		t.Errorf("error %q after %d turns, want the create's 503 before any", tr.Error, tr.Turns())
	}
}

// An episode cancelled while a call hangs in its environment is aborted, and the environment is still closed.
func TestEnvEpisodeCancelledCloses(t *testing.T) {
	url := referenceEnv(t, "--hang-on", "list_files")
	h := envAgent(t, envtool.Config{URL: url}, envCall("list_files", map[string]any{}), `Done.`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *tito.Trajectory, 1)
	go func() { done <- runEnvEpisode(ctx, h, "cancel") }()
	testutil.Until(t, "the call to hang in the environment", func() bool { return referenceStats(t, url).Hung == 1 })
	cancel()
	tr, _ := testutil.Recv(t, "the cancelled episode", done)
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonAbortedByRequest)
	if st := referenceStats(t, url); st.Live != 0 || len(st.Closed) != 1 {
		t.Errorf("service stats %+v: the cancelled episode's environment was not closed", st)
	}
}

// A configured reward plugin overrides the environment's reward (it runs after): here the environment's task is
// left undone (its reward would be 0) but the final answer matches the label.
func TestEnvEpisodeRewardPluginWins(t *testing.T) {
	url := referenceEnv(t)
	h := envAgentWith(t, envtool.Config{URL: url, Reward: true}, func(ac *config.Agent) {
		ac.Reward = &config.Plugin{Plugin: "builtin:math_reward"}
	}, envCall("read_file", map[string]any{"path": "task.txt"}), `The answer is \boxed{42}.`)
	tr := runEnvEpisodeLabeled(context.Background(), h, "hook", json.RawMessage(`"42"`))
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v, want the reward plugin's 1 (the environment's is 0)", tr.Reward)
	}
	if st := referenceStats(t, url); st.Rewards != 1 || st.Live != 0 || len(st.Closed) != 1 {
		t.Errorf("service stats %+v: want the environment's reward asked for, then the environment closed", st)
	}
}

// The environments example's runtime.toml decodes strictly, its script and prompts parse, and its agent builds
// against the reference service and runs the prompt's episode to the environment's reward.
func TestEnvironmentsExample(t *testing.T) {
	cfg, err := config.Load("../../examples/environments/runtime.toml")
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Agents[0].Tools[0].Env
	if e == nil || e.MaxConcurrent != 8 || e.CreatesPerSecond != 4 || *e.Retries != 3 || e.Backoff != 500*time.Millisecond || !e.Reward {
		t.Fatalf("env = %+v", e)
	}
	f, err := os.Open("../../examples/environments/script.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var line struct{ Replies []string }
	if err := json.NewDecoder(f).Decode(&line); err != nil {
		t.Fatal(err)
	}
	var prompt struct {
		Messages []tito.Message
		Metadata json.RawMessage
	}
	b, err := os.ReadFile("../../examples/environments/prompts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &prompt); err != nil {
		t.Fatal(err)
	}
	env := *e
	env.URL = referenceEnv(t)
	h := envAgentWith(t, env, nil, line.Replies...)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "example#0", Messages: []tito.Message{{Role: "user",
		Content: strings.Replace(prompt.Messages[0].Content, "[script:files]", "[script:env]", 1)}}, Metadata: prompt.Metadata})
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v, want 1", tr.Reward)
	}
}

// An environment that cannot give its reward makes the episode aborted (reason environment), not a completed one
// without a reward; the environment is closed all the same.
func TestEnvEpisodeRewardFails(t *testing.T) {
	url := referenceEnv(t, "--fail-rewards")
	h := envAgent(t, envtool.Config{URL: url, Reward: true}, envCall("list_files", map[string]any{}), `Done.`)
	tr := runEnvEpisode(context.Background(), h, "noreward")
	h.check(t, tr)
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonEnvironment)
	if !strings.Contains(tr.Error, "reward: HTTP 500: the grader crashed") || tr.Reward != nil {
		t.Errorf("error %q, reward %v: want the reward's failure and no reward", tr.Error, tr.Reward)
	}
	if st := referenceStats(t, url); st.Rewards != 1 || st.Live != 0 || len(st.Closed) != 1 {
		t.Errorf("service stats %+v: want one reward request, then the close", st)
	}
}
