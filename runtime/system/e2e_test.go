package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testmodel"
	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// These end-to-end tests run real episodes: the real Qwen3 tokenizer and chat template, the SGLang emulator over
// HTTP, the SGLang client, the built-in Wasm parser, calculator and limiter through the plugin host. Every
// trajectory is checked against the emulator's request log (the prefix invariant from the server's side,
// verbatim responses) and its logprobs are recomputed with the emulator's scoring function.

var (
	qwen3 *tito.Model
	host  *plugin.Host
)

func TestMain(m *testing.M) { testmodel.Main(m, "runtime/system", &qwen3, &host) }

// syncBuffer is the emulator's request log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []emulator.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []emulator.LogRecord
	for _, line := range bytes.Split(s.b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r emulator.LogRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("emulator log line: %v", err)
		}
		out = append(out, r)
	}
	return out
}

type harness struct {
	agent  *runtime.Agent
	log    *syncBuffer
	srv    *httptest.Server
	client *sglang.Client
	// generating counts the /generate requests the emulator is serving now (for tests that wait on one).
	generating atomic.Int64
}

func defaultAgent() config.Agent {
	ac := config.DefaultAgent()
	ac.Name = "calc"
	ac.Model = os.Getenv("AGENTRT_QWEN3_MODEL")
	ac.SystemPrompt = "You are a careful assistant. Use the calculator tool for arithmetic."
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	ac.Tools = []config.Plugin{{Plugin: "builtin:calculator"}}
	ac.Hooks = []config.Plugin{{Plugin: "builtin:limiter", Config: map[string]any{"max_tool_iters": 5}}}
	ac.ToolTimeout = 5 * time.Second
	return ac
}

func newHarness(t *testing.T, ec emulator.Config, ac config.Agent, retry sglang.RetryConfig) *harness {
	t.Helper()
	return newHarnessWith(t, ec, ac, retry, nil)
}

func newHarnessWith(t *testing.T, ec emulator.Config, ac config.Agent, retry sglang.RetryConfig, gate *turn.Gate, opts ...emulator.Option) *harness {
	t.Helper()
	ec.StopIDs, ec.VocabSize = qwen3.StopIDs, qwen3.Tokenizer.VocabSize()
	h := &harness{log: &syncBuffer{}}
	emu, err := emulator.New(ec, qwen3.Tokenizer, append([]emulator.Option{emulator.WithLog(h.log)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/generate" {
			h.generating.Add(1)
			defer h.generating.Add(-1)
		}
		emu.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() {
		// Runs before the server's Close: a request a failed test left waiting (at a pause, say) is aborted, so the
		// Close does not wait for it for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		emu.Close(ctx)
	})
	sc := sglang.DefaultConfig()
	sc.Workers = []string{h.srv.URL}
	sc.Retry = retry
	client, err := sglang.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h.client = client
	h.agent, err = system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: client, Model: qwen3,
		MaxModelLen: func(ctx context.Context) (int, error) { return client.MaxModelLen(ctx, "") }, Server: h.srv.URL, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.agent.Close(context.Background()) }) // its plugin modules leave the shared host
	return h
}

// untilRunning waits until the emulator runs n generations: its own count (/v1/loads num_running_reqs), not
// just requests that reached its handler, so that a pause(abort) sent next finds them to abort.
func (h *harness) untilRunning(t *testing.T, n int, what string) {
	t.Helper()
	testutil.Until(t, what, func() bool {
		if h.generating.Load() != int64(n) {
			return false
		}
		l, err := h.client.Loads(context.Background(), h.srv.URL)
		return err == nil && l.Running == n
	})
}

func fastRetry() sglang.RetryConfig {
	r := sglang.DefaultConfig().Retry
	r.InitialBackoff, r.MaxBackoff = time.Millisecond, 5*time.Millisecond
	return r
}

func (h *harness) run(t *testing.T, id, prompt string) *tito.Trajectory {
	t.Helper()
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: id, ItemID: id, GroupID: id,
		Messages: []tito.Message{{Role: "user", Content: prompt}}})
	h.check(t, tr)
	return tr
}

type wireReq struct {
	InputIDs        []int32 `json:"input_ids"`
	LogprobStartLen int     `json:"logprob_start_len"`
	Sampling        struct {
		MaxNewTokens int `json:"max_new_tokens"`
	} `json:"sampling_params"`
}

type wireResp struct {
	OutputIDs []int32 `json:"output_ids"`
}

// check proves the trajectory's invariants from the server's side: the requests of the episode (as the
// emulator logged them) extend each other exactly; the response segments are the served output_ids verbatim;
// the final trajectory is the last request plus its output; every logprob is the emulator's scoring function.
func (h *harness) check(t *testing.T, tr *tito.Trajectory) {
	t.Helper()
	if err := tr.Validate(); err != nil {
		t.Fatalf("%s: %v", tr.ID, err)
	}
	var reqs []wireReq
	var resps []wireResp
	for _, r := range h.log.records(t) {
		if r.Path != "/generate" || r.Status != 200 || r.Fault != "" || !strings.HasPrefix(r.RID, tr.ID+".") {
			continue
		}
		var q wireReq
		var p wireResp
		if err := json.Unmarshal(r.Request, &q); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Response, &p); err != nil {
			t.Fatal(err)
		}
		reqs, resps = append(reqs, q), append(resps, p)
	}
	var responses []tito.Segment
	for _, s := range tr.Segments {
		if s.Kind == tito.KindResponse {
			responses = append(responses, s)
		}
	}
	if len(responses) != len(reqs) {
		t.Fatalf("%s: %d response segments but the server answered %d requests", tr.ID, len(responses), len(reqs))
	}
	for k := range reqs {
		if k == 0 && reqs[0].LogprobStartLen != -1 {
			t.Errorf("%s: request 0 logprob_start_len %d, want -1 (no prompt logprobs, so SGLang's radix match is not cut)", tr.ID, reqs[0].LogprobStartLen)
		}
		if k > 0 {
			prev := append(append([]int32{}, reqs[k-1].InputIDs...), resps[k-1].OutputIDs...)
			if len(reqs[k].InputIDs) < len(prev) || !equalIDs(reqs[k].InputIDs[:len(prev)], prev) {
				t.Fatalf("%s: request %d does not extend request %d + its output (prefix invariant)", tr.ID, k, k-1)
			}
			if reqs[k].LogprobStartLen != len(prev)-1 {
				t.Errorf("%s: request %d logprob_start_len %d, want %d", tr.ID, k, reqs[k].LogprobStartLen, len(prev)-1)
			}
		}
		s := responses[k]
		if !equalIDs(tr.TokenIDs[s.Offset:s.Offset+s.Length], resps[k].OutputIDs) {
			t.Fatalf("%s: response segment %d is not the served output_ids verbatim", tr.ID, k)
		}
	}
	if n := len(reqs); n > 0 {
		final := append(append([]int32{}, reqs[n-1].InputIDs...), resps[n-1].OutputIDs...)
		if !equalIDs(tr.TokenIDs, final) {
			t.Fatalf("%s: trajectory (%d ids) != last request + its output (%d ids)", tr.ID, len(tr.TokenIDs), len(final))
		}
	}
	if len(tr.TokenIDs) > 0 && !math.IsNaN(tr.Logprobs[0]) {
		t.Errorf("%s: logprob of token 0 is %v, want null", tr.ID, tr.Logprobs[0])
	}
	if len(reqs) > 0 {
		first := tr.Segments[0].Length // the first prompt has no logprobs (logprob_start_len -1 keeps the radix match)
		for p := 1; p < first; p++ {
			if !math.IsNaN(tr.Logprobs[p]) {
				t.Fatalf("%s: logprob[%d] of the first prompt = %v, want null", tr.ID, p, tr.Logprobs[p])
			}
		}
		for p := first; p < len(tr.TokenIDs); p++ {
			want := emulator.Logprob(tr.TokenIDs[max(0, p-emulator.LogprobWindow):p], tr.TokenIDs[p])
			if math.Float64bits(tr.Logprobs[p]) != math.Float64bits(want) {
				t.Fatalf("%s: logprob[%d] = %v, the emulator's scoring function gives %v", tr.ID, p, tr.Logprobs[p], want)
			}
		}
	}
	for _, s := range tr.Segments {
		for i := s.Offset; i < s.Offset+s.Length; i++ {
			if want := uint8(map[tito.SegmentKind]int{tito.KindPrompt: 0, tito.KindResponse: 1}[s.Kind]); tr.LossMask[i] != want {
				t.Fatalf("%s: loss_mask[%d] = %d in a %s segment", tr.ID, i, tr.LossMask[i], s.Kind)
			}
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func messages(t *testing.T, tr *tito.Trajectory) []tito.Message {
	t.Helper()
	ms, err := tito.DecodeMessages(tr.Messages)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func wantStatus(t *testing.T, tr *tito.Trajectory, status, reason string) {
	t.Helper()
	if tr.Status != status || tr.StatusReason != reason {
		t.Fatalf("%s: status %s/%s (error %q), want %s/%s", tr.ID, tr.Status, tr.StatusReason, tr.Error, status, reason)
	}
}

func lastSegment(tr *tito.Trajectory) tito.Segment { return tr.Segments[len(tr.Segments)-1] }

func TestParallelToolCalls(t *testing.T) {
	ec := emulator.DefaultConfig()
	ec.Seed = 3
	h := newHarness(t, ec, defaultAgent(), fastRetry())
	seen2 := false
	for i, task := range []string{"What is 12*7+3?", "Compute (17+25)*3 and 144/12.", "Add 1.5+2.25, 10-4 and 9*9."} {
		tr := h.run(t, fmt.Sprintf("e%d", i), task)
		wantStatus(t, tr, runtime.StatusCompleted, "")
		ms := messages(t, tr)
		var results []string
		for _, m := range ms {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		for _, m := range ms {
			if m.Role == "assistant" && len(m.ToolCalls) >= 2 {
				seen2 = true
			}
		}
		if len(results) == 0 || tr.Metrics["tool_calls.ok"] != float64(len(results)) {
			t.Errorf("%s: tool results %q, metrics %v", tr.ID, results, tr.Metrics)
		}
		if tr.Provenance[tito.ProvTokenizerSHA256] != qwen3.TokenizerSHA256 {
			t.Errorf("provenance = %v", tr.Provenance)
		}
		last := lastSegment(tr)
		if last.Kind != tito.KindResponse || last.Info == nil || last.Info.FinishReason != "stop" {
			t.Errorf("%s: last segment %+v", tr.ID, last)
		}
		if tr.Segments[len(tr.Segments)-1].Info.CachedTokens == 0 {
			t.Errorf("%s: the second turn reused no prefix cache", tr.ID)
		}
	}
	if !seen2 {
		t.Error("no episode made parallel tool calls")
	}
	// The calculator's answers reach the model: 12*7+3 = 87.
	tr := h.run(t, "check", "What is 12*7+3?")
	if !strings.Contains(messages(t, tr)[len(messages(t, tr))-1].Content, "87") {
		t.Errorf("final answer %q lacks 87", messages(t, tr)[len(messages(t, tr))-1].Content)
	}
}

func TestNonCanonicalTokenizationsStayExact(t *testing.T) {
	ec := emulator.DefaultConfig()
	ec.NonCanonicalRate = 1
	h := newHarness(t, ec, defaultAgent(), fastRetry())
	tr := h.run(t, "nc", "Compute (17+25)*3 and 144/12.")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.Drift == nil || tr.Drift.Drifted == 0 {
		t.Fatalf("drift audit %+v: the emulator's non-canonical ids went unnoticed", tr.Drift)
	}
}

func TestMalformedCallsBecomeErrorResults(t *testing.T) {
	ec := emulator.DefaultConfig()
	ec.MalformedRate = 1
	ec.Seed = 7
	ac := defaultAgent()
	h := newHarness(t, ec, ac, fastRetry())
	var errs float64
	for i := range 4 {
		tr := h.run(t, fmt.Sprintf("m%d", i), "What is 6*7?")
		for k, v := range tr.Metrics {
			if strings.HasPrefix(k, "parse_errors.") || k == "tool_calls.unknown_tool" {
				errs += v
			}
		}
		for _, m := range messages(t, tr) {
			if m.Role == "tool" && !strings.HasPrefix(m.Content, "Error:") {
				t.Errorf("%s: a malformed call got a non-error result %q", tr.ID, m.Content)
			}
		}
		if tr.Status != runtime.StatusCompleted && tr.Status != runtime.StatusTruncated {
			t.Errorf("%s: status %s (%s)", tr.ID, tr.Status, tr.Error)
		}
	}
	if errs == 0 {
		t.Fatal("no parse errors or unknown-tool results counted with malformed_rate 1")
	}
}

func TestLimiterStopsOnToolCallingResponse(t *testing.T) {
	ac := defaultAgent()
	ac.Hooks = []config.Plugin{{Plugin: "builtin:limiter", Config: map[string]any{"max_tool_iters": 1}}}
	h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	tr := h.run(t, "lim", "What is 2+2?")
	wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonMaxToolIters)
	// The hook's stop message says why the episode stopped; it is not an error (plugins/ABI.md 5.3).
	js, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"stop_message":"Max tool iterations (1) reached."`; tr.Error != "" || !strings.Contains(string(js), want) || strings.Contains(string(js), `"error"`) {
		t.Errorf("trajectory error %q, JSON %.300s: want no error and %s", tr.Error, js, want)
	}
	last := lastSegment(tr)
	text := qwen3.Tokenizer.Decode(tr.TokenIDs[last.Offset:last.Offset+last.Length], false)
	if last.Kind != tito.KindResponse || !strings.Contains(text, "<tool_call>") {
		t.Fatalf("trajectory ends on %s %q, want the model's tool-calling response", last.Kind, text)
	}
}

func TestParallelLimitCancelsExtraCalls(t *testing.T) {
	ac := defaultAgent()
	ac.Hooks = []config.Plugin{{Plugin: "builtin:limiter", Config: map[string]any{"max_parallel_tool_calls": 1}}}
	ec := emulator.DefaultConfig()
	h := newHarness(t, ec, ac, fastRetry())
	found := false
	for i := range 6 {
		tr := h.run(t, fmt.Sprintf("par%d", i), "Compute 1+1, 2+2, 3+3 and 4+4.")
		if tr.Metrics["tool_calls.cancelled"] > 0 {
			found = true
			for _, m := range messages(t, tr) {
				if m.Role == "tool" && strings.Contains(m.Content, "Max parallel tool calls (1) reached") {
					return
				}
			}
			t.Fatalf("%s: cancelled calls without the limiter's message", tr.ID)
		}
	}
	if !found {
		t.Fatal("no episode had a call cancelled by max_parallel_tool_calls = 1")
	}
}

func TestLengthTruncation(t *testing.T) {
	ac := defaultAgent()
	ac.Sampling.MaxNewTokens = 5
	h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	tr := h.run(t, "len", "What is 12*7+3?")
	wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonLength)
	if last := lastSegment(tr); last.Kind != tito.KindResponse || last.Length != 5 {
		t.Fatalf("last segment %+v, want a 5-token response", last)
	}
}

func TestContextWindow(t *testing.T) {
	// Find the first prompt's length, then give the episode barely more room than that.
	h0 := newHarness(t, emulator.DefaultConfig(), defaultAgent(), fastRetry())
	first := h0.run(t, "probe", "What is 12*7+3?").Segments[0].Length

	ac := defaultAgent()
	ac.ContextWindow = first + 8
	h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	tr := h.run(t, "ctx", "What is 12*7+3?")
	wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonContextWindow)
	if len(tr.TokenIDs) > ac.ContextWindow {
		t.Fatalf("%d tokens in a %d-token window", len(tr.TokenIDs), ac.ContextWindow)
	}

	ac.ContextWindow = first // no room at all: ends before any request
	h = newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
	tr = h.run(t, "full", "What is 12*7+3?")
	wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonContextWindow)
	for _, r := range h.log.records(t) {
		if r.Path == "/generate" {
			t.Fatal("a request was sent with no room left in the context window")
		}
	}
}

func TestServerFaults(t *testing.T) {
	// Some faults: retries hide them, the trajectory is still exact.
	ec := emulator.DefaultConfig()
	ec.Faults = emulator.Faults{HTTP503: 0.2, HTTP500: 0.1, Reset: 0.1, Truncate: 0.1}
	h := newHarness(t, ec, defaultAgent(), fastRetry())
	for i := range 4 {
		tr := h.run(t, fmt.Sprintf("f%d", i), "Compute (17+25)*3 and 144/12.")
		if tr.Status == runtime.StatusCompleted {
			continue
		}
		wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonServerUnavailable)
	}
	faults := 0
	for _, r := range h.log.records(t) {
		if r.Fault != "" {
			faults++
		}
	}
	if faults == 0 {
		t.Fatal("no fault was injected")
	}

	// Only faults: retries run out and the episode is aborted, never completed.
	ec.Faults = emulator.Faults{HTTP503: 1}
	h = newHarness(t, ec, defaultAgent(), fastRetry())
	tr := h.run(t, "down", "What is 1+1?")
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonServerUnavailable)
	n := 0
	for _, r := range h.log.records(t) {
		if r.Path == "/generate" {
			n++
		}
	}
	if n != fastRetry().MaxAttempts {
		t.Errorf("%d attempts logged, want %d", n, fastRetry().MaxAttempts)
	}
}

func TestCrashingToolBecomesErrorResult(t *testing.T) {
	probe := filepath.Join("..", "plugin", "testdata", "go", "probe", "probe.wasm")
	for _, tc := range []struct{ tool, want string }{
		{"panic", "boom"},
		{"spin", "timed out"},
		{"exit", "failed"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ac := defaultAgent()
			// Only spin needs a short limit; the others get one no loaded machine reaches, so that a slow
			// instantiation cannot turn "boom" into "timed out".
			limit := time.Minute
			if tc.tool == "spin" {
				limit = time.Second
			}
			ac.Tools = []config.Plugin{{Plugin: probe, Only: []string{tc.tool}, Timeout: limit}}
			h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
			// The emulator calls the tool the task names.
			tr := h.run(t, "crash-"+tc.tool, "Please call "+tc.tool+" on this.")
			wantStatus(t, tr, runtime.StatusCompleted, "")
			var res string
			for _, m := range messages(t, tr) {
				if m.Role == "tool" {
					res = m.Content
				}
			}
			if !strings.HasPrefix(res, "Error:") || !strings.Contains(res, tc.want) {
				t.Fatalf("tool result %q, want an error result saying %q", res, tc.want)
			}
			// The runtime's overhead excludes the tool's time: the spinning tool held the turn for 1 s.
			var overheads []float64
			for _, s := range tr.Segments {
				if s.Kind == tito.KindResponse {
					overheads = append(overheads, s.Info.OverheadMS)
				}
			}
			if len(overheads) < 2 || overheads[1] <= 0 || (tc.tool == "spin" && overheads[1] >= 1000) {
				t.Fatalf("turn overheads %v ms, want > 0 and, for spin, without the tool's 1 s", overheads)
			}
			// The runtime keeps serving: the next episode runs the tool again on a fresh instance.
			tr = h.run(t, "again-"+tc.tool, "Please use the tool on this.")
			wantStatus(t, tr, runtime.StatusCompleted, "")
		})
	}
}

func TestBatchRunsGroupsAndStopsOnCancel(t *testing.T) {
	h := newHarness(t, emulator.DefaultConfig(), defaultAgent(), fastRetry())
	it := runtime.Item{ID: "q", Prompt: "What is 3*3?", N: 4, Label: json.RawMessage(`"9"`)}
	var mu sync.Mutex
	var got []*tito.Trajectory
	err := rollout.RunBatch(context.Background(), h.agent, it.Episodes("req1/"), 3, func(tr *tito.Trajectory) error {
		mu.Lock()
		got = append(got, tr)
		mu.Unlock()
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d trajectories, want 4", len(got))
	}
	seen := map[int]bool{}
	for _, tr := range got {
		h.check(t, tr)
		if tr.GroupID != "req1/q" || string(tr.Label) != `"9"` {
			t.Errorf("group %q label %s", tr.GroupID, tr.Label)
		}
		seen[tr.SampleIndex] = true
	}
	if len(seen) != 4 {
		t.Errorf("sample indices %v", seen)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = rollout.RunBatch(ctx, h.agent, it.Episodes("req2/"), 2, func(*tito.Trajectory) error {
		t.Error("a trajectory was emitted after cancellation")
		return nil
	}, nil)
	if err == nil {
		t.Fatal("RunBatch on a cancelled context returned nil")
	}
}
