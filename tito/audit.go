package tito

import "slices"

// Codec is what the drift audit needs of a tokenizer; *Tokenizer implements it.
type Codec interface {
	Encode(text string, addSpecialTokens bool) []int32
	Decode(ids []int32, skipSpecialTokens bool) string
}

// SegmentDrift is the drift audit of one response segment: whether decoding its ids (special tokens kept)
// and encoding the text again (no special tokens added) gives back the same ids. A segment that does not is
// one a re-tokenizing trainer would get wrong; the trajectory keeps the sampled ids regardless.
type SegmentDrift struct {
	Canonical bool `json:"canonical"`
	// ReencodedLength is the number of ids the re-encoding produced.
	ReencodedLength int `json:"reencoded_length"`
	// FirstDiff is the first index (within the segment) where the re-encoding differs, or -1.
	FirstDiff int `json:"first_diff"`
}

// DriftSummary counts the audited response segments and those that were not canonical.
type DriftSummary struct {
	Audited       int `json:"audited"`
	Drifted       int `json:"drifted"`
	DriftedTokens int `json:"drifted_tokens"` // tokens in the drifted segments
}

// Audit runs the drift audit over every response segment of every sample (a multi-sample episode's earlier
// samples and its own chain), records the result in each segment and in t.Drift (the summary of all samples), and
// returns the summary. It never changes a token. A nil codec does nothing. Running Audit again re-audits every
// segment.
func (t *Trajectory) Audit(c Codec) DriftSummary {
	if c == nil {
		if t.Drift != nil {
			return *t.Drift
		}
		return DriftSummary{}
	}
	var sum DriftSummary
	for i := range t.Samples {
		auditSegments(c, t.Samples[i].TokenIDs, t.Samples[i].Segments, &sum)
	}
	auditSegments(c, t.TokenIDs, t.Segments, &sum)
	t.Drift = &sum
	return sum
}

// auditSegments audits the response segments of one chain (ids and its segments), adding to sum.
func auditSegments(c Codec, ids []int32, segs []Segment, sum *DriftSummary) {
	for k := range segs {
		s := &segs[k]
		if s.Kind != KindResponse || s.Offset < 0 || s.Length < 0 || s.Offset+s.Length > len(ids) {
			continue
		}
		out := ids[s.Offset : s.Offset+s.Length]
		re := c.Encode(c.Decode(out, false), false)
		d := &SegmentDrift{Canonical: slices.Equal(out, re), ReencodedLength: len(re), FirstDiff: -1}
		if !d.Canonical {
			d.FirstDiff = idsFirstDiff(out, re)
			sum.Drifted++
			sum.DriftedTokens += len(out)
		}
		s.Drift = d
		sum.Audited++
	}
}

// DriftCount returns how many response segments the last Audit found not canonical (0 if never audited).
func (t *Trajectory) DriftCount() int {
	if t.Drift == nil {
		return 0
	}
	return t.Drift.Drifted
}
