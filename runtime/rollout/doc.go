// Package rollout runs the loop's agents for rollout requests: Service implements stream.Runner for `agentrt
// serve` (fair slots shared between consumers, the pause gate and weight updates, per-turn events, a warning when
// weight_version never changes), and RunBatch is `agentrt run`'s batch mode over items read with ReadItems, written
// durably by Writer (ReadFinished and DropTrajectories let a re-run complete the file). An Observer
// (runtime/metrics) sees queued and finished episodes. BusSamples and Service.RunSample bind the service to the
// scale-out bus (runtime/bus): a request's work items, and a node's runner for one of them. It is safe for
// concurrent use.
package rollout
