package tito

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

func lp(v float64) *float64 { return &v }

// trResponse builds the Response SGLang would give for the trajectory's next request, with made-up but
// distinct logprobs (input position p gets -p/1000-0.5, output i gets -(i+1)/7).
func trResponse(t *Trajectory, out []int32) Response {
	ids, start := t.NextRequest()
	var in []*float64 // none for logprob_start_len -1 (the first call)
	if start >= 0 {
		in = make([]*float64, len(ids)-start)
	}
	for i := 1; i < len(in); i++ {
		in[i] = lp(-float64(start+i)/1000 - 0.5)
	}
	ol := make([]float64, len(out))
	for i := range out {
		ol[i] = -float64(i+1) / 7
	}
	return Response{InputIDs: ids, LogprobStartLen: start, InputLogprobs: in, OutputIDs: out, OutputLogprobs: ol,
		Turn: TurnInfo{Server: "w0", RID: "r", WeightVersion: "v1", PromptTokens: len(ids), FinishReason: "stop"}}
}

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTrajectoryFlow(t *testing.T) {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{10, 11, 12}))
	ids, start := tr.NextRequest()
	if !slices.Equal(ids, []int32{10, 11, 12}) || start != -1 {
		t.Fatalf("first NextRequest = %v, %d; want start -1 (no prompt logprobs, so the radix cache serves the prompt)", ids, start)
	}
	r := Response{InputIDs: ids, LogprobStartLen: -1,
		OutputIDs: []int32{20, 21}, OutputLogprobs: []float64{-0.25, -0.125},
		Turn: TurnInfo{Server: "http://w0", RID: "rid-0", WeightVersion: "7", PromptTokens: 3, CachedTokens: 0, FinishReason: "stop", LatencyMS: 12.5}}
	mustNoErr(t, tr.AppendResponse(r))
	if tr.PendingPrompt() != 0 || tr.Turns() != 1 {
		t.Fatalf("pending %d turns %d", tr.PendingPrompt(), tr.Turns())
	}
	mustNoErr(t, tr.AppendPrompt([]int32{30}))
	mustNoErr(t, tr.AppendPrompt([]int32{31, 32})) // extends the same prompt segment
	ids, start = tr.NextRequest()
	if !slices.Equal(ids, []int32{10, 11, 12, 20, 21, 30, 31, 32}) || start != 4 {
		t.Fatalf("second NextRequest = %v, %d; want start 4 (one before the new prompt)", ids, start)
	}
	r2 := Response{InputIDs: slices.Clone(ids), LogprobStartLen: 4, InputLogprobs: []*float64{nil, lp(-3), lp(-4), lp(-5)},
		OutputIDs: []int32{40}, OutputLogprobs: []float64{-0.5}, Turn: TurnInfo{RID: "rid-1", CachedTokens: 5, PromptTokens: 8}}
	mustNoErr(t, tr.AppendResponse(r2))
	mustNoErr(t, tr.Validate())

	wantIDs := []int32{10, 11, 12, 20, 21, 30, 31, 32, 40}
	wantMask := Mask{0, 0, 0, 1, 1, 0, 0, 0, 1}
	nan := math.NaN()
	wantLP := []float64{nan, nan, nan, -0.25, -0.125, -3, -4, -5, -0.5} // the first prompt has no logprobs
	if !slices.Equal(tr.TokenIDs, wantIDs) || !slices.Equal(tr.LossMask, wantMask) || !sameFloats(tr.Logprobs, wantLP) {
		t.Fatalf("got ids %v mask %v logprobs %v", tr.TokenIDs, tr.LossMask, tr.Logprobs)
	}
	wantSegs := []Segment{
		{Kind: KindPrompt, Offset: 0, Length: 3, Turn: 0},
		{Kind: KindResponse, Offset: 3, Length: 2, Turn: 0, Info: &r.Turn},
		{Kind: KindPrompt, Offset: 5, Length: 3, Turn: 1},
		{Kind: KindResponse, Offset: 8, Length: 1, Turn: 1, Info: &r2.Turn},
	}
	gotSegs, _ := json.Marshal(tr.Segments)
	wantSegsJSON, _ := json.Marshal(wantSegs)
	if string(gotSegs) != string(wantSegsJSON) {
		t.Errorf("segments\n got %s\nwant %s", gotSegs, wantSegsJSON)
	}

	s := tr.SlimeSample()
	if !slices.Equal(s.Tokens, wantIDs) || s.ResponseLength != 6 || !slices.Equal(s.LossMask, Mask{1, 1, 0, 0, 0, 1}) ||
		!slices.Equal(s.RolloutLogProbs, []float64{-0.25, -0.125, -3, -4, -5, -0.5}) {
		t.Errorf("SlimeSample = %+v", s)
	}
	s.Tokens[0] = 99
	if tr.TokenIDs[0] != 10 {
		t.Error("SlimeSample shares memory with the trajectory")
	}

	// A trailing prompt that is never sent: Validate accepts it, SlimeSample leaves it out, DropPending removes it.
	mustNoErr(t, tr.AppendPrompt([]int32{50, 51}))
	mustNoErr(t, tr.Validate())
	if s := tr.SlimeSample(); len(s.Tokens) != 9 || s.ResponseLength != 6 {
		t.Errorf("SlimeSample with a pending prompt: %d tokens, response_length %d", len(s.Tokens), s.ResponseLength)
	}
	if n := tr.DropPending(); n != 2 || tr.Len() != 9 || len(tr.Segments) != 4 {
		t.Errorf("DropPending = %d, len %d, %d segments", n, tr.Len(), len(tr.Segments))
	}
	mustNoErr(t, tr.Validate())
	if n := tr.DropPending(); n != 0 {
		t.Errorf("second DropPending = %d", n)
	}
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// trTwoTurns returns a trajectory after one response and a pending second prompt, ready for AppendResponse.
func trTwoTurns(t *testing.T) *Trajectory {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2, 3}))
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{4, 5})))
	mustNoErr(t, tr.AppendPrompt([]int32{6, 7}))
	return tr
}

func TestAppendResponseViolations(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) *Trajectory
		mutate  func(r *Response)
		want    error
		wantMsg string
		index   int
	}{
		{"empty trajectory", func(t *testing.T) *Trajectory { return NewTrajectory() }, nil, ErrSequence, "trajectory is empty", -1},
		{"response after response", func(t *testing.T) *Trajectory {
			tr := NewTrajectory()
			mustNoErr(t, tr.AppendPrompt([]int32{1}))
			mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{2})))
			return tr
		}, nil, ErrSequence, "already ends in a response", 2},
		{"empty output", trTwoTurns, func(r *Response) { r.OutputIDs, r.OutputLogprobs = nil, nil }, ErrSequence, "empty response", 7},
		{"negative output id", trTwoTurns, func(r *Response) { r.OutputIDs = []int32{9, -1}; r.OutputLogprobs = []float64{-1, -1} }, ErrSequence, "output id -1 is negative", 8},
		{"prefix differs", trTwoTurns, func(r *Response) { r.InputIDs = []int32{1, 2, 3, 4, 99, 6, 7} }, ErrPrefix, "differ first at index 4 (sent 99, trajectory has 5)", 4},
		{"prefix shorter", trTwoTurns, func(r *Response) { r.InputIDs = r.InputIDs[:6] }, ErrPrefix, "index 6 (sent nothing, trajectory has 7)", 6},
		{"prefix longer", trTwoTurns, func(r *Response) { r.InputIDs = append(slices.Clone(r.InputIDs), 8) }, ErrPrefix, "input_ids (8 tokens) are not the trajectory (7 tokens)", 7},
		{"prefix nil", trTwoTurns, func(r *Response) { r.InputIDs = nil }, ErrPrefix, "differ first at index 0", 0},
		{"logprob_start_len wrong", trTwoTurns, func(r *Response) { r.LogprobStartLen = 0 }, ErrLogprobs, "logprob_start_len is 0, want 4", -1},
		{"too few input logprobs", trTwoTurns, func(r *Response) { r.InputLogprobs = r.InputLogprobs[:2] }, ErrLogprobs, "2 input logprobs, want 3", -1},
		{"too many input logprobs", trTwoTurns, func(r *Response) { r.InputLogprobs = append(r.InputLogprobs, lp(-1)) }, ErrLogprobs, "4 input logprobs, want 3", -1},
		{"first input logprob not null", trTwoTurns, func(r *Response) { r.InputLogprobs[0] = lp(-0.5) }, ErrLogprobs, "want null", 4},
		{"null input logprob", trTwoTurns, func(r *Response) { r.InputLogprobs[2] = nil }, ErrLogprobs, "input logprob 2 (token index 6) is null", 6},
		{"NaN input logprob", trTwoTurns, func(r *Response) { r.InputLogprobs[1] = lp(math.NaN()) }, ErrLogprobs, "is NaN", 5},
		{"infinite input logprob", trTwoTurns, func(r *Response) { r.InputLogprobs[1] = lp(math.Inf(-1)) }, ErrLogprobs, "is -Inf", 5},
		{"output logprobs short", trTwoTurns, func(r *Response) { r.OutputLogprobs = r.OutputLogprobs[:1] }, ErrLogprobs, "1 output logprobs for 2 output ids", 7},
		{"output logprobs long", trTwoTurns, func(r *Response) { r.OutputLogprobs = append(r.OutputLogprobs, -1) }, ErrLogprobs, "3 output logprobs for 2 output ids", 7},
		{"NaN output logprob", trTwoTurns, func(r *Response) { r.OutputLogprobs[1] = math.NaN() }, ErrLogprobs, "output logprob 1 is NaN", 8},
		{"first turn start not 0", func(t *testing.T) *Trajectory {
			tr := NewTrajectory()
			mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
			return tr
		}, func(r *Response) { r.LogprobStartLen = 0; r.InputLogprobs = []*float64{nil, lp(-1)} }, ErrLogprobs, "logprob_start_len is 0, want -1", -1},
		{"first turn with input logprobs", func(t *testing.T) *Trajectory {
			tr := NewTrajectory()
			mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
			return tr
		}, func(r *Response) { r.InputLogprobs = []*float64{nil, lp(-1)} }, ErrLogprobs, "2 input logprobs, want none (logprob_start_len -1)", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := tt.setup(t)
			var r Response
			if tr.Len() > 0 {
				r = trResponse(tr, []int32{8, 9})
				r.InputIDs = slices.Clone(r.InputIDs)
			}
			if tt.mutate != nil {
				tt.mutate(&r)
			}
			before, err := json.Marshal(tr)
			mustNoErr(t, err)
			turns, pending := tr.Turns(), tr.PendingPrompt()
			err = tr.AppendResponse(r)
			var ie *InvariantError
			if !errors.Is(err, tt.want) || !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *InvariantError wrapping %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantMsg)
			}
			if ie.Index != tt.index || ie.Turn != turns {
				t.Errorf("Index %d Turn %d, want %d %d", ie.Index, ie.Turn, tt.index, turns)
			}
			after, _ := json.Marshal(tr)
			if string(before) != string(after) || tr.Turns() != turns || tr.PendingPrompt() != pending {
				t.Errorf("a failed AppendResponse changed the trajectory:\n%s\n%s", before, after)
			}
		})
	}
}

func TestAppendPrompt(t *testing.T) {
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt(nil))
	if tr.Len() != 0 || len(tr.Segments) != 0 {
		t.Errorf("empty AppendPrompt added something: %+v", tr)
	}
	err := tr.AppendPrompt([]int32{1, -5})
	var ie *InvariantError
	if !errors.Is(err, ErrSequence) || !errors.As(err, &ie) || ie.Index != 1 || tr.Len() != 0 {
		t.Errorf("negative id: err %v, len %d", err, tr.Len())
	}
	in := []int32{3, 4}
	mustNoErr(t, tr.AppendPrompt(in))
	in[0] = 99
	if tr.TokenIDs[0] != 3 {
		t.Error("AppendPrompt kept the caller's slice")
	}
	t.Run("inconsistent trajectory is refused, not a panic", func(t *testing.T) {
		for name, broken := range map[string]func(tr *Trajectory){
			"short mask":       func(tr *Trajectory) { tr.LossMask = tr.LossMask[:1] },
			"no segments":      func(tr *Trajectory) { tr.Segments = nil },
			"segment past end": func(tr *Trajectory) { tr.Segments[len(tr.Segments)-1].Length++ },
		} {
			tr := trTwoTurns(t)
			broken(tr)
			if err := tr.AppendPrompt([]int32{1}); !errors.Is(err, ErrAlignment) {
				t.Errorf("%s: AppendPrompt err = %v, want ErrAlignment", name, err)
			}
			if err := tr.AppendResponse(trResponse(tr, []int32{1})); !errors.Is(err, ErrAlignment) {
				t.Errorf("%s: AppendResponse err = %v, want ErrAlignment", name, err)
			}
			if n := tr.DropPending(); n != 0 {
				t.Errorf("%s: DropPending = %d", name, n)
			}
		}
	})
	var zero Trajectory // the zero value works too
	mustNoErr(t, zero.AppendPrompt([]int32{1}))
	mustNoErr(t, zero.AppendResponse(trResponse(&zero, []int32{2})))
	mustNoErr(t, zero.Validate())
}

func TestValidateViolations(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(tr *Trajectory)
		want   error
		msg    string
	}{
		{"short mask", func(tr *Trajectory) { tr.LossMask = tr.LossMask[:3] }, ErrAlignment, "len(loss_mask) 3"},
		{"long logprobs", func(tr *Trajectory) { tr.Logprobs = append(tr.Logprobs, -1) }, ErrAlignment, "len(logprobs) 10"},
		{"mask 1 on prompt", func(tr *Trajectory) { tr.LossMask[1] = 1 }, ErrAlignment, "loss_mask is 1 on a prompt token"},
		{"mask 0 on response", func(tr *Trajectory) { tr.LossMask[4] = 0 }, ErrAlignment, "loss_mask is 0 on a response token"},
		{"gap between segments", func(tr *Trajectory) { tr.Segments[1].Offset++ }, ErrAlignment, "segment 1 has offset 4"},
		{"empty segment", func(tr *Trajectory) { tr.Segments[2].Length = 0 }, ErrAlignment, "segment 2 has offset 5 and length 0"},
		{"segments short", func(tr *Trajectory) { tr.Segments = tr.Segments[:3] }, ErrAlignment, "segments cover 7 of 9"},
		{"segment past end", func(tr *Trajectory) { tr.Segments[3].Length = 5 }, ErrAlignment, "past the 9 tokens"},
		{"starts with response", func(tr *Trajectory) { tr.Segments[0].Kind = KindResponse }, ErrSequence, `segment 0 is "response", want "prompt"`},
		{"two prompts", func(tr *Trajectory) { tr.Segments[1].Kind = KindPrompt }, ErrSequence, `segment 1 is "prompt"`},
		{"bad turn", func(tr *Trajectory) { tr.Segments[2].Turn = 0 }, ErrSequence, "segment 2 has turn 0, want 1"},
		{"no turn info", func(tr *Trajectory) { tr.Segments[1].Info = nil }, ErrSequence, "no turn info"},
		{"negative id", func(tr *Trajectory) { tr.TokenIDs[2] = -3 }, ErrSequence, "token id -3 is negative"},
		{"token 0 has a logprob", func(tr *Trajectory) { tr.Logprobs[0] = -1 }, ErrLogprobs, "token 0 has logprob -1"},
		{"null in the middle", func(tr *Trajectory) { tr.Logprobs[5] = math.NaN() }, ErrLogprobs, "logprob is NaN"},
		{"infinite", func(tr *Trajectory) { tr.Logprobs[3] = math.Inf(-1) }, ErrLogprobs, "logprob is -Inf"},
		{"null response logprob at the end", func(tr *Trajectory) { tr.Logprobs[8] = math.NaN() }, ErrLogprobs, "logprob is NaN"},
		{"first prompt partly null", func(tr *Trajectory) { tr.Logprobs[2] = -1 }, ErrLogprobs, "a token of the first prompt has logprob -1"},
		{"first prompt with logprobs, one null", func(tr *Trajectory) { tr.Logprobs[1] = -1 }, ErrLogprobs, "logprob is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := trTwoTurns(t)
			mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8, 9})))
			mustNoErr(t, tr.Validate())
			tt.mutate(tr)
			err := tr.Validate()
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Validate() = %v, want %v containing %q", err, tt.want, tt.msg)
			}
		})
	}
	t.Run("first prompt with logprobs from token 1 (trajectories from before logprob_start_len -1)", func(t *testing.T) {
		tr := trTwoTurns(t)
		mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8, 9})))
		tr.Logprobs[1], tr.Logprobs[2] = -1, -2
		mustNoErr(t, tr.Validate())
	})
	t.Run("unsent trailing prompt with a value", func(t *testing.T) {
		tr := trTwoTurns(t)
		mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8})))
		mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
		tr.Logprobs[tr.Len()-2] = -1
		if err := tr.Validate(); !errors.Is(err, ErrLogprobs) || !strings.Contains(err.Error(), "unsent trailing prompt") {
			t.Errorf("Validate() = %v", err)
		}
	})
	t.Run("empty is valid", func(t *testing.T) {
		mustNoErr(t, NewTrajectory().Validate())
	})
}

func TestTrajectoryJSON(t *testing.T) {
	tr := trTwoTurns(t)
	// Logprobs that stress float formatting: they must come back bit for bit.
	tricky := []float64{-0.1, -1.0 / 3, -5e-324, -1e-300, math.Copysign(0, -1), 0, -123456.789e10, math.Nextafter(-1, 0), -2.2250738585072014e-308}
	out := []int32{100, 101, 102, 103, 104, 105, 106, 107, 108}
	r := trResponse(tr, out)
	r.OutputLogprobs = tricky
	mustNoErr(t, tr.AppendResponse(r))
	tr.ID, tr.ItemID, tr.SampleIndex = "item-1#0", "item-1", 0
	tr.Status, tr.StatusReason = "completed", ""
	tr.Messages = json.RawMessage(`[{"role":"user","content":"hi <|im_end|> \u2028"}]`)
	tr.Reward = lp(0.75)
	tr.SetProvenance(ProvTokenizerSHA256, "abc")
	tr.SetProvenance(ProvPlugins, map[string]string{"calc": "def"})
	tr.SetMetric("turns", 2)

	b, err := json.Marshal(tr)
	mustNoErr(t, err)
	bv, err := json.Marshal(*tr)
	mustNoErr(t, err)
	if string(b) != string(bv) {
		t.Errorf("json.Marshal of the value and the pointer differ")
	}
	var top map[string]json.RawMessage
	mustNoErr(t, json.Unmarshal(b, &top))
	for _, k := range []string{"token_ids", "loss_mask", "logprobs", "segments", "status", "messages", "reward", "provenance"} {
		if _, ok := top[k]; !ok {
			t.Errorf("field %q missing from %s", k, b)
		}
	}
	if !strings.HasPrefix(string(top["loss_mask"]), "[0,0,0,1,1,0,0,1,") {
		t.Errorf("loss_mask = %s", top["loss_mask"])
	}
	var raw []*float64
	mustNoErr(t, json.Unmarshal(top["logprobs"], &raw))
	first := tr.Segments[0].Length
	for i, p := range raw {
		if (p == nil) != (i < first) {
			t.Errorf("logprobs[%d] null = %v; exactly the first prompt's %d tokens are null", i, p == nil, first)
		}
	}

	var back Trajectory
	mustNoErr(t, json.Unmarshal(b, &back))
	mustNoErr(t, back.Validate())
	if !sameFloats(back.Logprobs, tr.Logprobs) {
		t.Errorf("logprobs did not round-trip bit for bit:\n got %v\nwant %v", back.Logprobs, tr.Logprobs)
	}
	b2, err := json.Marshal(&back)
	mustNoErr(t, err)
	if string(b2) != string(b) {
		t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
	}
	// The read-back trajectory can be appended to (its state was restored).
	mustNoErr(t, back.AppendPrompt([]int32{7}))
	if _, start := back.NextRequest(); start != tr.Len()-1 {
		t.Errorf("read-back NextRequest start = %d, want %d", start, tr.Len()-1)
	}
	mustNoErr(t, back.AppendResponse(trResponse(&back, []int32{1})))
	mustNoErr(t, back.Validate())

	// A pending trailing prompt survives a round trip as pending.
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
	b, _ = json.Marshal(tr)
	var pend Trajectory
	mustNoErr(t, json.Unmarshal(b, &pend))
	if pend.PendingPrompt() != 2 || pend.Turns() != 2 {
		t.Errorf("read-back pending %d turns %d", pend.PendingPrompt(), pend.Turns())
	}
	mustNoErr(t, pend.AppendResponse(trResponse(&pend, []int32{3})))
	mustNoErr(t, pend.Validate())

	t.Run("errors", func(t *testing.T) {
		var x Trajectory
		for _, in := range []string{`{`, `{"token_ids": [1], "loss_mask": [2]}`, `{"loss_mask": []}`, `{"token_ids": [1], "logprobs": ["x"]}`, `[]`} {
			if err := json.Unmarshal([]byte(in), &x); err == nil {
				t.Errorf("Unmarshal(%s) succeeded", in)
			}
		}
		inf := NewTrajectory()
		inf.AppendPrompt([]int32{1, 2})
		inf.Logprobs[1] = math.Inf(-1)
		if _, err := json.Marshal(inf); err == nil || !strings.Contains(err.Error(), "logprobs[1] is -Inf") {
			t.Errorf("Marshal with -Inf: %v", err)
		}
		bad := NewTrajectory()
		bad.SetProvenance("f", func() {})
		if _, err := json.Marshal(bad); err == nil || !strings.Contains(err.Error(), "provenance") {
			t.Errorf("Marshal with a func in provenance: %v", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		b, err := json.Marshal(NewTrajectory())
		mustNoErr(t, err)
		want := `{"id":"","sample_index":0,"status":"","token_ids":[],"loss_mask":[],"logprobs":[],"segments":[],"messages":null,"reward":null,"provenance":{}}`
		if string(b) != want {
			t.Errorf("got  %s\nwant %s", b, want)
		}
	})
	t.Run("slime", func(t *testing.T) {
		b, err := json.Marshal(tr.SlimeSample())
		mustNoErr(t, err)
		var s map[string]json.RawMessage
		mustNoErr(t, json.Unmarshal(b, &s))
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "loss_mask,response_length,reward,rollout_log_probs,status,tokens,weight_versions" || string(s["response_length"]) != "13" {
			t.Errorf("slime sample JSON: %s", b)
		}
	})
}

// FuzzTrajectory drives random sequences of appends, some of them corrupted, and checks the invariants
// after every step: a failed append changes nothing, a good one keeps Validate happy and the prefix
// invariant (each request extends the previous request and its output), and JSON round-trips.
func FuzzTrajectory(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 0, 1, 1, 5})
	f.Add([]byte{1, 1, 1, 9, 9, 9, 0, 0, 0, 2, 7, 3})
	f.Add([]byte("prompt-response-prompt-corrupt"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		tr := NewTrajectory()
		var prevReq, prevOut []int32
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%4, int(ops[i+1])
			switch op {
			case 0, 3: // prompt of 0..7 tokens
				ids := make([]int32, arg%8)
				for j := range ids {
					ids[j] = int32(arg*31+j) % 1000
				}
				if err := tr.AppendPrompt(ids); err != nil {
					t.Fatalf("AppendPrompt: %v", err)
				}
			case 1, 2: // response, corrupted in one of several ways when op == 2
				if tr.Len() == 0 || tr.Segments[len(tr.Segments)-1].Kind != KindPrompt {
					if err := tr.AppendResponse(Response{OutputIDs: []int32{1}, OutputLogprobs: []float64{-1}}); !errors.Is(err, ErrSequence) {
						t.Fatalf("out-of-order response: %v", err)
					}
					continue
				}
				out := make([]int32, 1+arg%5)
				for j := range out {
					out[j] = int32(arg + j)
				}
				r := trResponse(tr, out)
				r.InputIDs = slices.Clone(r.InputIDs)
				if op == 2 {
					switch arg % 4 {
					case 0:
						r.InputIDs[arg%len(r.InputIDs)]++
					case 1:
						if len(r.InputLogprobs) == 0 { // the first call asks for none: one is a corruption too
							r.InputLogprobs = []*float64{nil}
						} else {
							r.InputLogprobs = r.InputLogprobs[:len(r.InputLogprobs)-1]
						}
					case 2:
						r.OutputLogprobs = r.OutputLogprobs[1:]
					case 3:
						r.LogprobStartLen++
					}
					before, _ := json.Marshal(tr)
					if err := tr.AppendResponse(r); err == nil {
						t.Fatalf("corruption %d accepted", arg%4)
					}
					after, _ := json.Marshal(tr)
					if string(before) != string(after) {
						t.Fatal("a failed append changed the trajectory")
					}
					continue
				}
				if prevReq != nil && (!slices.Equal(r.InputIDs[:len(prevReq)], prevReq) || !slices.Equal(r.InputIDs[len(prevReq):len(prevReq)+len(prevOut)], prevOut)) {
					t.Fatal("prefix invariant: the request does not extend the previous request and output")
				}
				if err := tr.AppendResponse(r); err != nil {
					t.Fatalf("AppendResponse: %v", err)
				}
				prevReq, prevOut = r.InputIDs, out
			}
			if err := tr.Validate(); err != nil {
				t.Fatalf("after op %d: %v", i/2, err)
			}
		}
		if ids, _ := tr.NextRequest(); prevReq != nil && tr.PendingPrompt() == 0 && !slices.Equal(ids, append(slices.Clone(prevReq), prevOut...)) {
			t.Fatal("the final trajectory is not the last request plus its output")
		}
		b, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		var back Trajectory
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("read back: %v", err)
		}
		if back.PendingPrompt() != tr.PendingPrompt() || back.Turns() != tr.Turns() {
			t.Fatalf("read back state: pending %d/%d turns %d/%d", back.PendingPrompt(), tr.PendingPrompt(), back.Turns(), tr.Turns())
		}
	})
}

// TestTrajectoryHammer builds many trajectories concurrently, auditing them with one shared tokenizer (run
// with -race).
func TestTrajectoryHammer(t *testing.T) {
	tk := tkModel(t, "qwen3").Tokenizer
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 50 {
				tr := NewTrajectory()
				for turn := range 1 + rng.IntN(5) {
					if err := tr.AppendPrompt(tk.Encode("<|im_start|>user\nturn "+strings.Repeat("x", turn)+"<|im_end|>\n<|im_start|>assistant\n", false)); err != nil {
						errs <- err
						return
					}
					if err := tr.AppendResponse(trResponse(tr, tk.Encode("reply number "+string(rune('a'+turn)), false))); err != nil {
						errs <- err
						return
					}
				}
				if err := tr.Validate(); err != nil {
					errs <- err
					return
				}
				if s := tr.Audit(tk); s.Drifted != 0 {
					errs <- errors.New("canonical responses reported as drifted")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzTrajectoryUnmarshal feeds arbitrary JSON to UnmarshalJSON: it never panics, and neither do Validate,
// SlimeSample, Audit, DropPending or the append methods on what it returns; a trajectory that validates can be
// appended to and still validates.
func FuzzTrajectoryUnmarshal(f *testing.F) {
	tr := NewTrajectory()
	steps := []func() error{
		func() error { return tr.AppendPrompt([]int32{1, 2, 3}) },
		func() error { return tr.AppendResponse(trResponse(tr, []int32{4, 5})) },
		func() error { return tr.AppendPrompt([]int32{6, 7}) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			f.Fatal(err)
		}
		seed, _ := json.Marshal(tr)
		f.Add(seed)
	}
	f.Add([]byte(`{"token_ids":[1,2],"loss_mask":[0,1],"logprobs":[null,-1],"segments":[{"kind":"prompt","offset":5,"length":-3,"turn":0}]}`))
	f.Add([]byte(`{"token_ids":[1],"loss_mask":[],"logprobs":[null],"segments":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tr Trajectory
		if json.Unmarshal(data, &tr) != nil {
			return
		}
		valid := tr.Validate() == nil
		tr.SlimeSample()
		tr.TokenWeightVersions()
		tr.Audit(nil)
		_ = tr.AppendPrompt([]int32{1, 2})
		if valid && tr.OffPolicyMasked { // a masked trajectory takes no more responses
			if err := tr.AppendResponse(trResponse(&tr, []int32{3})); !errors.Is(err, ErrSequence) {
				t.Fatalf("masked trajectory + AppendResponse: %v", err)
			}
			return
		}
		if valid {
			if err := tr.Validate(); err != nil {
				t.Fatalf("valid trajectory + AppendPrompt: %v", err)
			}
			if err := tr.AppendResponse(trResponse(&tr, []int32{3})); err != nil {
				t.Fatalf("valid trajectory + AppendResponse: %v", err)
			}
			if err := tr.Validate(); err != nil {
				t.Fatalf("after AppendResponse: %v", err)
			}
		} else {
			_ = tr.AppendResponse(trResponse(&tr, []int32{3}))
		}
		tr.DropPending()
		tr.SlimeSample()
		tr.MaskOffPolicy()
		if valid && tr.Validate() != nil {
			t.Fatalf("valid trajectory + MaskOffPolicy: %v", tr.Validate())
		}
	})
}

// TestTrajectoryJSONReadByPython checks that Python's json module (what trainers use) reads every logprob of
// AppendJSON's output back to the same float64 bits, negative zero and subnormals included.
func TestTrajectoryJSONReadByPython(t *testing.T) {
	py := os.Getenv("AGENTRT_GOLDEN_PYTHON")
	if py == "" {
		t.Skip("$AGENTRT_GOLDEN_PYTHON is not set")
	}
	tr := NewTrajectory()
	mustNoErr(t, tr.AppendPrompt([]int32{1, 2}))
	out := []float64{-5e-324, math.Copysign(0, -1), 0, -1.0 / 3, -1e-7, -123456789.123, -2.2250738585072014e-308, -1, -1e300, math.Nextafter(-0.5, -1)}
	ids := make([]int32, len(out))
	r := trResponse(tr, ids)
	r.OutputLogprobs = out
	mustNoErr(t, tr.AppendResponse(r))
	b, err := tr.AppendJSON(nil)
	mustNoErr(t, err)
	cmd := exec.Command(py, "-c", `import json, struct, sys
d = json.load(sys.stdin)
print(" ".join("null" if x is None else "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0] for x in d["logprobs"]))`)
	cmd.Stdin = bytes.NewReader(b)
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want []string
	for _, f := range tr.Logprobs {
		if math.IsNaN(f) { // the first prompt
			want = append(want, "null")
			continue
		}
		want = append(want, fmt.Sprintf("%016x", math.Float64bits(f)))
	}
	if strings.TrimSpace(string(got)) != strings.Join(want, " ") {
		t.Errorf("Python read\n%s\nwant\n%s", got, strings.Join(want, " "))
	}
}
