package tito

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// Fork at every position of a two-turn trajectory: the fork is valid, holds exactly the prefix (ids, mask,
// logprobs), counts the responses it kept, and takes a new prompt and response whose logprobs start right after
// the cut; the original is unchanged.
func TestFork(t *testing.T) {
	tr := trTwoTurns(t)                                            // prompt [1 2 3], response [4 5], prompt [6 7]
	mustNoErr(t, tr.AppendResponse(trResponse(tr, []int32{8, 9}))) // response [8 9]
	before := slices.Clone(tr.TokenIDs)
	wantTurns := []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2} // responses kept when cutting at n
	for n := 0; n <= tr.Len(); n++ {
		f, err := tr.Fork(n)
		mustNoErr(t, err)
		if f.Len() != n || !slices.Equal(f.TokenIDs, tr.TokenIDs[:n]) || !slices.Equal(f.LossMask, tr.LossMask[:n]) {
			t.Fatalf("fork %d: %v %v", n, f.TokenIDs, f.LossMask)
		}
		for i := 1; i < n; i++ {
			if a, b := f.Logprobs[i], tr.Logprobs[i]; a != b && !(math.IsNaN(a) && math.IsNaN(b)) { // the first prompt's are null
				t.Fatalf("fork %d: logprob %d is %v, want %v", n, i, f.Logprobs[i], tr.Logprobs[i])
			}
		}
		if err := f.Validate(); err != nil {
			t.Fatalf("fork %d: %v", n, err)
		}
		if f.Turns() != wantTurns[n] {
			t.Fatalf("fork %d: %d turns, want %d", n, f.Turns(), wantTurns[n])
		}
		mustNoErr(t, f.AppendPrompt([]int32{100, 101}))
		ids, start := f.NextRequest()
		if wantStart := max(n-1, 0); f.Turns() > 0 && start != wantStart {
			t.Fatalf("fork %d: logprob_start_len %d, want %d", n, start, wantStart)
		}
		mustNoErr(t, f.AppendResponse(trResponse(f, []int32{102})))
		if err := f.Validate(); err != nil {
			t.Fatalf("fork %d then a turn: %v", n, err)
		}
		if len(ids) != n+2 {
			t.Fatalf("fork %d: request of %d ids", n, len(ids))
		}
	}
	if !slices.Equal(tr.TokenIDs, before) || tr.Validate() != nil {
		t.Fatal("Fork changed the original")
	}
	if _, err := tr.Fork(tr.Len() + 1); !errors.Is(err, ErrAlignment) {
		t.Fatalf("fork past the end: %v", err)
	}
	if _, err := tr.Fork(-1); !errors.Is(err, ErrAlignment) {
		t.Fatalf("fork at -1: %v", err)
	}
}

// A fork never keeps unsent prompt tokens: they have no logprobs yet.
func TestForkDropsUnsentPrompt(t *testing.T) {
	tr := trTwoTurns(t) // ends in the unsent prompt [6 7]
	f, err := tr.Fork(tr.Len())
	mustNoErr(t, err)
	if f.Len() != 5 || f.Validate() != nil {
		t.Fatalf("fork of a trajectory with a pending prompt: %v", f.TokenIDs)
	}
}
