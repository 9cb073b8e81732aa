package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// trMulti returns a three-sample episode: sample 0 (two turns), sample 1 (one turn, branched after sample 0's
// second response), sample 2 (the trajectory's own chain, one turn).
func trMulti(t *testing.T) *Trajectory {
	t.Helper()
	tr := trTwoTurns(t)
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8, 9})))
	mustNoErr(t, tr.AppendPrompt([]int32{30, 31})) // a delta never sent: NewSample drops it
	mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[{"role":"user","content":"a"}]`)))
	tr.Origin.PromptMessages = 3
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 40}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{41})))
	mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[{"role":"user","content":"b"}]`)))
	tr.Origin.PromptMessages = 2
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 50, 51}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{52, 53})))
	tr.Messages = json.RawMessage(`[{"role":"user","content":"c"}]`)
	return tr
}

func TestNewSample(t *testing.T) {
	tr := trMulti(t)
	mustNoErr(t, tr.Validate())
	if tr.SampleCount() != 3 || !tr.MultiSample() {
		t.Fatalf("SampleCount %d, want 3", tr.SampleCount())
	}
	s0, s1 := tr.Samples[0], tr.Samples[1]
	if !slices.Equal(s0.TokenIDs, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("sample 0 tokens %v: the unsent delta must be dropped", s0.TokenIDs)
	}
	want1 := SampleOrigin{Index: 1, Parent: 0, BranchTurn: 2, BranchOffset: 9, Reason: SampleCompaction, FirstTurn: 2, PromptMessages: 3}
	if s1.SampleOrigin != want1 {
		t.Errorf("sample 1 origin %+v, want %+v", s1.SampleOrigin, want1)
	}
	want2 := SampleOrigin{Index: 2, Parent: 1, BranchTurn: 1, BranchOffset: 4, Reason: SampleCompaction, FirstTurn: 3, PromptMessages: 2}
	if got := tr.CurrentSample().SampleOrigin; got != want2 {
		t.Errorf("current origin %+v, want %+v", got, want2)
	}
	if s0.Parent != -1 || s0.Index != 0 {
		t.Errorf("sample 0 origin %+v", s0.SampleOrigin)
	}
	// Each sample is its own chain: turns from 0, the first prompt's logprobs null, a fresh logprob_start_len.
	if tr.Turns() != 1 || tr.Segments[1].Turn != 0 {
		t.Errorf("current chain turns %d, segment turn %d", tr.Turns(), tr.Segments[1].Turn)
	}
	if string(s0.Messages) != `[{"role":"user","content":"a"}]` {
		t.Errorf("sample 0 messages %s", s0.Messages)
	}
}

func TestNewSampleRefused(t *testing.T) {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
	if err := tr.NewSample(SampleCompaction, nil); !errors.Is(err, ErrSequence) {
		t.Fatalf("NewSample before any response: %v, want ErrSequence", err)
	}
	if tr.MultiSample() || tr.Len() != 2 {
		t.Fatalf("a refused NewSample changed the trajectory")
	}
}

func TestSamplesJSON(t *testing.T) {
	tr := trMulti(t)
	tr.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f"}}`)}
	tr.TemplateKwargs = map[string]any{"enable_thinking": true}
	b, err := tr.AppendJSON(nil)
	mustNoErr(t, err)
	var back Trajectory
	mustNoErr(t, json.Unmarshal(b, &back))
	mustNoErr(t, back.Validate())
	b2, err := back.AppendJSON(nil)
	mustNoErr(t, err)
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip differs:\n%s\n%s", b, b2)
	}
	var generic struct {
		Samples []map[string]json.RawMessage `json:"samples"`
	}
	mustNoErr(t, json.Unmarshal(b, &generic))
	if len(generic.Samples) != 3 {
		t.Fatalf("%d samples on the wire, want 3 (the last repeats the top-level chain)", len(generic.Samples))
	}
	if string(generic.Samples[2]["token_ids"]) != "[1,2,50,51,52,53]" || string(generic.Samples[2]["messages"]) != `[{"role":"user","content":"c"}]` {
		t.Errorf("last sample %s", generic.Samples[2]["token_ids"])
	}
	// A changed copy of the last sample is refused: it must be the top-level chain.
	bad := bytes.Replace(b, []byte(`"token_ids":[1,2,50,51,52,53],"loss_mask":[0,0,0,0,1,1],"logprobs"`), []byte(`"token_ids":[1,2,50,51,52,54],"loss_mask":[0,0,0,0,1,1],"logprobs"`), 1)
	if bytes.Equal(bad, b) {
		t.Fatal("test did not change the last sample")
	}
	if err := json.Unmarshal(bad, &back); err == nil || !strings.Contains(err.Error(), "last sample") {
		t.Errorf("a last sample unlike the chain: %v", err)
	}
}

// TestOneChainWireUnchanged: a one-chain trajectory writes no "samples", "tools" or origin.
func TestOneChainWireUnchanged(t *testing.T) {
	tr := trTwoTurns(t)
	tr.Tools = []json.RawMessage{json.RawMessage(`{"type":"function"}`)}
	b, err := tr.AppendJSON(nil)
	mustNoErr(t, err)
	tr.TemplateKwargs = map[string]any{"enable_thinking": true}
	for _, k := range []string{`"samples"`, `"tools"`, `"chat_template_kwargs"`, `"parent"`, `"branch_turn"`} {
		if bytes.Contains(b, []byte(k)) {
			t.Errorf("one-chain JSON has %s: %s", k, b)
		}
	}
}

func TestValidateSamplesViolations(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(*Trajectory)
		want   string
	}{
		{"index", func(tr *Trajectory) { tr.Samples[1].Index = 5 }, "has index 5"},
		{"first turn", func(tr *Trajectory) { tr.Origin.FirstTurn = 9 }, "first_turn 9"},
		{"parent after", func(tr *Trajectory) { tr.Samples[1].Parent = 1 }, "parent 1"},
		{"root parent", func(tr *Trajectory) { tr.Samples[0].Parent = 0 }, "sample 0 has parent 0"},
		{"branch outside", func(tr *Trajectory) { tr.Samples[1].BranchOffset = 99 }, "outside its parent"},
		{"chain", func(tr *Trajectory) { tr.Samples[0].LossMask[4] = 0 }, "sample 0: "},
		{"ends in prompt", func(tr *Trajectory) {
			s := &tr.Samples[1]
			s.TokenIDs = append(s.TokenIDs, 7)
			s.LossMask = append(s.LossMask, 0)
			s.Logprobs = append(s.Logprobs, -1)
			s.Segments = append(s.Segments, Segment{Kind: KindPrompt, Offset: 4, Length: 1, Turn: 1})
		}, "does not end in a response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trMulti(t)
			tt.break_(tr)
			err := tr.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDiscardEmptySample(t *testing.T) {
	tr := trMulti(t)
	mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[{"role":"user","content":"d"}]`)))
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 60}))
	if err := tr.Validate(); err != nil {
		t.Fatalf("a last sample of one unsent prompt is valid while running: %v", err)
	}
	msgs := tr.DiscardEmptySample()
	if string(msgs) != `[{"role":"user","content":"d"}]` || tr.SampleCount() != 3 || tr.Turns() != 1 {
		t.Fatalf("DiscardEmptySample: messages %s, %d samples, %d turns", msgs, tr.SampleCount(), tr.Turns())
	}
	if !slices.Equal(tr.TokenIDs, []int32{1, 2, 50, 51, 52, 53}) || tr.CurrentSample().SampleOrigin.Index != 2 {
		t.Fatalf("the previous sample is not back: %v", tr.TokenIDs)
	}
	mustNoErr(t, tr.Validate())
	if tr.DiscardEmptySample() != nil || tr.SampleCount() != 3 {
		t.Fatal("DiscardEmptySample dropped a sample with a response")
	}
}

// TestMaskResponses: a sample marked masked has loss mask 0 on its response tokens (those appended before and
// after the mark), its logprobs kept; Validate holds it to that, JSON carries "masked" on that sample only, and the
// next sample trains again. A one-chain trajectory is not masked.
func TestMaskResponses(t *testing.T) {
	one := trTwoTurns(t)
	if n := one.MaskResponses(); n != 0 || one.Origin.Masked {
		t.Fatalf("a one-chain trajectory masked %d tokens", n)
	}
	tr := trTwoTurns(t)
	mustNoErr(t, tr.NewSample(SampleSummary, json.RawMessage(`[]`)))
	tr.Origin.PromptMessages = 2
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 40}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{41, 42})))
	if n := tr.MaskResponses(); n != 2 || !tr.Origin.Masked {
		t.Fatalf("masked %d tokens (origin masked %v), want the 2 response tokens", n, tr.Origin.Masked)
	}
	mustNoErr(t, tr.AppendPrompt([]int32{43}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{44})))
	if !slices.Equal(tr.LossMask, Mask{0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("loss mask %v, want all 0", tr.LossMask)
	}
	for i := 3; i < len(tr.Logprobs); i++ {
		if !finite(tr.Logprobs[i]) {
			t.Fatalf("logprob %d is %v: masking must keep them", i, tr.Logprobs[i])
		}
	}
	mustNoErr(t, tr.Validate())
	tr.LossMask[4] = 1 // a masked sample's response token with loss mask 1
	if err := tr.Validate(); err == nil || !strings.Contains(err.Error(), "loss_mask is 1 on a response token, want 0") {
		t.Fatalf("Validate = %v, want the masked sample's loss mask refused", err)
	}
	tr.LossMask[4] = 0
	mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[]`)))
	tr.Origin.PromptMessages = 1
	mustNoErr(t, tr.AppendPrompt([]int32{1, 50}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{51})))
	if tr.Origin.Masked || tr.LossMask[2] != 1 {
		t.Fatalf("the sample after a masked one: masked %v, loss mask %v", tr.Origin.Masked, tr.LossMask)
	}
	mustNoErr(t, tr.Validate())
	b, err := tr.AppendJSON(nil)
	mustNoErr(t, err)
	if c := bytes.Count(b, []byte(`"masked":true`)); c != 1 {
		t.Fatalf("%d samples say masked in %s, want 1", c, b)
	}
	var back Trajectory
	mustNoErr(t, json.Unmarshal(b, &back))
	mustNoErr(t, back.Validate())
	if !back.Samples[1].Masked || back.Samples[0].Masked || back.Origin.Masked {
		t.Fatalf("read back: masked %v %v %v, want only sample 1", back.Samples[0].Masked, back.Samples[1].Masked, back.Origin.Masked)
	}
	back.Samples[1].Masked = false // the same loss mask without the mark is an invariant violation
	if err := back.Validate(); err == nil || !strings.Contains(err.Error(), "sample 1: ") {
		t.Fatalf("Validate = %v, want sample 1's loss mask 0 on a response refused", err)
	}
}
