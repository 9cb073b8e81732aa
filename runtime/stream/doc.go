// Package stream is the trajectory stream: the WebSocket endpoint through which trainers (consumers) submit
// rollout requests and receive finished trajectories, and the on-disk spool that makes delivery lossless.
//
// The entry type is Server, an http.Handler built by New from a Config and a Runner (the runtime's episode
// scheduler, declared here by the consumer side). Every finished trajectory is written to the spool (a bbolt
// database, fsynced per group commit) before it is offered, and deleted only when its consumer acks it; a
// consumer that reconnects with its id gets everything unacked again, and a server restarted on the same spool
// directory replays it. Credits bound what is in flight on a connection, a bounded queue bounds each
// connection's control frames, and a full spool makes Emitter.Finish block, so a slow consumer cannot grow the
// server's memory. The wire protocol is docs/PROTOCOL.md.
//
// NewOnStore builds the same endpoint over a Store instead of the spool (`agentrt serve` uses the bus,
// docs/scale-out.md): submits, cancels, request lists and each consumer's messages come from the store, whose
// own workers run the samples.
//
// The package does not run episodes, know the trajectory schema (trajectories are opaque JSON objects), or
// serve HTTP routes other than the one WebSocket endpoint. It is the only importer of gorilla/websocket.
// Server is safe for concurrent use. Read Example first.
package stream
