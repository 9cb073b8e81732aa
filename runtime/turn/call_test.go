package turn_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// runeTok is a tokenizer with one id per rune; id 0 is the stop token "<eos>".
type runeTok struct{}

func (runeTok) Encode(text string, _ bool) []int32 {
	var ids []int32
	for _, r := range text {
		ids = append(ids, int32(r))
	}
	return ids
}

func (runeTok) Decode(ids []int32, _ bool) string {
	var b strings.Builder
	for _, id := range ids {
		if id == 0 {
			b.WriteString("<eos>")
			continue
		}
		b.WriteRune(rune(id))
	}
	return b.String()
}

// fakeGen answers each call with the next of its replies (a reply's text, then the stop id), or with aborted
// partial outputs; it keeps the requests.
type fakeGen struct {
	mu      sync.Mutex
	replies []sglang.GenerateResponse
	reqs    []*sglang.GenerateRequest
}

func reply(text string, finish string) sglang.GenerateResponse {
	ids := runeTok{}.Encode(text, false)
	if finish == sglang.FinishStop {
		ids = append(ids, 0)
	}
	lps := make([]sglang.LogprobEntry, len(ids))
	for i := range lps {
		lps[i] = sglang.LogprobEntry{Logprob: -0.5, TokenID: ids[i]}
	}
	return sglang.GenerateResponse{OutputIDs: ids, MetaInfo: sglang.MetaInfo{FinishReason: &sglang.FinishReason{Type: finish}, OutputTokenLogprobs: lps}}
}

func (g *fakeGen) Generate(_ context.Context, _ string, req *sglang.GenerateRequest) (*sglang.GenerateResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reqs = append(g.reqs, req)
	r := g.replies[0]
	g.replies = g.replies[1:]
	n := len(req.InputIDs) - max(req.LogprobStartLen, 0)
	if req.LogprobStartLen < 0 {
		n = 0
	}
	r.MetaInfo.InputTokenLogprobs = make([]sglang.LogprobEntry, n)
	for i := range n {
		r.MetaInfo.InputTokenLogprobs[i] = sglang.LogprobEntry{Null: i == 0, Logprob: -1}
	}
	return &r, nil
}

// fakeParser reads "call NAME ID" lines (ID may be empty).
type fakeParser struct{}

func (fakeParser) Parse(_ context.Context, text string) (abi.ParseResult, error) {
	var r abi.ParseResult
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "call" {
			c := abi.ParsedCall{Name: f[1], Arguments: abi.RawJSON("{}")}
			if len(f) > 2 {
				c.ID = f[2]
			}
			r.Calls = append(r.Calls, c)
		} else {
			r.NormalText += line
		}
	}
	return r, nil
}

func newTraj(t *testing.T, prompt string) *tito.Trajectory {
	t.Helper()
	tr := tito.NewTrajectory()
	if err := tr.AppendPrompt(runeTok{}.Encode(prompt, false)); err != nil {
		t.Fatal(err)
	}
	return tr
}

func model(gen turn.Generator, style family.CallIDStyle) *turn.Model {
	return &turn.Model{Generator: gen, Tokenizer: runeTok{}, Parser: fakeParser{}, StopIDs: []int32{0}, ContextWindow: 1000, CallIDs: style}
}

// Each call gets an id of the family's form: the parser's own when it has it, else a made one (the front door's
// for a family that takes any id, when it gives one).
func TestCallIDs(t *testing.T) {
	text := "call add\ncall mul Ab3De6Gh9"
	for _, tc := range []struct {
		name  string
		style family.CallIDStyle
		newID func(int) string
		want  []string
	}{
		{"default", family.CallIDDefault, nil, []string{"call_0000", "Ab3De6Gh9"}},
		{"front door", family.CallIDDefault, func(i int) string { return "fd" + string(rune('0'+i)) }, []string{"fd0", "Ab3De6Gh9"}},
		{"mistral", family.CallIDAlnum9, func(int) string { return "not-used" }, []string{family.CallIDAlnum9.ID("seed", 0, "add", 3), "Ab3De6Gh9"}},
		{"kimi", family.CallIDKimi, nil, []string{"functions.add:3", "functions.mul:4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := &fakeGen{replies: []sglang.GenerateResponse{reply(text, sglang.FinishStop)}}
			r, err := model(gen, tc.style).Call(context.Background(), newTraj(t, "q"), turn.CallRequest{RID: "r", Sampling: turn.Sampling{MaxNewTokens: 100},
				CallIDSeed: "seed", PriorCalls: 3, NewCallID: tc.newID})
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != text || r.Stop != 0 || len(r.Calls) != 2 {
				t.Fatalf("text %q, stop %d, calls %+v", r.Text, r.Stop, r.Calls)
			}
			for i, c := range r.Calls {
				if c.ID != tc.want[i] || c.Index == nil || *c.Index != i {
					t.Errorf("call %d: id %q index %v, want %q and %d", i, c.ID, c.Index, tc.want[i], i)
				}
			}
			if m := r.Message(); len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != tc.want[0] || m.Content != text {
				t.Errorf("message %+v", m)
			}
		})
	}
}

// A turn SGLang aborts is an *AbortError unless the request resumes it; resumed, its outputs form one response.
func TestCallAbortAndResume(t *testing.T) {
	for _, resume := range []bool{false, true} {
		gen := &fakeGen{replies: []sglang.GenerateResponse{reply("par", sglang.FinishAbort), reply("tial", sglang.FinishStop)}}
		tr := newTraj(t, "q")
		r, err := model(gen, family.CallIDDefault).Call(context.Background(), tr, turn.CallRequest{RID: "r", Sampling: turn.Sampling{MaxNewTokens: 100}, Resume: resume})
		var ae *turn.AbortError
		if !resume {
			if !errors.As(err, &ae) || len(r.OutputIDs) != 0 {
				t.Fatalf("not resumed: %v, result %+v; want an *AbortError", err, r)
			}
			continue
		}
		if err != nil || r.Text != "partial" || len(gen.reqs) != 2 || gen.reqs[1].RID != "r.r1" || tr.Turns() != 1 {
			t.Fatalf("resumed: %v, text %q, %d requests, turns %d", err, r.Text, len(gen.reqs), tr.Turns())
		}
		if got := gen.reqs[1].SamplingParams.MaxNewTokens; got != 97 {
			t.Errorf("the continuation asked for %d tokens, want the 97 left of the budget", got)
		}
	}
}

// A trajectory that fills the window gets ErrContextFull, before any request; max_new_tokens is cut to the room.
func TestCallContextWindow(t *testing.T) {
	gen := &fakeGen{replies: []sglang.GenerateResponse{reply("ok", sglang.FinishLength)}}
	m := model(gen, family.CallIDDefault)
	m.ContextWindow = 10
	if _, err := m.Call(context.Background(), newTraj(t, "0123456789"), turn.CallRequest{Sampling: turn.Sampling{MaxNewTokens: 100}}); !errors.Is(err, turn.ErrContextFull) {
		t.Fatalf("full window: %v", err)
	}
	r, err := m.Call(context.Background(), newTraj(t, "01234567"), turn.CallRequest{Sampling: turn.Sampling{MaxNewTokens: 100}})
	if err != nil || !r.Length() || !r.Cut || r.Parsed || gen.reqs[0].SamplingParams.MaxNewTokens != 2 {
		t.Fatalf("%v, %+v; want a length finish cut to the 2 tokens of room, not parsed", err, r)
	}
}

// A call waits while the gate is closed and goes on when it opens.
func TestCallWaitsAtGate(t *testing.T) {
	gen := &fakeGen{replies: []sglang.GenerateResponse{reply("ok", sglang.FinishStop)}}
	m := model(gen, family.CallIDDefault)
	m.Gate = &turn.Gate{}
	m.Gate.Close()
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), newTraj(t, "q"), turn.CallRequest{Sampling: turn.Sampling{MaxNewTokens: 10}})
		done <- err
	}()
	testutil.Until(t, "the call to wait at the gate", func() bool { return m.Gate.Waiting() == 1 })
	gen.mu.Lock()
	n := len(gen.reqs)
	gen.mu.Unlock()
	if n != 0 {
		t.Fatal("a request went out while the gate was closed")
	}
	m.Gate.Open()
	if err, _ := testutil.Recv(t, "the call to finish", done); err != nil {
		t.Fatal(err)
	}
}
