package tito

import (
	"errors"
	"fmt"
)

// Sentinel errors of the tokenizer, model folder and trajectory. Match them with errors.Is; the errors returned
// carry more context (file, turn, index) around them.
var (
	// ErrModelFile reports a missing, unreadable or corrupt file of a model folder. The error names the file.
	ErrModelFile = errors.New("tito: bad model file")

	// ErrPrefix reports a request whose input ids are not exactly the trajectory so far (docs/design.md invariant 1).
	ErrPrefix = errors.New("tito: prefix invariant violated")
	// ErrLogprobs reports logprobs that do not line up with their tokens (docs/design.md invariant 3): an output
	// logprob count that differs from the output id count, input logprobs that do not cover exactly the pending
	// prompt tokens, a non-null first input logprob, or a null where a value is needed.
	ErrLogprobs = errors.New("tito: logprob alignment violated")
	// ErrAlignment reports flat arrays of different lengths, segments that do not tile the trajectory, or a
	// loss mask that is not 1 exactly on response tokens.
	ErrAlignment = errors.New("tito: trajectory arrays misaligned")
	// ErrSequence reports a call out of order: a response with no prompt before it, an empty segment, or a
	// prompt appended to a trajectory that is already finished.
	ErrSequence = errors.New("tito: segment sequence violated")
)

// InvariantError is what the trajectory returns when an append or a validation finds a violated invariant. It
// names the invariant (one of the sentinels above, matched by errors.Is), the turn, and the first offending
// index into the flat arrays where there is one (-1 otherwise).
type InvariantError struct {
	Kind   error  // ErrPrefix, ErrLogprobs, ErrAlignment or ErrSequence
	Turn   int    // the turn being appended (0-based), or -1 for a whole-trajectory check
	Index  int    // first offending index into the flat arrays or the offending input, or -1
	Detail string // what was wrong, in words
}

// Error implements error.
func (e *InvariantError) Error() string {
	s := e.Kind.Error()
	if e.Turn >= 0 {
		s += fmt.Sprintf(" at turn %d", e.Turn)
	}
	if e.Index >= 0 {
		s += fmt.Sprintf(", index %d", e.Index)
	}
	return s + ": " + e.Detail
}

// Unwrap returns the sentinel, so that errors.Is(err, ErrPrefix) works.
func (e *InvariantError) Unwrap() error { return e.Kind }

func invariantErr(kind error, turn, index int, format string, args ...any) *InvariantError {
	return &InvariantError{Kind: kind, Turn: turn, Index: index, Detail: fmt.Sprintf(format, args...)}
}
