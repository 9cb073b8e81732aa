package stream

import "errors"

var (
	// ErrClosed is returned once the server (and its spool) has been closed.
	ErrClosed = errors.New("stream: closed")
	// ErrInvalidTrajectory is returned by Emitter.Finish when the trajectory is not a JSON object.
	ErrInvalidTrajectory = errors.New("stream: trajectory is not a JSON object")
	// ErrInterrupted is returned by Emitter.Finish once the server is shutting down past its grace period: the
	// trajectory is not spooled, and its sample runs again when the server restarts (its request is journaled).
	ErrInterrupted = errors.New("stream: interrupted by shutdown; the sample runs again after a restart")
	// ErrDuplicate is returned by Server.Emit when the consumer's spool already holds a trajectory with the id:
	// the new one is not stored (a request's replayed samples are deduplicated silently instead: they are the
	// same trajectory).
	ErrDuplicate = errors.New("stream: a trajectory with this id is already spooled")
)
