package stream

import (
	"context"
	"encoding/json"
)

// Runner runs rollout requests; the runtime's episode scheduler implements it and the server drives it.
// Its methods are called from many goroutines at once.
type Runner interface {
	// Validate checks a request before it is accepted (unknown agent, bad sampling overrides, ...). A non-nil
	// error rejects the request with the error's text as the reason.
	Validate(req RolloutRequest) error
	// Run runs every pending sample of req (len(Items) x N episodes, less req.Finished) and hands each finished trajectory to out.Finish,
	// which returns once the trajectory is in the spool. Run returns when every episode has finished; ctx is
	// cancelled when the consumer cancels the request or the server shuts down past its grace period, and the
	// runner should then abort its episodes (aborted trajectories may still be handed to out.Finish).
	// A non-nil error marks the request failed in its request_done message.
	Run(ctx context.Context, req RolloutRequest, out Emitter) error
	// Pause stops new turns from starting; mode is one of PauseAbort, PauseRetract, PauseInPlace.
	Pause(ctx context.Context, mode string) error
	// Resume lets turns start again after Pause.
	Resume(ctx context.Context) error
	// UpdateWeights asks the model servers to load new weights.
	UpdateWeights(ctx context.Context, req UpdateWeightsRequest) error
}

// Emitter receives a request's results. It is safe for concurrent use by the episodes of one request.
type Emitter interface {
	// Finish writes a finished trajectory to the spool (fsynced when the spool is configured so) and offers it
	// to the request's consumer. It blocks while the spool is full (back-pressure); it never drops.
	//
	// # Errors
	//
	// ctx's error if ctx ends while the spool is full; ErrClosed once the server has closed its spool;
	// ErrInvalidTrajectory if f.Trajectory is not a JSON object; ErrInterrupted once a shutdown has
	// interrupted the request (nothing is spooled: the sample runs again after a restart).
	Finish(ctx context.Context, f Finished) error
	// Turn offers a per-turn event to the consumer if it subscribed (Submit.Events) and is connected. It never
	// blocks: events are best effort and dropped (and counted) when the consumer's queue is full.
	Turn(ev TurnEvent)
}

// RolloutRequest is a validated submit message.
type RolloutRequest struct {
	ID       string
	Consumer string
	Agent    string
	Items    []Item
	Sampling json.RawMessage
	// Events: the consumer subscribed to the request's per-turn events (Submit.Events); a runner need not make
	// any otherwise.
	Events bool
	// Finished holds the samples that finished before the server restarted (their trajectories are spooled
	// or already acked); Run must not run them again. Empty for a request that was just submitted.
	Finished map[SampleRef]bool
}

// SampleRef names one sample of a request: the Index-th sample of item ItemID.
type SampleRef struct {
	ItemID string
	Index  int
}

// Pending reports whether sample index of item itemID still has to run.
func (r RolloutRequest) Pending(itemID string, index int) bool {
	return !r.Finished[SampleRef{ItemID: itemID, Index: index}]
}

// Samples returns the number of episodes the request asks for.
func (r RolloutRequest) Samples() int {
	n := 0
	for _, it := range r.Items {
		n += it.N
	}
	return n
}

// Finished is one finished episode. The stream treats Trajectory as opaque JSON (an object) and never re-encodes it.
type Finished struct {
	ItemID      string
	SampleIndex int
	// GroupID groups the samples of one item (GRPO groups); empty means RequestID + "/" + ItemID.
	GroupID string
	// TrajectoryID identifies the trajectory for idempotent redelivery; empty means
	// RequestID + "/" + ItemID + "/" + SampleIndex, which stays the same when a request is run again.
	TrajectoryID string
	Trajectory   json.RawMessage
}

// TurnEvent is one per-turn progress event; Data is a JSON value chosen by the runner.
type TurnEvent struct {
	ItemID      string
	SampleIndex int
	Turn        int
	Data        json.RawMessage
}

// UpdateWeightsRequest is an update_weights control message.
type UpdateWeightsRequest struct {
	ModelPath     string
	WeightVersion string
	// Options holds the rest of SGLang's /update_weights_from_disk body (load_format, abort_all_requests, ...).
	Options json.RawMessage
}
