package tito

import (
	"encoding/json"
	"slices"
)

// SubLink is how a sub-agent's episode hangs off the trajectory (AddSubSamples): the sub-episode's name (the
// prefix of its model calls' rids), the sub-agent, the tool call that ran it, and the tool specs its prompts render.
type SubLink struct {
	Episode, Agent, CallID string
	Tools                  []json.RawMessage
}

// AddSubSamples records the samples of a sub-agent's finished episode (its AllSamples, in order, each ending in a
// response) as samples of this trajectory, ran by a tool call of the current sample's last response.
//
// # Order
//
// Samples are listed in the order they end, the top-level episode's current chain always last: a sub-episode's
// samples go after the samples already listed, before the current chain, whose index moves up by their number (the
// sub-episodes it ran before are relinked to it). The sub-episode's first sample gets reason SampleSubAgent, the
// current chain as its parent, and the branch at the current chain's responses and the end of its last one; its own samples are
// renumbered in place (a parent inside them keeps pointing at the same sample), take the link's Episode, Agent,
// CallID and Tools, and every one is one level deeper (a sub-episode's own sub-episodes keep their names).
//
// # Errors
//
// An *InvariantError wrapping ErrSequence (nothing is changed) when the current chain has no response, or a
// sample has no response or is not numbered from 0 in order.
func (t *Trajectory) AddSubSamples(sub []Sample, link SubLink) error {
	if err := t.consistent(); err != nil {
		return err
	}
	if t.turns == 0 {
		return invariantErr(ErrSequence, t.turns, len(t.TokenIDs), "a sub-agent's samples need a response that called it")
	}
	for k, s := range sub {
		if s.Index != k {
			return invariantErr(ErrSequence, -1, -1, "sub-agent sample %d has index %d", k, s.Index)
		}
		if n := len(s.Segments); n == 0 || s.Segments[n-1].Kind != KindResponse {
			return invariantErr(ErrSequence, -1, len(s.TokenIDs), "sub-agent sample %d does not end in a response", k)
		}
	}
	end := 0 // the end of the response that made the call
	for _, sg := range t.Segments {
		if sg.Kind == KindResponse {
			end = sg.Offset + sg.Length
		}
	}
	base, cur := len(t.Samples), len(t.Samples)
	now := base + len(sub) // the current chain's index once they are in
	for i := range t.Samples {
		if t.Samples[i].Parent == cur && t.Samples[i].Reason == SampleSubAgent {
			t.Samples[i].Parent = now
		}
	}
	for _, s := range sub {
		s.Index += base
		if s.Parent < 0 {
			s.Parent, s.Reason = now, SampleSubAgent
			s.BranchTurn, s.BranchOffset = t.turns, end
		} else {
			s.Parent += base
		}
		if s.Episode == "" {
			s.Episode, s.Agent, s.CallID = link.Episode, link.Agent, link.CallID
			if s.Tools == nil {
				s.Tools = slices.Clone(link.Tools)
			}
		}
		s.Depth++
		t.Samples = append(t.Samples, s)
	}
	return nil
}
