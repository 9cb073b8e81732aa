package system_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// The episode-wide response budget (max_response_tokens): slime's rollout_max_response_len and verl's
// response_length count every token after the first prompt, tool results included. Each call's max_new_tokens is
// capped by what is left; an episode that reaches the budget ends truncated/response_budget, its response never
// longer than the budget, and it ends on a token the model sampled (loss mask 1): tool results that would overflow
// are not kept. The invariants (prefix, verbatim responses, aligned arrays, logprobs) hold on every path (h.check).
func TestResponseBudget(t *testing.T) {
	const prompt = "What is 12*7+3?"
	h0 := newHarness(t, emulator.DefaultConfig(), defaultAgent(), fastRetry())
	probe := h0.run(t, "probe", prompt)
	wantStatus(t, probe, runtime.StatusCompleted, "")
	segs := probe.Segments
	if len(segs) < 4 || segs[1].Kind != tito.KindResponse || segs[2].Kind != tito.KindPrompt {
		t.Fatalf("the probe episode has no tool turn: %+v", segs)
	}
	first, r1, t1 := segs[0].Length, segs[1].Length, segs[2].Length
	whole := len(probe.TokenIDs) - first

	maxNew := func(h *harness, id string) []int {
		var out []int
		for _, r := range h.log.records(t) {
			if r.Path != "/generate" || !strings.HasPrefix(r.RID, id+".") {
				continue
			}
			var q wireReq
			if err := json.Unmarshal(r.Request, &q); err != nil {
				t.Fatal(err)
			}
			out = append(out, q.Sampling.MaxNewTokens)
		}
		return out
	}
	endsOnModelToken := func(tr *tito.Trajectory) {
		t.Helper()
		if last := lastSegment(tr); last.Kind != tito.KindResponse || tr.LossMask[len(tr.LossMask)-1] != 1 {
			t.Fatalf("%s: the trajectory ends on %+v (loss mask %d), want a model response", tr.ID, last, tr.LossMask[len(tr.LossMask)-1])
		}
	}

	tests := []struct {
		name   string
		agent  int // the agent's max_response_tokens
		item   int // the episode's own (wins when > 0)
		status string
		reason string
		resp   int   // the response length wanted (tokens after the first prompt)
		calls  []int // max_new_tokens of each request
	}{
		{name: "no budget", status: runtime.StatusCompleted, resp: whole},
		{name: "room to spare", agent: whole + 100, status: runtime.StatusCompleted, resp: whole},
		{name: "inside the first response", agent: 5, status: runtime.StatusTruncated, reason: runtime.ReasonResponseBudget, resp: 5, calls: []int{5}},
		{name: "the item's own budget wins", agent: whole + 100, item: 7, status: runtime.StatusTruncated, reason: runtime.ReasonResponseBudget, resp: 7, calls: []int{7}},
		// The tool results overflow the budget: they are not sent and not kept, the episode ends on the response
		// that made the call, and no second request is made.
		{name: "tool results overflow", agent: r1 + t1/2, status: runtime.StatusTruncated, reason: runtime.ReasonResponseBudget, resp: r1, calls: []int{r1 + t1/2}},
		{name: "tool results fill it exactly", agent: r1 + t1, status: runtime.StatusTruncated, reason: runtime.ReasonResponseBudget, resp: r1, calls: []int{r1 + t1}},
		// Three tokens are left for the answer: the second call asks for three and the response is the budget.
		{name: "the answer is cut", agent: r1 + t1 + 3, status: runtime.StatusTruncated, reason: runtime.ReasonResponseBudget, resp: r1 + t1 + 3, calls: []int{r1 + t1 + 3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ac := defaultAgent()
			ac.MaxResponseTokens = tt.agent
			h := newHarness(t, emulator.DefaultConfig(), ac, fastRetry())
			tr := h.agent.Run(context.Background(), runtime.Episode{ID: "b", ItemID: "b", GroupID: "b", MaxResponseTokens: tt.item,
				Messages: []tito.Message{{Role: "user", Content: prompt}}})
			h.check(t, tr)
			wantStatus(t, tr, tt.status, tt.reason)
			if tr.Error != "" {
				t.Errorf("error %q on a clean end (stop_message %q)", tr.Error, tr.StopMessage)
			}
			if got := len(tr.TokenIDs) - tr.PromptLength(); got != tt.resp {
				t.Errorf("response of %d tokens, want %d", got, tt.resp)
			}
			budget := tt.agent
			if tt.item > 0 {
				budget = tt.item
			}
			if budget > 0 && len(tr.TokenIDs)-first > budget {
				t.Errorf("response of %d tokens past the budget %d", len(tr.TokenIDs)-first, budget)
			}
			endsOnModelToken(tr)
			s := tr.SlimeSample()
			if s.ResponseLength != tt.resp || len(s.LossMask) != s.ResponseLength || len(s.RolloutLogProbs) != s.ResponseLength {
				t.Errorf("slime sample: response_length %d, %d mask, %d logprobs; want %d", s.ResponseLength, len(s.LossMask), len(s.RolloutLogProbs), tt.resp)
			}
			if tt.calls != nil {
				if got := maxNew(h, "b"); !slices.Equal(got, tt.calls) {
					t.Errorf("max_new_tokens per request %v, want %v", got, tt.calls)
				}
			}
		})
	}
}

// A turn aborted mid-generation and resumed (partial_rollout = "resume") counts its partial output against the
// response budget: the continuation asks only for what is left, and a partial output that reaches the budget ends
// the episode without a continuation. Either way the response is exactly the budget, the turn's one segment holds
// the served outputs verbatim, the trajectory is the last request + its output, and the conversation ends on the
// cut response.
func TestResponseBudgetOnResumedTurn(t *testing.T) {
	tests := []struct {
		name    string
		budget  int   // the episode's max_response_tokens; the first call is aborted after 3 tokens
		calls   []int // max_new_tokens of each request
		resumed int
	}{
		{name: "the continuation gets what is left", budget: 5, calls: []int{3, 2}, resumed: 1},
		{name: "the partial output fills it", budget: 3, calls: []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, agent := partialHarness(t, runtime.PartialResume, false)
			tr := agent.Run(context.Background(), runtime.Episode{ID: "rb", MaxResponseTokens: tt.budget,
				Messages: []tito.Message{{Role: "user", Content: "What is 6*7?"}}})
			if err := tr.Validate(); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonResponseBudget)
			if !slices.Equal(g.maxNew, tt.calls) {
				t.Errorf("max_new_tokens per request %v, want %v", g.maxNew, tt.calls)
			}
			if got := len(tr.TokenIDs) - tr.PromptLength(); got != tt.budget {
				t.Errorf("response of %d tokens, want the budget (%d)", got, tt.budget)
			}
			n := len(g.reqs) - 1
			if !slices.Equal(tr.TokenIDs, append(slices.Clone(g.reqs[n]), g.outs[n]...)) {
				t.Fatal("trajectory is not the last request + its output")
			}
			var served []int32
			for _, out := range g.outs {
				served = append(served, out...)
			}
			seg := lastSegment(tr)
			if len(tr.Segments) != 2 || seg.Kind != tito.KindResponse || !slices.Equal(tr.TokenIDs[seg.Offset:], served) {
				t.Fatalf("segments %+v: want the first prompt and one response of the served outputs %v", tr.Segments, served)
			}
			if seg.Info.Resumed != tt.resumed {
				t.Errorf("the turn was resumed %d times, want %d", seg.Info.Resumed, tt.resumed)
			}
			// the cut response is the conversation's last message, as for any turn cut by a budget
			ms := messages(t, tr)
			if last := ms[len(ms)-1]; last.Role != "assistant" || last.Content == "" {
				t.Errorf("the conversation ends on %+v, want the cut assistant response", last)
			}
		})
	}
}
