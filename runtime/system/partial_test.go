package system_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/rollout"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// abortingGenerator forwards to the emulator and makes the first call of the episode come back as SGLang sends a
// request aborted by pause_generation(mode=abort) while a weight update lands: the emulator's first `partial`
// output tokens, verbatim, with finish_reason abort; then it moves the emulator to weights "v2". Every call's
// request and answer are recorded so that the test can check the trajectory against exactly what was served.
type abortingGenerator struct {
	inner   *sglang.Client
	url     string
	partial int
	mu      sync.Mutex
	reqs    [][]int32
	outs    [][]int32
	maxNew  []int // each call's max_new_tokens, as sent
}

func (g *abortingGenerator) Generate(ctx context.Context, ep string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.mu.Lock()
	first := len(g.reqs) == 0
	g.mu.Unlock()
	if first {
		r := *req
		r.SamplingParams.MaxNewTokens = g.partial
		req = &r
	}
	resp, err := g.inner.Generate(ctx, ep, req)
	if err != nil {
		return nil, err
	}
	if first {
		resp.MetaInfo.FinishReason = &sglang.FinishReason{Type: sglang.FinishAbort, Message: "Aborted"}
		hr, err := http.Post(g.url+"/update_weight_version", "application/json", strings.NewReader(`{"new_version":"v2"}`))
		if err != nil {
			return nil, err
		}
		hr.Body.Close()
	}
	g.mu.Lock()
	g.reqs, g.outs = append(g.reqs, slices.Clone(req.InputIDs)), append(g.outs, slices.Clone(resp.OutputIDs))
	g.maxNew = append(g.maxNew, req.SamplingParams.MaxNewTokens)
	g.mu.Unlock()
	return resp, nil
}

func partialHarness(t *testing.T, policy string, mask bool) (*abortingGenerator, *runtime.Agent) {
	t.Helper()
	ac := defaultAgent()
	ac.PartialRollout, ac.MaskOffPolicy = policy, mask
	ec := emulator.DefaultConfig()
	ec.WeightVersion = "v1"
	h := newHarness(t, ec, ac, fastRetry())
	g := &abortingGenerator{inner: h.client, url: h.srv.URL, partial: 3}
	agent, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: g, Model: qwen3,
		MaxModelLen: func(ctx context.Context) (int, error) { return h.client.MaxModelLen(ctx, "") }, Server: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close(context.Background()) })
	return g, agent
}

// A turn aborted mid-generation by a weight update is resumed on the new weights: its partial output stays
// verbatim with its logprobs and version, the continuation's input is the trajectory so far plus that output,
// the response segment is the concatenation, and the spans and (with mask_offpolicy) the masks say which
// weights made which token.
func TestPartialRolloutResumesAbortedTurn(t *testing.T) {
	for _, mask := range []bool{false, true} {
		g, agent := partialHarness(t, runtime.PartialResume, mask)
		tr := agent.Run(context.Background(), runtime.Episode{ID: "p", Messages: []tito.Message{{Role: "user", Content: "What is 6*7?"}}})
		if err := tr.Validate(); err != nil {
			t.Fatal(err)
		}
		if tr.Status != runtime.StatusCompleted {
			t.Fatalf("status %s/%s %s", tr.Status, tr.StatusReason, tr.Error)
		}
		if len(g.reqs) < 3 {
			t.Fatalf("%d calls, want the aborted one, its continuation and a later turn", len(g.reqs))
		}
		// the continuation sent the trajectory so far plus the partial output, nothing else
		if want := append(slices.Clone(g.reqs[0]), g.outs[0]...); !slices.Equal(g.reqs[1], want) {
			t.Fatalf("continuation input (%d ids) is not the first request + its partial output (%d ids)", len(g.reqs[1]), len(want))
		}
		// prefix invariant across all calls, and the final trajectory is the last request + its output
		for k := 1; k < len(g.reqs); k++ {
			prev := append(slices.Clone(g.reqs[k-1]), g.outs[k-1]...)
			if !slices.Equal(g.reqs[k][:len(prev)], prev) {
				t.Fatalf("request %d does not extend request %d + its output", k, k-1)
			}
		}
		n := len(g.reqs) - 1
		if !slices.Equal(tr.TokenIDs, append(slices.Clone(g.reqs[n]), g.outs[n]...)) {
			t.Fatal("trajectory is not the last request + its output")
		}
		// the first response segment is both calls' outputs verbatim, tagged v1 then v2
		seg := tr.Segments[1]
		turn0 := append(slices.Clone(g.outs[0]), g.outs[1]...)
		if !slices.Equal(tr.TokenIDs[seg.Offset:seg.Offset+seg.Length], turn0) {
			t.Fatal("the resumed turn's segment is not the partial output + the continuation, verbatim")
		}
		if seg.Info.Resumed != 1 || seg.Info.WeightVersion != "v2" ||
			!slices.Equal(seg.Info.WeightVersions, []tito.WeightSpan{{Version: "v1", Start: 0, End: 3}, {Version: "v2", Start: 3, End: seg.Length}}) {
			t.Fatalf("segment info %+v", seg.Info)
		}
		versions := tr.TokenWeightVersions()
		for i := range tr.TokenIDs {
			want := ""
			switch {
			case i >= seg.Offset && i < seg.Offset+3:
				want = "v1"
			case tr.LossMask[i] == 1 || (i >= seg.Offset && i < seg.Offset+seg.Length):
				want = "v2"
			}
			for _, s := range tr.Segments[2:] {
				if s.Kind == tito.KindResponse && i >= s.Offset && i < s.Offset+s.Length {
					want = "v2"
				}
			}
			if versions[i] != want {
				t.Fatalf("token %d has version %q, want %q", i, versions[i], want)
			}
			// with mask_offpolicy exactly the v1 tokens lose their loss mask
			if mask && want == "v1" && tr.LossMask[i] != 0 || want == "v2" && tr.LossMask[i] != 1 || !mask && want == "v1" && tr.LossMask[i] != 1 {
				t.Fatalf("mask_offpolicy=%v: token %d (version %q) has loss_mask %d", mask, i, want, tr.LossMask[i])
			}
		}
		if tr.OffPolicyMasked != mask || mask && tr.Metrics["partial_rollout.offpolicy_masked_tokens"] != 3 {
			t.Fatalf("offpolicy_masked %v metrics %v", tr.OffPolicyMasked, tr.Metrics)
		}
	}
}

// Under partial_rollout = "drop" the aborted turn ends the episode as aborted, as before.
func TestPartialRolloutDrop(t *testing.T) {
	g, agent := partialHarness(t, runtime.PartialDrop, false)
	tr := agent.Run(context.Background(), runtime.Episode{ID: "d", Messages: []tito.Message{{Role: "user", Content: "What is 6*7?"}}})
	if tr.Status != runtime.StatusAborted || len(g.reqs) != 1 {
		t.Fatalf("status %s/%s after %d calls", tr.Status, tr.StatusReason, len(g.reqs))
	}
}

// The real thing against the emulator and *sglang.Client (which reports the abort as an *AbortError holding
// the partial response): a turn in flight is aborted by pause_generation(mode=abort), the weights move to v2
// while paused, generation continues, and the episode resumes the turn. However many tokens the aborted call
// had produced (the emulator's latency model decides; usually none, as the pause follows the request at once;
// TestPartialRolloutResumesAbortedTurn covers a partial output deterministically), every invariant holds, a
// resumed turn's spans go from v1 to v2, and mask_offpolicy zeroes exactly the v1 tokens.
func TestPartialRolloutAcrossPauseAndUpdate(t *testing.T) {
	ac := defaultAgent()
	ac.PartialRollout, ac.MaskOffPolicy = runtime.PartialResume, true
	ec := emulator.DefaultConfig()
	ec.WeightVersion = "v1"
	ec.Latency = emulator.Latency{PerOutputToken: 20 * time.Millisecond}
	h := newHarness(t, ec, ac, fastRetry())
	ctx := context.Background()
	done := make(chan *tito.Trajectory, 1)
	go func() {
		done <- h.agent.Run(ctx, runtime.Episode{ID: "pu", Messages: []tito.Message{{Role: "user", Content: "What is 6*7?"}}})
	}()
	h.untilRunning(t, 1, "the episode's first /generate to be running in the emulator")
	if err := h.client.PauseGeneration(ctx, "", sglang.PauseAbort); err != nil {
		t.Fatal(err)
	}
	hr, err := http.Post(h.srv.URL+"/update_weight_version", "application/json", strings.NewReader(`{"new_version":"v2","abort_all_requests":false}`))
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if err := h.client.ContinueGeneration(ctx, ""); err != nil {
		t.Fatal(err)
	}
	tr, _ := testutil.Recv(t, "the episode to finish after the pause and update", done)
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.Status != runtime.StatusCompleted {
		t.Fatalf("status %s/%s %s", tr.Status, tr.StatusReason, tr.Error)
	}
	// every request extends the previous one + its output; the trajectory is the last request + its output
	var reqs []wireReq
	var resps []wireResp
	for _, r := range h.log.records(t) {
		if r.Path != "/generate" || r.Status != 200 || !strings.HasPrefix(r.RID, "pu.") {
			continue
		}
		var q wireReq
		var p wireResp
		json.Unmarshal(r.Request, &q)
		json.Unmarshal(r.Response, &p)
		reqs, resps = append(reqs, q), append(resps, p)
	}
	var served []int32
	for k := range reqs {
		if k > 0 {
			prev := append(slices.Clone(reqs[k-1].InputIDs), resps[k-1].OutputIDs...)
			if !slices.Equal(reqs[k].InputIDs[:len(prev)], prev) {
				t.Fatalf("request %d does not extend request %d + its output", k, k-1)
			}
		}
		served = append(served, resps[k].OutputIDs...)
	}
	if n := len(reqs) - 1; !slices.Equal(tr.TokenIDs, append(slices.Clone(reqs[n].InputIDs), resps[n].OutputIDs...)) {
		t.Fatal("trajectory is not the last request + its output")
	}
	// response tokens are the served outputs verbatim, in order
	var resp []int32
	for _, s := range tr.Segments {
		if s.Kind == tito.KindResponse {
			resp = append(resp, tr.TokenIDs[s.Offset:s.Offset+s.Length]...)
		}
	}
	if !slices.Equal(resp, served) {
		t.Fatal("response segments are not the served output_ids verbatim")
	}
	first := tr.Segments[1]
	versions := tr.TokenWeightVersions()
	v1 := 0
	for i := first.Offset; i < first.Offset+first.Length; i++ {
		if versions[i] == "v1" {
			v1++
		}
	}
	if first.Info.Resumed > 0 {
		if first.Info.WeightVersions[0].Version != "v1" || first.Info.WeightVersions[len(first.Info.WeightVersions)-1].Version != "v2" {
			t.Fatalf("resumed turn spans %+v", first.Info.WeightVersions)
		}
	} else if v1 != 0 {
		t.Fatalf("the aborted call produced nothing, yet %d tokens are v1", v1)
	}
	for i, v := range versions {
		if v == "v1" && tr.LossMask[i] != 0 || v == "v2" && tr.LossMask[i] != 1 {
			t.Fatalf("token %d (%s) has loss_mask %d", i, v, tr.LossMask[i])
		}
	}
	t.Logf("aborted call kept %d tokens (resumed %d)", v1, first.Info.Resumed)
}

// alwaysAborting answers every call with one token and finish_reason abort: a server that never lets a turn end.
type alwaysAborting struct{ calls int }

func (g *alwaysAborting) Generate(ctx context.Context, ep string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.calls++
	n := len(req.InputIDs)
	var in []sglang.LogprobEntry // none on a first prompt (logprob_start_len -1)
	if req.LogprobStartLen >= 0 {
		in = make([]sglang.LogprobEntry, n-req.LogprobStartLen)
		in[0].Null = true
		for i := 1; i < len(in); i++ {
			in[i].Logprob = -1
		}
	}
	return &sglang.GenerateResponse{OutputIDs: []int32{100}, MetaInfo: sglang.MetaInfo{
		FinishReason: &sglang.FinishReason{Type: sglang.FinishAbort, Message: "Aborted"}, WeightVersion: "v1",
		InputTokenLogprobs: in, OutputTokenLogprobs: []sglang.LogprobEntry{{Logprob: -0.5, TokenID: 100}},
	}}, nil
}

// Resuming is bounded: a turn aborted again and again ends the episode as aborted, its trajectory still valid.
func TestPartialRolloutResumesAreBounded(t *testing.T) {
	ac := defaultAgent()
	ac.PartialRollout = runtime.PartialResume
	g := &alwaysAborting{}
	agent, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: g, Model: qwen3,
		MaxModelLen: func(context.Context) (int, error) { return 4096, nil }, Server: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close(context.Background())
	tr := agent.Run(context.Background(), runtime.Episode{ID: "b", Messages: []tito.Message{{Role: "user", Content: "hi"}}})
	if tr.Status != runtime.StatusAborted || g.calls != 17 {
		t.Fatalf("status %s/%s after %d calls", tr.Status, tr.StatusReason, g.calls)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if seg := tr.Segments[len(tr.Segments)-1]; seg.Length != 16 || seg.Info.Resumed != 15 {
		t.Fatalf("last segment %+v", seg)
	}
}

// Serve mode: a trainer's pause(abort) aborts the turn in flight; under "resume" its continuation waits at the
// pause gate (no /generate while paused), and after the weight update and resume it runs on the new weights.
func TestServicePauseAbortResumesTurn(t *testing.T) {
	ac := defaultAgent()
	ac.PartialRollout = runtime.PartialResume
	ec := emulator.DefaultConfig()
	ec.WeightVersion = "v1"
	ec.Latency = emulator.Latency{PerOutputToken: 20 * time.Millisecond}
	gate := &turn.Gate{}
	h := newHarnessWith(t, ec, ac, fastRetry(), gate)
	svc, err := rollout.NewService(map[string]*runtime.Agent{"calc": h.agent}, 8, gate, h.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := &emitter{}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, request("pa", 1, "What is 6*7?"), out) }()
	h.untilRunning(t, 1, "the episode's first /generate to be running in the emulator")
	if err := svc.Pause(ctx, sglang.PauseAbort); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, "the aborted turn's continuation to wait at the pause gate", func() bool { return gate.Waiting() == 1 })
	if n := generates(t, h); n != 1 {
		t.Fatalf("%d /generate calls before the resume, want only the aborted one", n)
	}
	hr, err := http.Post(h.srv.URL+"/update_weight_version", "application/json", strings.NewReader(`{"new_version":"v2"}`))
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if err := svc.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err, _ := testutil.Recv(t, "Run to finish after the resume", done); err != nil {
		t.Fatal(err)
	}
	trs := out.trajectories(t)
	if len(trs) != 1 || trs[0].Status != runtime.StatusCompleted {
		t.Fatalf("after resume: %+v", trs)
	}
	tr := trs[0]
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	// the turn's last call ran on v2, and every response token after the abort is v2's
	first := tr.Segments[1]
	if first.Info.WeightVersion != "v2" {
		t.Fatalf("first turn info %+v", first.Info)
	}
	if k := len(tr.WeightVersions); k == 0 || tr.WeightVersions[k-1].Version != "v2" {
		t.Fatalf("trajectory spans %+v", tr.WeightVersions)
	}
}
