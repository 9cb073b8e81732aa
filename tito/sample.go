package tito

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Sample reasons: why a sample of a multi-sample episode began.
const (
	// SampleCompaction: the conversation was replaced (a context policy dropped or summarised old turns) and the
	// new conversation rendered in full as the sample's first prompt.
	SampleCompaction = "compaction"
	// SampleSummary: the model's call that summarized the conversation for a compaction (its prompt the full render
	// of the conversation and the summary request, its one response the summary).
	SampleSummary = "summary"
	// SampleAsDeployed: history "as-deployed": the turn's prompt is the full render of the conversation so far.
	SampleAsDeployed = "as_deployed"
	// SampleSubAgent: the first sample of a sub-agent's episode (a tool that runs another agent on a sub-task,
	// docs/PROTOCOL.md section 7): Parent is the sample whose response made the call.
	SampleSubAgent = "subagent"
)

// SampleOrigin says where one sample of a multi-sample episode came from (docs/PROTOCOL.md section 7).
type SampleOrigin struct {
	// Index is the sample's position in the episode (0 for the first).
	Index int `json:"index"`
	// Parent is the index of the sample it branched from (-1 for the first); BranchTurn and BranchOffset are the
	// parent's responses and tokens at the branch: the parent's chain up to there is what the conversation had been
	// when it was replaced.
	Parent       int `json:"parent"`
	BranchTurn   int `json:"branch_turn"`
	BranchOffset int `json:"branch_offset"`
	// Reason is why the sample began ("" for the first, SampleCompaction).
	Reason string `json:"reason,omitempty"`
	// FirstTurn is the number of the episode's model calls before the sample's first (its segments' turns count
	// from 0 within the sample; a response's rid names the episode-wide call).
	FirstTurn int `json:"first_turn"`
	// PromptMessages is how many of the sample's messages its first prompt renders: that prompt is the chat
	// template's full render of messages[:prompt_messages] with the episode's tools and add_generation_prompt.
	PromptMessages int `json:"prompt_messages"`
	// Masked says the sample's response tokens have loss mask 0 (MaskResponses: a summary call the agent does not
	// train on); their logprobs are kept. The declared exception to "loss mask 1 on response tokens".
	Masked bool `json:"masked,omitempty"`
	// Episode names the sub-agent episode the sample belongs to ("" for the top-level episode's own samples): its
	// model calls' rids are Episode + "." + call, and its first_turn counts that episode's calls. Agent is the
	// sub-agent's name, CallID the parent's tool call that ran it, Depth how many sub-agent calls deep it is (0 for
	// the top-level episode). See subsample.go.
	Episode string `json:"episode,omitempty"`
	Agent   string `json:"agent,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	Depth   int    `json:"depth,omitempty"`
}

// Sample is a finished sample of a multi-sample episode: one prefix chain (token ids, loss mask, logprobs,
// weight spans, segments) with the conversation it rendered, and where it came from.
type Sample struct {
	SampleOrigin
	TokenIDs       []int32         `json:"token_ids"`
	LossMask       Mask            `json:"loss_mask"`
	Logprobs       Logprobs        `json:"logprobs"`
	WeightVersions []WeightSpan    `json:"weight_versions,omitempty"`
	Segments       []Segment       `json:"segments"`
	Messages       json.RawMessage `json:"messages"`
	// Tools are the tool specs the sample's prompts render, when they are not the trajectory's (a sub-agent's).
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// chain returns the sample as a one-chain trajectory sharing its slices, for the chain checks.
func (s *Sample) chain() *Trajectory {
	c := &Trajectory{TokenIDs: s.TokenIDs, LossMask: s.LossMask, Logprobs: s.Logprobs, WeightVersions: s.WeightVersions,
		Segments: s.Segments, Origin: SampleOrigin{Masked: s.Masked}}
	c.restoreState()
	return c
}

// MultiSample reports whether the episode has more than one sample (then Samples holds the earlier ones and the
// trajectory's own chain is the last).
func (t *Trajectory) MultiSample() bool { return len(t.Samples) > 0 }

// SampleCount is the episode's number of samples (1 for a one-chain episode).
func (t *Trajectory) SampleCount() int { return len(t.Samples) + 1 }

// CurrentSample is the trajectory's own chain as a Sample: the last sample of the episode (the slices are shared,
// not copied; Messages is the trajectory's).
func (t *Trajectory) CurrentSample() Sample {
	o := t.Origin
	o.Index = len(t.Samples)
	if o.Reason == "" { // the episode's first sample (sub-agents' samples may be listed before it)
		o.Parent = -1
	}
	return Sample{SampleOrigin: o, TokenIDs: t.TokenIDs, LossMask: t.LossMask, Logprobs: t.Logprobs,
		WeightVersions: t.WeightVersions, Segments: t.Segments, Messages: t.Messages}
}

// AllSamples lists every sample of the episode in order, the trajectory's own chain last (one for a one-chain
// episode). The slices are shared, not copied.
func (t *Trajectory) AllSamples() []Sample {
	out := make([]Sample, 0, len(t.Samples)+1)
	out = append(out, t.Samples...)
	return append(out, t.CurrentSample())
}

// NewSample ends the trajectory's chain and begins a new, empty one for the same episode: the chain so far (its
// trailing prompt that was never sent dropped) becomes Samples[len-1], with messages as its conversation, and the
// new chain's origin records the branch (its parent is the chain just ended). The caller then appends the new
// sample's first prompt (a full render of its conversation: set Origin.PromptMessages) and goes on as usual.
// Status, reward, metrics and provenance stay the episode's.
//
// # Errors
//
// An *InvariantError (nothing is changed) wrapping ErrSequence when the chain has no response yet (a sample with
// nothing the model generated is no sample), or the chain's own error when it is inconsistent.
func (t *Trajectory) NewSample(reason string, messages json.RawMessage) error {
	if err := t.consistent(); err != nil {
		return err
	}
	if t.turns == 0 {
		return invariantErr(ErrSequence, t.turns, len(t.TokenIDs), "a new sample needs the current one to have a response")
	}
	if t.OffPolicyMasked {
		return invariantErr(ErrSequence, t.turns, len(t.TokenIDs), "the trajectory's off-policy tokens are masked: it takes no more samples")
	}
	t.DropPending()
	cur := t.CurrentSample()
	cur.Messages = slices.Clone(messages)
	turns := t.turns
	t.Samples = append(t.Samples, cur)
	t.Origin = SampleOrigin{Index: len(t.Samples), Parent: cur.Index, BranchTurn: turns, BranchOffset: len(cur.TokenIDs),
		Reason: reason, FirstTurn: cur.FirstTurn + turns}
	t.TokenIDs, t.LossMask, t.Logprobs, t.WeightVersions, t.Segments = nil, nil, nil, nil, nil
	t.pending, t.turns = 0, 0
	return nil
}

// MaskResponses marks the current sample's responses as not trained on: loss mask 0 on its response tokens, those
// appended so far and every later one (Origin.Masked; their logprobs are kept). The summarize policy's summary call
// uses it when the agent sets [agent.context] mask_summary. It returns how many tokens it masked, and does nothing
// (0) on a one-chain trajectory, whose JSON has nowhere to say so, or when the chain is inconsistent.
func (t *Trajectory) MaskResponses() int {
	if len(t.Samples) == 0 || t.consistent() != nil {
		return 0
	}
	t.Origin.Masked = true
	masked := 0
	for _, s := range t.Segments {
		if s.Kind != KindResponse {
			continue
		}
		for i := s.Offset; i < s.Offset+s.Length; i++ {
			if t.LossMask[i] != 0 {
				t.LossMask[i] = 0
				masked++
			}
		}
	}
	return masked
}

// validateSamples checks the earlier samples of a multi-sample episode: each is a valid chain that ends in a
// response, and the origins are consistent (indexes in order; first turns that count the responses of the samples
// of the same episode before them; a parent before its child within an episode, a branch inside the parent; a
// sub-agent episode's first sample linked to a later sample one level up, the one whose call ran it; the last
// sample the top-level episode's).
func (t *Trajectory) validateSamples() error {
	if len(t.Samples) == 0 {
		return nil
	}
	all := t.AllSamples()
	turns := map[string]int{} // per episode: the responses of its samples so far
	seen := map[string]bool{} // episodes whose first sample was seen
	chains := make([]*Trajectory, len(all))
	for k := range all {
		chains[k] = all[k].chain()
	}
	for k := range all {
		s := &all[k]
		c := chains[k]
		if k < len(all)-1 {
			if err := c.Validate(); err != nil {
				return fmt.Errorf("sample %d: %w", k, err)
			}
			if n := len(s.Segments); n == 0 || s.Segments[n-1].Kind != KindResponse {
				return invariantErr(ErrSequence, -1, len(s.TokenIDs), "sample %d does not end in a response", k)
			}
		}
		if s.Index != k {
			return invariantErr(ErrSequence, -1, -1, "sample %d has index %d", k, s.Index)
		}
		if (s.Episode == "") != (s.Depth == 0) || s.Depth < 0 {
			return invariantErr(ErrSequence, -1, -1, "sample %d: episode %q at depth %d (a sub-agent's samples name their episode, at depth >= 1)", k, s.Episode, s.Depth)
		}
		if k == len(all)-1 && s.Episode != "" {
			return invariantErr(ErrSequence, -1, -1, "the last sample belongs to sub-agent episode %q, not the top-level episode", s.Episode)
		}
		if s.FirstTurn != turns[s.Episode] {
			return invariantErr(ErrSequence, -1, -1, "sample %d has first_turn %d, the samples of its episode before it have %d responses", k, s.FirstTurn, turns[s.Episode])
		}
		first := !seen[s.Episode]
		seen[s.Episode] = true
		switch {
		case first && s.Episode == "":
			if s.Parent != -1 {
				return invariantErr(ErrSequence, -1, -1, "sample %d has parent %d, want -1 (the episode's first)", k, s.Parent)
			}
		case first:
			if s.Reason != SampleSubAgent {
				return invariantErr(ErrSequence, -1, -1, "sample %d is sub-agent episode %q's first but its reason is %q", k, s.Episode, s.Reason)
			}
			if s.Parent <= k || s.Parent >= len(all) || all[s.Parent].Depth != s.Depth-1 {
				return invariantErr(ErrSequence, -1, -1, "sample %d (sub-agent episode %q) has parent %d, want a later sample one level up", k, s.Episode, s.Parent)
			}
			if s.BranchTurn < 1 {
				return invariantErr(ErrSequence, -1, -1, "sample %d (sub-agent episode %q) branches at turn %d: a call needs a response", k, s.Episode, s.BranchTurn)
			}
		default:
			if s.Reason == SampleSubAgent {
				return invariantErr(ErrSequence, -1, -1, "sample %d has reason %q but is not its episode's first", k, s.Reason)
			}
			if s.Parent < 0 || s.Parent >= k || all[s.Parent].Episode != s.Episode {
				return invariantErr(ErrSequence, -1, -1, "sample %d has parent %d, want one of the samples of its episode before it", k, s.Parent)
			}
		}
		if s.Parent >= 0 {
			p := chains[s.Parent]
			if s.BranchOffset < 0 || s.BranchOffset > len(p.TokenIDs) || s.BranchTurn < 0 || s.BranchTurn > p.turns {
				return invariantErr(ErrSequence, -1, -1, "sample %d branches at token %d, turn %d: outside its parent (%d tokens, %d turns)",
					k, s.BranchOffset, s.BranchTurn, len(p.TokenIDs), p.turns)
			}
		}
		turns[s.Episode] += c.turns
	}
	return nil
}

// sampleJSON decodes one entry of "samples".
type sampleJSON Sample

// decodeSamples splits a decoded "samples" list into the earlier samples and the origin of the trajectory's own
// chain, which the list's last entry repeats.
func (t *Trajectory) decodeSamples(raw json.RawMessage) error {
	var all []sampleJSON
	if err := json.Unmarshal(raw, &all); err != nil {
		return fmt.Errorf("tito: trajectory samples: %w", err)
	}
	if len(all) == 0 {
		return nil
	}
	if len(all) == 1 {
		return errors.New("tito: trajectory samples: one sample is written as a one-chain trajectory, without \"samples\"")
	}
	last := all[len(all)-1]
	if !slices.Equal(last.TokenIDs, t.TokenIDs) || !slices.Equal(last.LossMask, t.LossMask) || len(last.Segments) != len(t.Segments) {
		return errors.New("tito: trajectory samples: the last sample is not the trajectory's own chain (token_ids, loss_mask, segments)")
	}
	t.Samples = make([]Sample, len(all)-1)
	for i := range t.Samples {
		t.Samples[i] = Sample(all[i])
	}
	t.Origin = last.SampleOrigin
	return nil
}

// DiscardEmptySample ends a multi-sample episode on its previous sample when the current one has no response (the
// episode ended between a compaction and the new sample's first reply): that sample becomes the trajectory's own
// chain again, and its messages are returned (the caller's conversation was the discarded sample's). It returns
// nil and changes nothing when the current sample has a response or is the only one.
func (t *Trajectory) DiscardEmptySample() json.RawMessage {
	if t.turns > 0 || len(t.Samples) == 0 {
		return nil
	}
	s := t.Samples[len(t.Samples)-1]
	t.Samples = t.Samples[:len(t.Samples)-1]
	t.TokenIDs, t.LossMask, t.Logprobs, t.WeightVersions, t.Segments = s.TokenIDs, s.LossMask, s.Logprobs, s.WeightVersions, s.Segments
	t.Origin = s.SampleOrigin
	t.restoreState()
	return s.Messages
}
