package frontdoor_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/frontdoor"
)

// The official openai SDK (PyPI openai, installed hash-pinned by scripts/setup.d/55-frontdoor-sdks.sh) runs the
// example agent examples/frontdoor/openai_agent.py unchanged against the front door, and bench/check.py, the
// stdlib-only checker that knows nothing of agentrt's code, verifies every trajectory against the emulator's
// request log: verbatim replies, the prefix invariant, each logprob recomputed with the emulator's scoring
// function, and every logged /generate call claimed by exactly one turn.

func sdkPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("AGENTRT_SDK_PYTHON")
	if py == "" && os.Getenv("AGENTRT_CACHE") != "" {
		py = filepath.Join(os.Getenv("AGENTRT_CACHE"), "venv-sdks", "bin", "python")
	}
	if _, err := os.Stat(py); py == "" || err != nil {
		t.Skip("the SDK venv is missing: run `make setup` (scripts/setup.d/55-frontdoor-sdks.sh) and source ~/.cache/agentrt/env.sh")
	}
	return py
}

type agentRun struct {
	Replies      []*string `json:"replies"`
	Trajectories []string  `json:"trajectories"`
}

func runAgent(t *testing.T, py string, h *harness, session, mode, task string) agentRun {
	t.Helper()
	return runScript(t, py, "openai_agent.py", "--server", h.srv.URL, "--session", session, "--mode", mode, "--task", task)
}

func runScript(t *testing.T, py, script string, args ...string) agentRun {
	t.Helper()
	mode := strings.Join(args, " ")
	cmd := exec.Command(py, append([]string{"../../examples/frontdoor/" + script}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, mode, err, errb.String())
	}
	var r agentRun
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%s output %q: %v", script, out.String(), err)
	}
	return r
}

// independentCheck runs bench/check.py over the emitted trajectories and the emulator's log.
func independentCheck(t *testing.T, py string, h *harness) map[string]any {
	t.Helper()
	dir := t.TempDir()
	logPath, trajPath := filepath.Join(dir, "emulator.log"), filepath.Join(dir, "trajectories.jsonl")
	if err := os.WriteFile(logPath, h.log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	h.mu.Lock()
	for _, e := range h.emitted {
		b.Write(e.Trajectory)
		b.WriteByte('\n')
	}
	h.mu.Unlock()
	if err := os.WriteFile(trajPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "../../bench/check.py", "--log", logPath, "--trajs", trajPath, "--system", "frontdoor").CombinedOutput()
	var res map[string]any
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil {
		t.Fatalf("bench/check.py: %v\n%s", err, out)
	}
	return res
}

func TestOpenAISDKToolLoop(t *testing.T) {
	py := sdkPython(t)
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), nil)
	full := runAgent(t, py, h, "sdk-full", "tools", "[script:think] What is 2 + 3?")
	terse := runAgent(t, py, h, "sdk-terse", "terse", "[script:think] What is 2 + 3? (terse)")
	calc := runAgent(t, py, h, "sdk-calc", "tools", "[script:calc] Add 2 and 3.")
	streamed := runAgent(t, py, h, "sdk-stream", "stream", "[script:calc] Add 2 and 3, streaming.")
	objects := runAgent(t, py, h, "sdk-objects", "objects", "[script:think] What is 2 + 3? (objects)")
	for name, r := range map[string]agentRun{"full": full, "terse": terse, "calc": calc, "stream": streamed, "objects": objects} {
		if len(r.Trajectories) != 1 || len(r.Replies) < 2 {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	if got := *full.Replies[1]; got != "The sum is 5." {
		t.Fatalf("final reply %q", got)
	}
	if got := *streamed.Replies[1]; got != "2 + 3 = 5." {
		t.Fatalf("final streamed reply %q", got)
	}
	res := independentCheck(t, py, h)
	if res["ok"] != true || res["trajectories"].(float64) != 5 || res["turns"].(float64) != 10 {
		t.Fatalf("bench/check.py: %v", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.emitted {
		tr := decodeTraj(t, e)
		dropped := tr.Metrics["reasoning_dropped_calls"]
		if want := map[string]float64{"sdk-full": 0, "sdk-terse": 1, "sdk-calc": 0, "sdk-stream": 0, "sdk-objects": 0}[e.Session]; dropped != want {
			t.Errorf("%s: reasoning_dropped_calls %v, want %v", e.Session, dropped, want)
		}
		for k := range tr.Metrics {
			if strings.HasPrefix(k, "drift.") {
				t.Errorf("%s: drift %s in a conversation that only extended its history", e.Session, k)
			}
		}
	}
}

// Structured output with the SDK's parse(): the pydantic model's schema goes out as response_format
// (json_schema, strict), reaches SGLang as its json_schema constraint, and the SDK parses the reply into the model.
func TestOpenAISDKStructuredOutput(t *testing.T) {
	py := sdkPython(t)
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	r := runAgent(t, py, h, "sdk-json", "structured", "[script:json] What is 2 + 3? Answer in JSON.")
	if len(r.Replies) != 2 || *r.Replies[0] != `{"answer": 5}` || *r.Replies[1] != "5" || len(r.Trajectories) != 1 {
		t.Fatalf("%+v", r)
	}
	logged := h.loggedSampling(t)
	schema, _ := logged[len(logged)-1]["json_schema"].(string)
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil || s.Properties["answer"] == nil || len(s.Required) != 1 {
		t.Fatalf("json_schema sent to SGLang: %q (%v)", schema, err)
	}
}

// With frontdoor.session_ids = "minted", the SDK agent asks for a session id first and runs its tool loop in it;
// one that names its own session is refused.
func TestOpenAISDKMintedSession(t *testing.T) {
	py := sdkPython(t)
	cfg := defaultConfig(frontdoor.DriftReject)
	cfg.SessionIDs = frontdoor.SessionIDsMinted
	h := newHarness(t, cfg, map[string]any{"enable_thinking": false})
	r := runScript(t, py, "openai_agent.py", "--server", h.srv.URL, "--mint", "--mode", "tools", "--task", "[script:calc] Add 2 and 3.")
	if len(r.Trajectories) != 1 || len(r.Replies) != 2 || !strings.HasPrefix(r.Trajectories[0], "frontdoor/s-") {
		t.Fatalf("%+v", r)
	}
	cmd := exec.Command(py, "../../examples/frontdoor/openai_agent.py", "--server", h.srv.URL, "--session", "ep-42", "--task", "[script:calc] x")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "openai.NotFoundError") || !strings.Contains(string(out), "POST /v1/sessions") {
		t.Fatalf("an agent naming its own session: %v\n%s", err, out)
	}
}

// A caller that replaces its history with a summary, under fork (two trajectories sharing a prefix) and realign
// (one trajectory, the cut recorded).
func TestOpenAISDKSummaryForks(t *testing.T) {
	py := sdkPython(t)
	h := newHarness(t, defaultConfig(frontdoor.DriftFork), map[string]any{"enable_thinking": false})
	r := runAgent(t, py, h, "sdk-sum", "summarise", "[script:chat] Hi there.")
	if len(r.Trajectories) != 2 || len(r.Replies) != 3 {
		t.Fatalf("%+v", r)
	}
	h.mu.Lock()
	em := append([]frontdoor.Emitted(nil), h.emitted...)
	h.mu.Unlock()
	a, b := decodeTraj(t, em[0]), decodeTraj(t, em[1])
	if a.Turns() != 2 || b.Turns() != 1 || a.StatusReason != frontdoor.ReasonForked || b.Metrics["drift.fork.user_edited"] != 1 {
		t.Fatalf("branches: %d turns (%s), %d turns, metrics %v", a.Turns(), a.StatusReason, b.Turns(), b.Metrics)
	}
	h.check(t, a)
	h.check(t, b)

	// The same caller under realign: one trajectory, the summary's tokens in place of the replaced history.
	h = newHarness(t, defaultConfig(frontdoor.DriftRealign), map[string]any{"enable_thinking": false})
	r = runAgent(t, py, h, "sdk-sum", "summarise", "[script:chat] Hi there.")
	if len(r.Trajectories) != 1 {
		t.Fatalf("%+v", r)
	}
	h.mu.Lock()
	tr := decodeTraj(t, h.emitted[0])
	h.mu.Unlock()
	if tr.Turns() != 1 || tr.Metrics["drift.realign.user_edited"] != 1 || len(tr.Warnings) == 0 {
		t.Fatalf("realigned: %d turns, metrics %v, warnings %v", tr.Turns(), tr.Metrics, tr.Warnings)
	}
	h.check(t, tr)
}

// The official anthropic SDK's tool loop (examples/frontdoor/anthropic_agent.py), plain and streamed, with an API
// key (server.token): the replies' content blocks go back as the SDK gives them, and every trajectory passes
// bench/check.py.
func TestAnthropicSDKToolLoop(t *testing.T) {
	py := sdkPython(t)
	cfg := defaultConfig(frontdoor.DriftReject)
	cfg.Token = "k3y" // the SDK sends it as x-api-key
	h := newHarness(t, cfg, nil)
	plain := runScript(t, py, "anthropic_agent.py", "--server", h.srv.URL, "--session", "anth", "--api-key", "k3y", "--task", "[script:think] What is 2 + 3?")
	streamed := runScript(t, py, "anthropic_agent.py", "--server", h.srv.URL, "--session", "anth-s", "--api-key", "k3y", "--stream", "--task", "[script:think] Add 2 and 3.")
	for _, r := range []agentRun{plain, streamed} {
		if len(r.Trajectories) != 1 || len(r.Replies) != 2 || *r.Replies[1] != "The sum is 5." {
			t.Fatalf("%+v", r)
		}
	}
	res := independentCheck(t, py, h)
	if res["ok"] != true || res["trajectories"].(float64) != 2 || res["turns"].(float64) != 4 {
		t.Fatalf("bench/check.py: %v", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.emitted {
		tr := decodeTraj(t, e)
		for k := range tr.Metrics {
			if strings.HasPrefix(k, "drift.") {
				t.Errorf("%s: drift %s in a conversation that only extended its history", e.Session, k)
			}
		}
	}
}

// The Responses API through the openai SDK: the tool loop that appends the output items to its input, and the one
// that chains previous_response_id and sends only the new items; both extend their session (no drift) and pass
// bench/check.py.
func TestOpenAISDKResponses(t *testing.T) {
	py := sdkPython(t)
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), nil)
	items := runAgent(t, py, h, "resp-items", "responses", "[script:think] What is 2 + 3?")
	chained := runAgent(t, py, h, "resp-chained", "chained", "[script:think] Add 2 and 3.")
	streamed := runAgent(t, py, h, "resp-stream", "responses-stream", "[script:think] Add 2 and 3 (streamed).")
	for _, r := range []agentRun{items, chained, streamed} {
		if len(r.Trajectories) != 1 || len(r.Replies) != 2 || *r.Replies[1] != "The sum is 5." {
			t.Fatalf("%+v", r)
		}
	}
	res := independentCheck(t, py, h)
	if res["ok"] != true || res["trajectories"].(float64) != 3 || res["turns"].(float64) != 6 {
		t.Fatalf("bench/check.py: %v", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.emitted {
		for k := range decodeTraj(t, e).Metrics {
			if strings.HasPrefix(k, "drift.") {
				t.Errorf("%s: drift %s in a conversation that only extended its history", e.Session, k)
			}
		}
	}
}

// A Strands agent (strands-agents, from the benchmark's hash-pinned venv, scripts/setup.d/70-bench.sh) with its
// OpenAI model provider: Strands' own tool loop, streaming and message formatting, pointed at a session.
func TestStrandsAgent(t *testing.T) {
	py := sdkPython(t)
	strands := filepath.Join(os.Getenv("AGENTRT_CACHE"), "venv-bench", "bin", "python")
	if _, err := os.Stat(strands); os.Getenv("AGENTRT_CACHE") == "" || err != nil {
		t.Skip("the benchmark venv with strands-agents is missing: run `make setup` (scripts/setup.d/70-bench.sh)")
	}
	h := newHarness(t, defaultConfig(frontdoor.DriftReject), nil)
	r := runScript(t, strands, "strands_agent.py", "--server", h.srv.URL, "--session", "strands", "--task", "[script:think] What is 2 + 3?")
	if len(r.Trajectories) != 1 || len(r.Replies) != 1 || *r.Replies[0] != "The sum is 5." {
		t.Fatalf("%+v", r)
	}
	res := independentCheck(t, py, h)
	if res["ok"] != true || res["trajectories"].(float64) != 1 || res["turns"].(float64) != 2 {
		t.Fatalf("bench/check.py: %v", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range decodeTraj(t, h.emitted[0]).Metrics {
		if strings.HasPrefix(k, "drift.") {
			t.Errorf("drift %s in a conversation that only extended its history", k)
		}
	}
}
