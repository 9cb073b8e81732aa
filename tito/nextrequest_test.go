package tito

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestNextRequestAppendOnly holds NextRequest to its contract (sglang's IDsCache skips comparing kept ids on it):
// no token of a slice it returned ever changes, whatever the trajectory does next through its methods: prompts
// and responses appended (in place while the capacity lasts), aborted responses continued, prompts dropped after a
// failed call and the conversation going on differently (DropPending), new samples begun and discarded. It also
// checks that slices do share an array from turn to turn (else the cache would compare every time), and that after
// DropPending the next append moves to a new array.
func TestNextRequestAppendOnly(t *testing.T) {
	type given struct{ ids, was []int32 }
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tr := NewTrajectory()
		var out []given
		sameArray, moved := 0, 0
		tok := func(n int) []int32 {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(rng.IntN(150000))
			}
			return ids
		}
		check := func(step int, op string) {
			t.Helper()
			for i, g := range out {
				if !slices.Equal(g.ids, g.was) {
					t.Fatalf("seed %d, step %d (%s): the ids NextRequest returned %d requests before changed", seed, step, op, len(out)-i)
				}
			}
		}
		mustNoErr(t, tr.AppendPrompt(tok(50)))
		for step := range 300 {
			op := "next"
			switch r := rng.IntN(10); {
			case r < 5 && tr.PendingPrompt() > 0: // a call: the request, then its response
				ids, _ := tr.NextRequest()
				if k := len(out); k > 0 && len(out[k-1].ids) > 0 && len(ids) > 0 {
					if unsafe.SliceData(ids) == unsafe.SliceData(out[k-1].ids) {
						sameArray++
					}
				}
				out = append(out, given{ids, slices.Clone(ids)})
				resp := trResponse(tr, tok(1+rng.IntN(40)))
				if rng.IntN(6) == 0 {
					resp.Turn.FinishReason = "abort" // continued by the next call's response
					mustNoErr(t, tr.AppendResponse(resp))
					ids, _ = tr.NextRequest()
					out = append(out, given{ids, slices.Clone(ids)})
					mustNoErr(t, tr.AppendContinuation(trResponse(tr, tok(1+rng.IntN(20)))))
					op = "abort+continue"
				} else {
					mustNoErr(t, tr.AppendResponse(resp))
					op = "call"
				}
			case r < 7: // tool results (a delta)
				mustNoErr(t, tr.AppendPrompt(tok(1+rng.IntN(60))))
				op = "prompt"
			case r == 7 && tr.PendingPrompt() > 0: // a failed call sent the pending prompt; dropped, then something else
				ids, _ := tr.NextRequest()
				out = append(out, given{ids, slices.Clone(ids)})
				before := unsafe.SliceData(tr.TokenIDs)
				tr.DropPending()
				mustNoErr(t, tr.AppendPrompt(tok(1+rng.IntN(30))))
				if unsafe.SliceData(tr.TokenIDs) == before {
					t.Fatalf("seed %d, step %d: the append after DropPending wrote into the array of the dropped tokens", seed, step)
				}
				moved++
				op = "drop+prompt"
			case r == 8 && tr.Turns() > 0: // a new sample (compaction), sometimes discarded before its first reply
				mustNoErr(t, tr.NewSample("compaction", json.RawMessage(`[]`)))
				mustNoErr(t, tr.AppendPrompt(tok(1+rng.IntN(40))))
				if rng.IntN(2) == 0 {
					tr.DiscardEmptySample()
					mustNoErr(t, tr.AppendPrompt(tok(1+rng.IntN(10))))
					op = "sample+discard"
				} else {
					op = "sample"
				}
			case r == 9: // pending prompt dropped at an episode's end, then the episode goes on anyway
				tr.DropPending()
				mustNoErr(t, tr.AppendPrompt(tok(1+rng.IntN(10))))
				op = "drop"
			}
			check(step, op)
			mustNoErr(t, tr.Validate())
		}
		if sameArray == 0 || moved == 0 {
			t.Errorf("seed %d: %d requests shared the previous one's array, %d drops moved it: the test wants both", seed, sameArray, moved)
		}
	}
}
