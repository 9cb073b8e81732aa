package tito

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// A turn aborted by a weight update and continued on the new weights stays one response segment whose tokens,
// logprobs and versions are both calls' outputs, verbatim, and the trajectory's spans say which weights made which.
func TestAppendContinuation(t *testing.T) {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 3}))
	r := trResponse(tr, []int32{20, 21})
	r.Turn.FinishReason, r.Turn.WeightVersion, r.Turn.LatencyMS = "abort", "v1", 5
	mustNoErr(t, tr.AppendResponse(r))

	// the continuation sends the whole trajectory, partial output included, and scores no new prompt token
	ids, start := tr.NextRequest()
	if !slices.Equal(ids, []int32{1, 2, 3, 20, 21}) || start != 4 {
		t.Fatalf("continuation request %v start %d", ids, start)
	}
	c := trResponse(tr, []int32{22, 23, 24})
	c.Turn.WeightVersion, c.Turn.LatencyMS, c.Turn.RID = "v2", 7, "r2"
	c.Turn.WeightVersions = []WeightSpan{{Version: "v2", Start: 0, End: 3}}
	mustNoErr(t, tr.AppendContinuation(c))

	if tr.Turns() != 1 || len(tr.Segments) != 2 || tr.Segments[1].Length != 5 {
		t.Fatalf("turns %d segments %+v", tr.Turns(), tr.Segments)
	}
	if !slices.Equal(tr.TokenIDs, []int32{1, 2, 3, 20, 21, 22, 23, 24}) || !slices.Equal(tr.LossMask, Mask{0, 0, 0, 1, 1, 1, 1, 1}) {
		t.Fatalf("tokens %v mask %v", tr.TokenIDs, tr.LossMask)
	}
	if want := append(slices.Clone(r.OutputLogprobs), c.OutputLogprobs...); !slices.Equal([]float64(tr.Logprobs[3:]), want) {
		t.Fatalf("response logprobs %v, want %v", tr.Logprobs[3:], want)
	}
	wantSpans := []WeightSpan{{"v1", 3, 5}, {"v2", 5, 8}}
	if !slices.Equal(tr.WeightVersions, wantSpans) {
		t.Fatalf("trajectory spans %+v, want %+v", tr.WeightVersions, wantSpans)
	}
	info := tr.Segments[1].Info
	if info.Resumed != 1 || info.WeightVersion != "v2" || info.RID != "r2" || info.FinishReason != "stop" || info.LatencyMS != 12 ||
		!slices.Equal(info.WeightVersions, []WeightSpan{{"v1", 0, 2}, {"v2", 2, 5}}) {
		t.Fatalf("segment info %+v", info)
	}
	if got := tr.TokenWeightVersions(); !slices.Equal(got, []string{"", "", "", "v1", "v1", "v2", "v2", "v2"}) {
		t.Fatalf("per-token versions %q", got)
	}
	mustNoErr(t, tr.Validate())

	// a finished (not aborted) response takes no continuation
	err := tr.AppendContinuation(trResponse(tr, []int32{9}))
	if !errors.Is(err, ErrSequence) {
		t.Fatalf("continuation of a stopped response: %v", err)
	}

	// masking: v1 tokens are off-policy, the rest keep loss_mask 1; the JSON round trip validates
	if n := tr.MaskOffPolicy(); n != 2 {
		t.Fatalf("masked %d, want 2", n)
	}
	if !slices.Equal(tr.LossMask, Mask{0, 0, 0, 0, 0, 1, 1, 1}) || !tr.OffPolicyMasked {
		t.Fatalf("mask %v", tr.LossMask)
	}
	mustNoErr(t, tr.Validate())
	b, err := json.Marshal(tr)
	mustNoErr(t, err)
	var back Trajectory
	mustNoErr(t, json.Unmarshal(b, &back))
	mustNoErr(t, back.Validate())
	if !slices.Equal(back.WeightVersions, wantSpans) || !back.OffPolicyMasked {
		t.Fatalf("round trip lost spans or the mask flag: %s", b)
	}
	// a masked trajectory takes no more responses, and a hand-cleared flag makes the masked tokens a violation
	mustNoErr(t, tr.AppendPrompt([]int32{40}))
	if err := tr.AppendResponse(trResponse(tr, []int32{41})); !errors.Is(err, ErrSequence) {
		t.Fatalf("response after masking: %v", err)
	}
	back.OffPolicyMasked = false
	if err := back.Validate(); !errors.Is(err, ErrAlignment) {
		t.Fatalf("masked tokens without the flag: %v", err)
	}
}

// SGLang's spans must tile the output; anything else is refused and leaves the trajectory unchanged.
func TestResponseSpansChecked(t *testing.T) {
	for name, spans := range map[string][]WeightSpan{
		"gap":       {{"a", 0, 1}, {"b", 2, 3}},
		"short":     {{"a", 0, 2}},
		"past end":  {{"a", 0, 4}},
		"empty":     {{"a", 0, 0}, {"b", 0, 3}},
		"not at 0":  {{"a", 1, 3}},
		"reordered": {{"b", 1, 3}, {"a", 0, 1}},
	} {
		tr := NewTrajectory()
		mustNoErr(t, tr.AppendPrompt([]int32{1}))
		r := trResponse(tr, []int32{5, 6, 7})
		r.Turn.WeightVersions = spans
		if err := tr.AppendResponse(r); !errors.Is(err, ErrAlignment) {
			t.Errorf("%s: %v", name, err)
		}
		if tr.Len() != 1 || tr.WeightVersions != nil {
			t.Errorf("%s: trajectory changed", name)
		}
	}
	// a span outside any response segment fails Validate
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{5})))
	tr.WeightVersions = []WeightSpan{{"v1", 1, 3}}
	if err := tr.Validate(); !errors.Is(err, ErrAlignment) {
		t.Fatalf("span over a prompt: %v", err)
	}
}

// Spans read from bad JSON never make the per-token view or the masking panic.
func TestBadSpansDoNotPanic(t *testing.T) {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{5, 6})))
	tr.WeightVersions = []WeightSpan{{"a", -5, 1}, {"b", 3, 99}}
	if got := tr.TokenWeightVersions(); !slices.Equal(got, []string{"a", "", "", "b"}) {
		t.Fatalf("per-token %q", got)
	}
	if n := tr.MaskOffPolicy(); n != 0 || tr.OffPolicyMasked {
		t.Fatalf("masked %d tokens of invalid spans", n)
	}
}
