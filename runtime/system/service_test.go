package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// emitter collects what a request finishes, and its per-turn events.
type emitter struct {
	mu     sync.Mutex
	got    []stream.Finished
	events []stream.TurnEvent
}

func (e *emitter) Finish(ctx context.Context, f stream.Finished) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, f)
	return nil
}
func (e *emitter) Turn(ev stream.TurnEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

func (e *emitter) trajectories(t *testing.T) []*tito.Trajectory {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*tito.Trajectory
	for _, f := range e.got {
		var tr tito.Trajectory
		if err := json.Unmarshal(f.Trajectory, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.ID != f.TrajectoryID {
			t.Errorf("trajectory id %q, finished as %q", tr.ID, f.TrajectoryID)
		}
		out = append(out, &tr)
	}
	return out
}

func newService(t *testing.T, ec emulator.Config) (*rollout.Service, *harness, *turn.Gate) {
	t.Helper()
	gate := &turn.Gate{}
	h := newHarnessWith(t, ec, defaultAgent(), fastRetry(), gate)
	svc, err := rollout.NewService(map[string]*runtime.Agent{"calc": h.agent}, 8, gate, h.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc, h, gate
}

func request(id string, n int, prompts ...string) stream.RolloutRequest {
	req := stream.RolloutRequest{ID: id, Consumer: "t"}
	for i, p := range prompts {
		msgs, _ := json.Marshal([]map[string]string{{"role": "user", "content": p}})
		req.Items = append(req.Items, stream.Item{ID: string(rune('a' + i)), Messages: msgs, N: n})
	}
	return req
}

func TestServiceRunsRequests(t *testing.T) {
	svc, h, _ := newService(t, emulator.DefaultConfig())
	out := &emitter{}
	if err := svc.Run(context.Background(), request("r1", 2, "What is 2*21?", "Compute 3+4 and 5*6."), out); err != nil {
		t.Fatal(err)
	}
	trs := out.trajectories(t)
	if len(trs) != 4 {
		t.Fatalf("%d trajectories, want 4", len(trs))
	}
	for _, tr := range trs {
		h.check(t, tr)
		wantStatus(t, tr, runtime.StatusCompleted, "")
		if !strings.HasPrefix(tr.GroupID, "r1/") || tr.ID != tr.GroupID+"/"+string(rune('0'+tr.SampleIndex)) {
			t.Errorf("ids: group %q trajectory %q", tr.GroupID, tr.ID)
		}
	}
}

func TestServiceValidate(t *testing.T) {
	svc, _, _ := newService(t, emulator.DefaultConfig())
	bad := request("r", 1, "x")
	bad.Agent = "nope"
	if err := svc.Validate(bad); err == nil || !strings.Contains(err.Error(), `unknown agent "nope"`) {
		t.Errorf("unknown agent: %v", err)
	}
	bad = request("r", 1, "x")
	bad.Items[0].Messages = json.RawMessage(`[{"role": "robot", "content": "hi"}]`)
	if err := svc.Validate(bad); err == nil || !strings.Contains(err.Error(), "robot") {
		t.Errorf("bad role: %v", err)
	}
	bad = request("r", 1, "x")
	bad.Sampling = json.RawMessage(`{"temprature": 0.5}`)
	if err := svc.Validate(bad); err == nil || !strings.Contains(err.Error(), "temprature") {
		t.Errorf("unknown sampling key: %v", err)
	}
	bad = request("r", 1, "x")
	bad.Sampling = json.RawMessage(`{"n": 4}`)
	if err := svc.Validate(bad); err == nil || !strings.Contains(err.Error(), `sampling: n = 4`) {
		t.Errorf("SGLang's n: %v", err)
	}
	// What SGLang would answer with a 400 on every call is refused at submit, with SGLang's message; an override
	// of min_new_tokens alone is checked against no max_new_tokens of its own.
	bad = request("r", 1, "x")
	bad.Sampling = json.RawMessage(`{"temperature": -1}`)
	if err := svc.Validate(bad); err == nil || !strings.Contains(err.Error(), "temperature must be a non-negative finite number") {
		t.Errorf("temperature -1: %v", err)
	}
	ok := request("r", 1, "x")
	ok.Sampling = json.RawMessage(`{"min_new_tokens": 5}`)
	if err := svc.Validate(ok); err != nil {
		t.Errorf("min_new_tokens alone: %v", err)
	}
	if err := svc.Validate(request("r", 1, "x")); err != nil {
		t.Errorf("good request: %v", err)
	}
}

func generates(t *testing.T, h *harness) int {
	n := 0
	for _, r := range h.log.records(t) {
		if r.Path == "/generate" {
			n++
		}
	}
	return n
}

func TestServicePauseHoldsTurns(t *testing.T) {
	svc, h, gate := newService(t, emulator.DefaultConfig())
	ctx := context.Background()
	if err := svc.Pause(ctx, sglang.PauseInPlace); err != nil {
		t.Fatal(err)
	}
	out := &emitter{}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, request("p", 1, "What is 1+1?"), out) }()
	testutil.Until(t, "the episode's first turn to wait at the pause gate", func() bool { return gate.Waiting() == 1 })
	if n := generates(t, h); n != 0 {
		t.Fatalf("%d /generate calls while paused", n)
	}
	if err := svc.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := testutil.Recv(t, "Run to finish after the resume", done); err != nil {
		t.Fatal(err)
	}
	if trs := out.trajectories(t); len(trs) != 1 || trs[0].Status != runtime.StatusCompleted {
		t.Fatalf("after resume: %+v", trs)
	}
}

func TestServiceCancelAbortsOnServer(t *testing.T) {
	ec := emulator.DefaultConfig()
	ec.Latency = emulator.Latency{Fixed: 5 * time.Second}
	svc, h, _ := newService(t, ec)
	ctx, cancel := context.WithCancel(context.Background())
	out := &emitter{}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, request("c", 2, "What is 1+1?"), out) }()
	h.untilRunning(t, 2, "both episodes' first /generate to be running in the emulator")
	cancel()
	testutil.Wait(t, "Run to return after the cancel", done)
	trs := out.trajectories(t)
	if len(trs) != 2 {
		t.Fatalf("%d trajectories after cancel, want 2 (aborted ones are delivered too)", len(trs))
	}
	for _, tr := range trs {
		wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonAbortedByRequest)
	}
	aborts := 0
	for _, r := range h.log.records(t) {
		if r.Path == "/abort_request" {
			aborts++
		}
	}
	if aborts == 0 {
		t.Fatal("cancelled episodes were not aborted on the SGLang side")
	}
}

// TestServiceForwardsSlimeSamplingParams submits slime's actual GenerateState.sampling_params (slime/rollout/
// sglang_rollout.py: rollout_* args, no_stop_trim=True, spaces_between_special_tokens=False, custom_params when
// top_p != 1, sampling_seed under deterministic inference) and checks every /generate request carries each of
// them verbatim (null ones are left to the server's default, which null means).
func TestServiceForwardsSlimeSamplingParams(t *testing.T) {
	svc, h, _ := newService(t, emulator.DefaultConfig())
	slime := `{"temperature": 1.0, "top_p": 0.95, "top_k": -1, "max_new_tokens": 512, "stop": null, "stop_token_ids": null,
	  "skip_special_tokens": false, "no_stop_trim": true, "spaces_between_special_tokens": false,
	  "custom_params": {"return_top_p_token_ids": true}, "sampling_seed": 1234}`
	req := request("slime", 2, "What is 2*21?")
	req.Sampling = json.RawMessage(slime)
	if err := svc.Validate(req); err != nil {
		t.Fatal(err)
	}
	out := &emitter{}
	if err := svc.Run(context.Background(), req, out); err != nil {
		t.Fatal(err)
	}
	for _, tr := range out.trajectories(t) {
		h.check(t, tr)
		wantStatus(t, tr, runtime.StatusCompleted, "")
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(slime), &want)
	calls := 0
	for _, r := range h.log.records(t) {
		if r.Path != "/generate" {
			continue
		}
		calls++
		var body struct {
			Sampling map[string]any `json:"sampling_params"`
		}
		if err := json.Unmarshal(r.Request, &body); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			got, sent := body.Sampling[k]
			switch {
			case v == nil && sent:
				t.Errorf("%s: %s sent as %v, want it left out (null)", r.RID, k, got)
			case v != nil && k != "max_new_tokens" && !reflect.DeepEqual(got, v):
				t.Errorf("%s: %s sent as %#v, want %#v", r.RID, k, got, v)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no /generate request was logged")
	}
}

// TestServiceItemResponseBudget: an item's max_response_tokens reaches its episodes, and a negative one is refused
// naming the item.
func TestServiceItemResponseBudget(t *testing.T) {
	svc, h, _ := newService(t, emulator.DefaultConfig())
	req := request("budget", 2, "What is 2*21?")
	req.Items[0].MaxResponseTokens = 6
	out := &emitter{}
	if err := svc.Run(context.Background(), req, out); err != nil {
		t.Fatal(err)
	}
	for _, tr := range out.trajectories(t) {
		h.check(t, tr)
		wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonResponseBudget)
		if n := len(tr.TokenIDs) - tr.PromptLength(); n != 6 {
			t.Errorf("%s: response of %d tokens, want the budget (6)", tr.ID, n)
		}
	}
	req.Items[0].MaxResponseTokens = -1
	if err := svc.Validate(req); err == nil || !strings.Contains(err.Error(), "items[0]") || !strings.Contains(err.Error(), "max_response_tokens") {
		t.Errorf("a negative budget: %v", err)
	}
}

// TestServiceWarnsStaleWeights: two requests of one consumer whose trajectories carry one weight_version past
// the threshold (1ns here) make serve warn and count the consumer as stale.
func TestServiceWarnsStaleWeights(t *testing.T) {
	svc, _, _ := newService(t, emulator.DefaultConfig())
	var logs syncBuffer
	svc.WarnStaleWeights(time.Nanosecond, slog.New(slog.NewTextHandler(&logs, nil)))
	for _, id := range []string{"s1", "s2"} {
		if err := svc.Run(context.Background(), request(id, 1, "What is 2*21?"), &emitter{}); err != nil {
			t.Fatal(err)
		}
	}
	logs.mu.Lock()
	text := logs.b.String()
	logs.mu.Unlock()
	if n := svc.StaleWeightConsumers(); n != 1 || !strings.Contains(text, "weight_version has not changed") {
		t.Errorf("stale consumers %d, log:\n%s", n, text)
	}
}

// TestServiceEmitsTurnEvents: a request that asked for events gets, per episode, a turn event for every model
// call (its tokens agree with the trajectory's segments) and a tool_call and a tool_result event for every tool
// call, in order; a request that did not ask gets none.
func TestServiceEmitsTurnEvents(t *testing.T) {
	svc, _, _ := newService(t, emulator.DefaultConfig())
	for _, asked := range []bool{false, true} {
		req := request("ev", 2, "What is 2*21?")
		req.ID += fmt.Sprint(asked)
		req.Events = asked
		out := &emitter{}
		if err := svc.Run(context.Background(), req, out); err != nil {
			t.Fatal(err)
		}
		if !asked {
			if len(out.events) != 0 {
				t.Fatalf("%d events for a request that did not ask", len(out.events))
			}
			continue
		}
		bySample := map[int][]runtime.Event{}
		for _, e := range out.events {
			var ev runtime.Event
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				t.Fatal(err)
			}
			if e.ItemID != "a" || e.Turn != ev.Turn {
				t.Fatalf("event frame %+v carries %+v", e, ev)
			}
			bySample[e.SampleIndex] = append(bySample[e.SampleIndex], ev)
		}
		for _, tr := range out.trajectories(t) {
			evs := bySample[tr.SampleIndex]
			var turns []runtime.Event
			calls := 0
			for i, ev := range evs {
				switch ev.Kind {
				case runtime.EventTurn:
					turns = append(turns, ev)
				case runtime.EventToolCall:
					calls++
					if i+1 >= len(evs) || evs[i+1].Kind != runtime.EventToolResult || evs[i+1].CallID != ev.CallID || evs[i+1].Outcome != "ok" {
						t.Errorf("%s: tool_call %+v not followed by its result", tr.ID, ev)
					}
				}
			}
			var segs []tito.Segment
			for _, s := range tr.Segments {
				if s.Kind == tito.KindResponse {
					segs = append(segs, s)
				}
			}
			if len(turns) != len(segs) || len(turns) < 2 || calls == 0 {
				t.Fatalf("%s: %d turn events and %d tool calls for %d responses", tr.ID, len(turns), calls, len(segs))
			}
			for i, ev := range turns {
				s := segs[i]
				if ev.Turn != i || ev.ResponseTokens != s.Length || ev.PromptTokens != s.Offset || ev.FinishReason != s.Info.FinishReason || ev.LatencyMS != s.Info.LatencyMS {
					t.Errorf("%s: turn event %+v; the trajectory's response %d has %d tokens after %d, finish %q, latency %v ms",
						tr.ID, ev, i, s.Length, s.Offset, s.Info.FinishReason, s.Info.LatencyMS)
				}
			}
		}
	}
}
