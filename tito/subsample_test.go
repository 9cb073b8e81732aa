package tito

import (
	"encoding/json"
	"errors"
	"testing"
)

// trOneTurn is a one-sample episode with one response.
func trOneTurn(t *testing.T, first int32) *Trajectory {
	t.Helper()
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{first, first + 1}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{first + 2})))
	tr.Origin.PromptMessages = 2
	tr.Messages = json.RawMessage(`[{"role":"user","content":"sub"}]`)
	return tr
}

var subTools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"g"}}`)}

// TestSubSamples: a parent chain that ran two sub-agents (one of one sample, one of three) and then compacted: the
// samples are listed in the order they end, the current chain last; the sub-episodes' first samples link to the
// chain that called them (relinked as its index moves), their own samples keep their links, renumbered.
func TestSubAgentSamples(t *testing.T) {
	tr := trTwoTurns(t) // one response, its tool results pending
	mustNoErr(t, tr.AddSubSamples(trOneTurn(t, 100).AllSamples(), SubLink{Episode: "e/1.0", Agent: "a", CallID: "c0", Tools: subTools}))
	mustNoErr(t, tr.AddSubSamples(trMulti(t).AllSamples(), SubLink{Episode: "e/1.1", Agent: "b", CallID: "c1"}))
	mustNoErr(t, tr.Validate())
	if tr.SampleCount() != 5 || tr.CurrentSample().Index != 4 {
		t.Fatalf("%d samples, current index %d; want 5 and 4", tr.SampleCount(), tr.CurrentSample().Index)
	}
	a0, b0, b1, b2 := tr.Samples[0], tr.Samples[1], tr.Samples[2], tr.Samples[3]
	want := SampleOrigin{Index: 0, Parent: 4, BranchTurn: 1, BranchOffset: 5, Reason: SampleSubAgent, PromptMessages: 2,
		Episode: "e/1.0", Agent: "a", CallID: "c0", Depth: 1}
	if a0.SampleOrigin != want {
		t.Errorf("first sub-sample %+v, want %+v", a0.SampleOrigin, want)
	}
	if b0.Parent != 4 || b0.Reason != SampleSubAgent || b1.Parent != 1 || b2.Parent != 2 || b1.Reason != SampleCompaction ||
		b2.FirstTurn != 3 || b2.Episode != "e/1.1" || b2.Depth != 1 || b2.CallID != "c1" {
		t.Errorf("second sub-episode's origins: %+v / %+v / %+v", b0.SampleOrigin, b1.SampleOrigin, b2.SampleOrigin)
	}
	if len(a0.Tools) != 1 || b0.Tools != nil {
		t.Errorf("sample tools: %d, %d", len(a0.Tools), len(b0.Tools))
	}
	if cur := tr.CurrentSample(); cur.Parent != -1 || cur.Depth != 0 || cur.Episode != "" {
		t.Errorf("the top-level chain's origin %+v", cur.SampleOrigin)
	}
	// The parent compacts: its chain ends (index 4) and the new one branches from it.
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8})))
	mustNoErr(t, tr.NewSample(SampleCompaction, json.RawMessage(`[]`)))
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 60}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{61})))
	mustNoErr(t, tr.Validate())
	if cur := tr.CurrentSample(); cur.Index != 5 || cur.Parent != 4 || cur.FirstTurn != 2 {
		t.Errorf("after compaction the current chain is %+v, want index 5, parent 4, first_turn 2 (the top-level episode's calls)", cur.SampleOrigin)
	}
	b, err := tr.AppendJSON(nil)
	mustNoErr(t, err)
	var back Trajectory
	mustNoErr(t, json.Unmarshal(b, &back))
	mustNoErr(t, back.Validate())
	all, got := tr.AllSamples(), back.AllSamples()
	for k := range all {
		if all[k].SampleOrigin != got[k].SampleOrigin || len(all[k].Tools) != len(got[k].Tools) {
			t.Errorf("sample %d read back as %+v, want %+v", k, got[k].SampleOrigin, all[k].SampleOrigin)
		}
	}
}

// TestSubSamplesNested: a sub-episode's own sub-episode keeps its name and is one level deeper again.
func TestSubAgentSamplesNested(t *testing.T) {
	sub := trOneTurn(t, 100)
	mustNoErr(t, sub.AddSubSamples(trOneTurn(t, 200).AllSamples(), SubLink{Episode: "e/0.0/0.0", Agent: "a", CallID: "n"}))
	tr := trOneTurn(t, 1)
	mustNoErr(t, tr.AddSubSamples(sub.AllSamples(), SubLink{Episode: "e/0.0", Agent: "a", CallID: "c"}))
	mustNoErr(t, tr.Validate())
	n, s := tr.Samples[0], tr.Samples[1]
	if n.Episode != "e/0.0/0.0" || n.Depth != 2 || n.Parent != 1 || s.Episode != "e/0.0" || s.Depth != 1 || s.Parent != 2 || s.Reason != SampleSubAgent {
		t.Errorf("nested origins %+v / %+v", n.SampleOrigin, s.SampleOrigin)
	}
}

// TestSubSamplesInvalid: Validate refuses origins a sub-agent's samples cannot have.
func TestSubAgentSamplesInvalid(t *testing.T) {
	cases := map[string]func(tr *Trajectory){
		"parent before it":  func(tr *Trajectory) { tr.Samples[0].Parent = 0 },
		"no episode":        func(tr *Trajectory) { tr.Samples[0].Episode = "" },
		"depth 0":           func(tr *Trajectory) { tr.Samples[0].Depth = 0 },
		"not a sub reason":  func(tr *Trajectory) { tr.Samples[0].Reason = SampleCompaction },
		"first turn":        func(tr *Trajectory) { tr.Samples[0].FirstTurn = 1 },
		"no call response":  func(tr *Trajectory) { tr.Samples[0].BranchTurn = 0 },
		"branch past chain": func(tr *Trajectory) { tr.Samples[0].BranchOffset = 99 },
		"top-level depth":   func(tr *Trajectory) { tr.Origin.Depth = 1 },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			tr := trOneTurn(t, 1)
			mustNoErr(t, tr.AddSubSamples(trOneTurn(t, 100).AllSamples(), SubLink{Episode: "e/0.0"}))
			mustNoErr(t, tr.Validate())
			mutate(tr)
			if err := tr.Validate(); !errors.Is(err, ErrSequence) {
				t.Fatalf("Validate = %v, want ErrSequence", err)
			}
		})
	}
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1}))
	if err := tr.AddSubSamples(trOneTurn(t, 100).AllSamples(), SubLink{}); !errors.Is(err, ErrSequence) || tr.MultiSample() {
		t.Fatalf("sub-samples before any response: %v", err)
	}
}
