package tito

import (
	"math"
	"slices"
)

// Fork returns a new trajectory holding the first n tokens of t, with their loss mask, logprobs, segments and turn
// provenance, for a conversation that continues differently after them (a caller that edited its history). A cut
// inside a response keeps the tokens before the cut as a response: the model generated exactly them after exactly
// that prefix. Tokens of a trailing prompt that was never sent are dropped when the cut falls among them (they have
// no logprobs yet). The fork has no id, status, messages or provenance of its own; t is not changed.
//
// # Errors
//
// An *InvariantError wrapping ErrAlignment when n is out of range or t is inconsistent.
func (t *Trajectory) Fork(n int) (*Trajectory, error) {
	if err := t.consistent(); err != nil {
		return nil, err
	}
	if n < 0 || n > len(t.TokenIDs) {
		return nil, invariantErr(ErrAlignment, t.turns, n, "fork at %d: want 0..%d", n, len(t.TokenIDs))
	}
	n = min(n, t.pending) // unsent prompt tokens cannot be shared: they have no logprobs
	f := NewTrajectory()
	f.TokenIDs = slices.Clone(t.TokenIDs[:n])
	f.LossMask = slices.Clone(t.LossMask[:n])
	f.Logprobs = slices.Clone(t.Logprobs[:n])
	for _, s := range t.Segments {
		if s.Offset >= n {
			break
		}
		s.Length = min(s.Length, n-s.Offset)
		if s.Info != nil {
			info := *s.Info
			info.WeightVersions = slices.Clone(info.WeightVersions)
			s.Info = &info
		}
		s.Drift = nil
		f.Segments = append(f.Segments, s)
		if s.Kind == KindResponse {
			f.turns++
		}
	}
	f.pending = n
	if n > 0 && math.IsNaN(f.Logprobs[n-1]) && n > f.Segments[0].Length {
		// Among sent tokens only the first prompt's may be null (it is sent without prompt logprobs); a NaN
		// later means t was inconsistent.
		return nil, invariantErr(ErrLogprobs, t.turns, n-1, "fork at %d: token %d has no logprob", n, n-1)
	}
	return f, nil
}
