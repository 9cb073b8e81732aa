package tito

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// SegmentKind says whether a segment's tokens were given to the model (prompt) or sampled by it (response).
type SegmentKind string

// The two segment kinds. Prompt tokens carry loss_mask 0, response tokens loss_mask 1.
const (
	KindPrompt   SegmentKind = "prompt"
	KindResponse SegmentKind = "response"
)

// Segment is a run of tokens of one kind: TokenIDs[Offset : Offset+Length].
type Segment struct {
	Kind   SegmentKind `json:"kind"`
	Offset int         `json:"offset"`
	Length int         `json:"length"`
	// Turn is the model call the segment belongs to (0-based): the prompt sent in call n and the response it
	// returned both have Turn n.
	Turn int `json:"turn"`
	// Info is the provenance of the call that produced a response segment; nil on prompt segments.
	Info *TurnInfo `json:"info,omitempty"`
	// Drift is the drift audit of a response segment (see Trajectory.Audit); nil until audited.
	Drift *SegmentDrift `json:"drift,omitempty"`
}

// TurnInfo is the provenance of one /generate call (DESIGN.md invariant 6).
type TurnInfo struct {
	Server        string  `json:"server,omitempty"`         // the worker that served the call
	RID           string  `json:"rid,omitempty"`            // SGLang's meta_info.id
	WeightVersion string  `json:"weight_version,omitempty"` // meta_info.weight_version
	PromptTokens  int     `json:"prompt_tokens"`            // meta_info.prompt_tokens
	CachedTokens  int     `json:"cached_tokens"`            // meta_info.cached_tokens (radix-cache hits)
	FinishReason  string  `json:"finish_reason,omitempty"`  // meta_info.finish_reason.type: stop, length, abort
	LatencyMS     float64 `json:"latency_ms"`               // wall time of the call as the client saw it
	// OverheadMS is the runtime's own wall time for this turn: from the previous response (the episode's
	// start for the first call) to this request, minus time spent in tools and paused for weight updates,
	// plus encoding this request and decoding its response. Everything but waiting on SGLang and tools.
	OverheadMS float64 `json:"overhead_ms"`
}

// Response is what one /generate call returned, with what was sent, for Trajectory.AppendResponse.
type Response struct {
	// InputIDs are exactly the input_ids that were sent.
	InputIDs []int32
	// LogprobStartLen is the logprob_start_len that was sent.
	LogprobStartLen int
	// InputLogprobs are meta_info.input_token_logprobs[i][0]: one per position LogprobStartLen..len(InputIDs)-1,
	// the first one null (SGLang never scores the first position of the window).
	InputLogprobs []*float64
	// OutputIDs are SGLang's output_ids, the stop token included; OutputLogprobs are
	// meta_info.output_token_logprobs[i][0], one per output id.
	OutputIDs      []int32
	OutputLogprobs []float64
	// Turn is the call's provenance.
	Turn TurnInfo
}

// Trajectory is one episode's token-exact record: flat, aligned token ids, loss mask and logprobs, the
// segments that tile them, and what made them. The agent loop builds it with AppendPrompt, NextRequest and
// AppendResponse, which check every invariant of DESIGN.md and return an *InvariantError rather than repair
// anything; on error the trajectory is unchanged.
//
// Logprobs[i] is the model's logprob of TokenIDs[i] given TokenIDs[:i]. It is NaN (null in JSON) for token 0,
// which has no predecessor, and for prompt tokens appended since the last response (pending until the next
// response brings their input logprobs); every other entry is a real value.
//
// A Trajectory is not safe for concurrent use; one episode owns it. The exported fields may be read freely;
// modify the token arrays and segments only through the methods (Validate re-checks everything).
type Trajectory struct {
	ID           string          `json:"id"`
	ItemID       string          `json:"item_id,omitempty"`
	GroupID      string          `json:"group_id,omitempty"`
	SampleIndex  int             `json:"sample_index"`
	Status       string          `json:"status"`                  // completed, truncated, aborted, failed ("" while running)
	StatusReason string          `json:"status_reason,omitempty"` // why it ended (length, context_window, ...)
	Error        string          `json:"error,omitempty"`         // what failed, for failed and aborted trajectories
	TokenIDs     []int32         `json:"token_ids"`
	LossMask     Mask            `json:"loss_mask"`
	Logprobs     Logprobs        `json:"logprobs"`
	Segments     []Segment       `json:"segments"`
	Messages     json.RawMessage `json:"messages"` // the conversation, as the chat template saw it
	Reward       *float64        `json:"reward"`
	Label        json.RawMessage `json:"label,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	// Provenance records what made the trajectory: ProvTokenizerSHA256, ProvTemplateSHA256, ProvPlugins
	// (name -> sha256), ProvSamplingParams, and anything else the runtime adds.
	Provenance map[string]any     `json:"provenance"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Warnings   []string           `json:"warnings,omitempty"`
	// Drift summarises the drift audit (nil until Audit runs).
	Drift *DriftSummary `json:"drift,omitempty"`

	pending int // index of the first token whose logprob is pending (== len(TokenIDs) when none)
	turns   int // responses appended so far
}

// Conventional provenance keys.
const (
	ProvTokenizerSHA256 = "tokenizer_sha256"
	ProvTemplateSHA256  = "template_sha256"
	ProvPlugins         = "plugins"         // map plugin name -> sha256
	ProvSamplingParams  = "sampling_params" // the sampling params sent to SGLang
	ProvModel           = "model"           // the model folder or name
)

// NewTrajectory returns an empty trajectory.
func NewTrajectory() *Trajectory {
	return &Trajectory{Provenance: map[string]any{}}
}

// Len returns the number of tokens.
func (t *Trajectory) Len() int { return len(t.TokenIDs) }

// Turns returns the number of responses appended so far.
func (t *Trajectory) Turns() int { return t.turns }

// PendingPrompt returns how many prompt tokens at the end still wait for their logprobs (appended since the
// last response).
func (t *Trajectory) PendingPrompt() int { return len(t.TokenIDs) - t.pending }

// AppendPrompt appends prompt tokens (loss mask 0): the first prompt, or a template delta after a response.
// Their logprobs stay pending until the next AppendResponse. Appending to a trajectory that already ends in
// a prompt extends that prompt segment. Appending nothing is a no-op.
//
// # Errors
//
// An *InvariantError (the trajectory is left unchanged) wrapping ErrSequence when an id is negative, or
// ErrAlignment when the trajectory's exported fields were made inconsistent by hand.
func (t *Trajectory) AppendPrompt(ids []int32) error {
	if len(ids) == 0 {
		return nil
	}
	for i, id := range ids {
		if id < 0 {
			return invariantErr(ErrSequence, t.turns, len(t.TokenIDs)+i, "prompt token id %d is negative", id)
		}
	}
	if err := t.consistent(); err != nil {
		return err
	}
	if t.Provenance == nil {
		t.Provenance = map[string]any{}
	}
	n := len(t.TokenIDs)
	if k := len(t.Segments); k > 0 && t.Segments[k-1].Kind == KindPrompt {
		t.Segments[k-1].Length += len(ids)
	} else {
		t.Segments = append(t.Segments, Segment{Kind: KindPrompt, Offset: n, Length: len(ids), Turn: t.turns})
	}
	t.TokenIDs = append(t.TokenIDs, ids...)
	t.LossMask = slices.Grow(t.LossMask, len(ids))[:n+len(ids)]
	clear(t.LossMask[n:])
	t.Logprobs = slices.Grow(t.Logprobs, len(ids))[:n+len(ids)]
	nan := math.NaN()
	for i := n; i < len(t.Logprobs); i++ {
		t.Logprobs[i] = nan
	}
	return nil
}

// consistent is the cheap check that the append methods run first, so that a trajectory whose exported
// fields were changed by hand (or read from bad JSON) gets an error rather than a panic.
func (t *Trajectory) consistent() error {
	n := len(t.TokenIDs)
	if len(t.LossMask) != n || len(t.Logprobs) != n || t.pending < 0 || t.pending > n {
		return invariantErr(ErrAlignment, t.turns, -1, "the trajectory is inconsistent (len(token_ids) %d, len(loss_mask) %d, len(logprobs) %d): run Validate",
			n, len(t.LossMask), len(t.Logprobs))
	}
	if k := len(t.Segments); k > 0 {
		if last := t.Segments[k-1]; last.Offset < 0 || last.Length < 0 || last.Offset+last.Length != n {
			return invariantErr(ErrAlignment, t.turns, -1, "the last segment (offset %d, length %d) does not end at the trajectory's end (%d): run Validate", last.Offset, last.Length, n)
		}
	} else if n > 0 {
		return invariantErr(ErrAlignment, t.turns, -1, "%d tokens and no segments: run Validate", n)
	}
	return nil
}

// NextRequest returns what the next /generate call must send: input_ids (the whole trajectory; the slice
// shares memory with TokenIDs, must not be modified, and stays valid until DropPending) and logprob_start_len: 0 on the first call, else one
// before the pending prompt tokens, so that SGLang scores each of them while the cached prefix is reused.
func (t *Trajectory) NextRequest() (inputIDs []int32, logprobStartLen int) {
	n := len(t.TokenIDs)
	if t.turns == 0 {
		return t.TokenIDs[:n:n], 0
	}
	return t.TokenIDs[:n:n], max(t.pending-1, 0)
}

// AppendResponse checks a /generate call against the trajectory and appends its output verbatim as a
// response segment (loss mask 1), filling the pending prompt tokens' logprobs from InputLogprobs.
//
// # Errors
//
// An *InvariantError (the trajectory is left unchanged), wrapping:
//   - ErrAlignment: the trajectory's exported fields were made inconsistent by hand (see Validate);
//   - ErrSequence: the trajectory is empty or already ends in a response, the output is empty, or an output
//     id is negative;
//   - ErrPrefix: InputIDs differ from the trajectory (the error gives the first differing index);
//   - ErrLogprobs: LogprobStartLen is not what NextRequest returns, len(InputLogprobs) is not
//     len(InputIDs) - LogprobStartLen, the first input logprob is not null or a later one is null or not
//     finite, or len(OutputLogprobs) != len(OutputIDs), or an output logprob is not finite.
func (t *Trajectory) AppendResponse(r Response) error {
	turn := t.turns
	n := len(t.TokenIDs)
	if err := t.consistent(); err != nil {
		return err
	}
	if n == 0 {
		return invariantErr(ErrSequence, turn, -1, "a response needs a prompt before it (the trajectory is empty)")
	}
	if t.Segments[len(t.Segments)-1].Kind != KindPrompt {
		return invariantErr(ErrSequence, turn, n, "a response must follow a prompt, and the trajectory already ends in a response")
	}
	if len(r.OutputIDs) == 0 {
		return invariantErr(ErrSequence, turn, n, "empty response (no output ids)")
	}
	if i := idsFirstDiff(r.InputIDs, t.TokenIDs); i >= 0 {
		return invariantErr(ErrPrefix, turn, i, "input_ids (%d tokens) are not the trajectory (%d tokens): they differ first at index %d (sent %s, trajectory has %s)",
			len(r.InputIDs), n, i, idAt(r.InputIDs, i), idAt(t.TokenIDs, i))
	}
	_, wantStart := t.NextRequest()
	if r.LogprobStartLen != wantStart {
		return invariantErr(ErrLogprobs, turn, -1, "logprob_start_len is %d, want %d (one before the %d pending prompt tokens)",
			r.LogprobStartLen, wantStart, t.PendingPrompt())
	}
	if want := n - r.LogprobStartLen; len(r.InputLogprobs) != want {
		return invariantErr(ErrLogprobs, turn, -1, "%d input logprobs, want %d (len(input_ids) %d - logprob_start_len %d)",
			len(r.InputLogprobs), want, n, r.LogprobStartLen)
	}
	if r.InputLogprobs[0] != nil {
		return invariantErr(ErrLogprobs, turn, r.LogprobStartLen, "the first input logprob is %v, want null (SGLang never scores the window's first position)", *r.InputLogprobs[0])
	}
	for i, lp := range r.InputLogprobs[1:] {
		pos := r.LogprobStartLen + 1 + i
		if lp == nil {
			return invariantErr(ErrLogprobs, turn, pos, "input logprob %d (token index %d) is null", i+1, pos)
		}
		if !finite(*lp) {
			return invariantErr(ErrLogprobs, turn, pos, "input logprob %d (token index %d) is %v", i+1, pos, *lp)
		}
	}
	if len(r.OutputLogprobs) != len(r.OutputIDs) {
		return invariantErr(ErrLogprobs, turn, n, "%d output logprobs for %d output ids", len(r.OutputLogprobs), len(r.OutputIDs))
	}
	for i, lp := range r.OutputLogprobs {
		if !finite(lp) {
			return invariantErr(ErrLogprobs, turn, n+i, "output logprob %d is %v", i, lp)
		}
	}
	for i, id := range r.OutputIDs {
		if id < 0 {
			return invariantErr(ErrSequence, turn, n+i, "output id %d is negative", id)
		}
	}

	for i := t.pending; i < n; i++ {
		if i > 0 { // token 0 never has a logprob
			t.Logprobs[i] = *r.InputLogprobs[i-r.LogprobStartLen]
		}
	}
	info := r.Turn
	t.Segments = append(t.Segments, Segment{Kind: KindResponse, Offset: n, Length: len(r.OutputIDs), Turn: turn, Info: &info})
	t.TokenIDs = append(t.TokenIDs, r.OutputIDs...)
	t.LossMask = slices.Grow(t.LossMask, len(r.OutputIDs))[:len(t.TokenIDs)]
	for i := n; i < len(t.LossMask); i++ {
		t.LossMask[i] = 1
	}
	t.Logprobs = append(t.Logprobs, r.OutputLogprobs...)
	t.pending = len(t.TokenIDs)
	t.turns++
	return nil
}

// DropPending removes the prompt tokens appended since the last response (never sent to the model), for
// an episode that ends before its next call, and returns how many were removed.
func (t *Trajectory) DropPending() int {
	n := len(t.TokenIDs) - t.pending
	if n == 0 || t.consistent() != nil {
		return 0
	}
	t.TokenIDs = t.TokenIDs[:t.pending]
	t.LossMask = t.LossMask[:t.pending]
	t.Logprobs = t.Logprobs[:t.pending]
	last := &t.Segments[len(t.Segments)-1]
	last.Length -= n
	if last.Length == 0 {
		t.Segments = t.Segments[:len(t.Segments)-1]
	}
	return n
}

func idsFirstDiff(a, b []int32) int {
	if len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b)) {
		return -1
	}
	m := min(len(a), len(b))
	for i := range m {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return m
	}
	return -1
}

func idAt(ids []int32, i int) string {
	if i < len(ids) {
		return fmt.Sprint(ids[i])
	}
	return "nothing"
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Validate checks every invariant of the whole trajectory: equal array lengths; segments that tile the
// tokens, start with a prompt, alternate, and number their turns 0, 1, ...; loss mask 0 on prompt tokens and
// 1 on response tokens; response segments with their TurnInfo; logprobs finite everywhere except token 0
// (which must be null) and a trailing prompt segment that was never sent (whose logprobs are all null).
//
// # Errors
//
// An *InvariantError wrapping ErrAlignment, ErrSequence or ErrLogprobs, with Turn -1.
func (t *Trajectory) Validate() error {
	n := len(t.TokenIDs)
	if len(t.LossMask) != n || len(t.Logprobs) != n {
		return invariantErr(ErrAlignment, -1, -1, "len(token_ids) %d, len(loss_mask) %d, len(logprobs) %d", n, len(t.LossMask), len(t.Logprobs))
	}
	off, turn := 0, 0
	for k, s := range t.Segments {
		if s.Offset != off || s.Length <= 0 {
			return invariantErr(ErrAlignment, -1, off, "segment %d has offset %d and length %d, want offset %d and length > 0", k, s.Offset, s.Length, off)
		}
		want := KindPrompt
		if k%2 == 1 {
			want = KindResponse
		}
		if s.Kind != want {
			return invariantErr(ErrSequence, -1, off, "segment %d is %q, want %q (segments alternate, starting with a prompt)", k, s.Kind, want)
		}
		if s.Turn != turn {
			return invariantErr(ErrSequence, -1, off, "segment %d has turn %d, want %d", k, s.Turn, turn)
		}
		mask := uint8(0)
		if s.Kind == KindResponse {
			mask = 1
			turn++
			if s.Info == nil {
				return invariantErr(ErrSequence, -1, off, "response segment %d has no turn info", k)
			}
		}
		if s.Offset+s.Length > n {
			return invariantErr(ErrAlignment, -1, off, "segment %d ends at %d, past the %d tokens", k, s.Offset+s.Length, n)
		}
		for i := s.Offset; i < s.Offset+s.Length; i++ {
			if t.LossMask[i] != mask {
				return invariantErr(ErrAlignment, -1, i, "loss_mask is %d on a %s token, want %d", t.LossMask[i], s.Kind, mask)
			}
		}
		off += s.Length
	}
	if off != n {
		return invariantErr(ErrAlignment, -1, off, "segments cover %d of %d tokens", off, n)
	}
	for i, id := range t.TokenIDs {
		if id < 0 {
			return invariantErr(ErrSequence, -1, i, "token id %d is negative", id)
		}
	}
	end := n // logprobs of [end, n) may be null: a trailing prompt that was never sent
	if k := len(t.Segments); k > 0 && t.Segments[k-1].Kind == KindPrompt && math.IsNaN(t.Logprobs[n-1]) {
		end = t.Segments[k-1].Offset
	}
	if n > 0 && !math.IsNaN(t.Logprobs[0]) {
		return invariantErr(ErrLogprobs, -1, 0, "token 0 has logprob %v, want null", t.Logprobs[0])
	}
	for i := 1; i < n; i++ {
		lp := t.Logprobs[i]
		if i >= end {
			if !math.IsNaN(lp) {
				return invariantErr(ErrLogprobs, -1, i, "a token of the unsent trailing prompt has logprob %v, want null", lp)
			}
			continue
		}
		if !finite(lp) {
			return invariantErr(ErrLogprobs, -1, i, "logprob is %v (only token 0 and an unsent trailing prompt may be null)", lp)
		}
	}
	return nil
}

// SetMetric records a named number (parse error counts, tool outcomes, reward components, ...).
func (t *Trajectory) SetMetric(name string, v float64) {
	if t.Metrics == nil {
		t.Metrics = map[string]float64{}
	}
	t.Metrics[name] = v
}

// SetProvenance records one provenance entry (see the Prov* keys).
func (t *Trajectory) SetProvenance(key string, v any) {
	if t.Provenance == nil {
		t.Provenance = map[string]any{}
	}
	t.Provenance[key] = v
}

// PromptLength returns the length of the initial prompt segment (0 for an empty trajectory).
func (t *Trajectory) PromptLength() int {
	if len(t.Segments) == 0 {
		return 0
	}
	return t.Segments[0].Length
}

// SlimeSample is a trajectory in the shape of slime's Sample (slime/utils/types.py): the response part is
// everything after the initial prompt, up to the end of the last response.
type SlimeSample struct {
	Tokens          []int32  `json:"tokens"`
	ResponseLength  int      `json:"response_length"`
	LossMask        Mask     `json:"loss_mask"`         // over the response part: 1 on model tokens, 0 on tool/template tokens
	RolloutLogProbs Logprobs `json:"rollout_log_probs"` // over the response part, all real values
	Reward          *float64 `json:"reward"`
	Status          string   `json:"status"`
}

// SlimeSample exports the trajectory for slime. A trailing prompt that was never sent is left out, so every
// rollout_log_probs entry is a real logprob. The slices are copies. Call Validate first on a trajectory that
// was not built by the append methods: SlimeSample does not check it (it only never panics).
func (t *Trajectory) SlimeSample() SlimeSample {
	n := min(len(t.TokenIDs), len(t.LossMask), len(t.Logprobs)) // equal unless the trajectory is invalid
	end := n
	if k := len(t.Segments); k > 1 && t.Segments[k-1].Kind == KindPrompt {
		end = min(max(t.Segments[k-1].Offset, 0), n)
	}
	start := min(max(t.PromptLength(), 0), end)
	return SlimeSample{
		Tokens:          slices.Clone(t.TokenIDs[:end]),
		ResponseLength:  end - start,
		LossMask:        slices.Clone(t.LossMask[start:end]),
		RolloutLogProbs: slices.Clone(t.Logprobs[start:end]),
		Reward:          t.Reward,
		Status:          t.Status,
	}
}
