// Package bus is agentrt's scale-out store on NATS JetStream: accepted requests, one durable work item per
// sample, and finished trajectories, shared by every node (docs/scale-out.md).
//
// Open starts the store as runtime.toml's [bus] table says (Config): embedded (a JetStream server inside the
// process, a file store under the spool dir, no listener), cluster (the embedded server with routes to its
// peers, streams replicated) or external (a NATS server elsewhere). The entry type is Bus:
//
//   - Submit accepts a request idempotently: its record in the request bucket, then one work item per sample
//     with a Nats-Msg-Id, so neither a repeated submit nor a re-published fan-out makes a second sample.
//   - Serve runs a Node: it pulls as many samples as it has free slots (pulling is the back-pressure), renews
//     each claim while the run goes on (in-progress acks), aborts runs whose connection was down longer than a
//     claim lasts, stores each result and acks the work item. A sample whose node died is claimed again by
//     another node under the same trajectory id; after max_deliver claims it becomes a failed result.
//   - Results are stored one per trajectory id (a subject that takes one message), so a node that finishes
//     late stores nothing; the request's done marker follows its last result. Outbox reads a trainer
//     consumer's results in order, each until it is acked, from any node.
//
// It is the only importer of nats-server and nats.go. Bus is safe for concurrent use. Read Example first.
package bus
