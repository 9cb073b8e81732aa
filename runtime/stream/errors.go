package stream

import "errors"

var (
	// ErrClosed is returned once the server (and its spool) has been closed.
	ErrClosed = errors.New("stream: closed")
	// ErrInvalidTrajectory is returned by Emitter.Finish when the trajectory is not a JSON object.
	ErrInvalidTrajectory = errors.New("stream: trajectory is not a JSON object")
)
