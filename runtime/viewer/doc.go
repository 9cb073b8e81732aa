// Package viewer is the trajectory viewer: a web page, embedded in the binary, where a person sees what the model
// saw and did in an episode. Each token is coloured by its loss mask and logprob (hovering shows its id, text and
// logprob); the page shows the segments with each turn's provenance (worker, latency, cached tokens, weight
// version), the tool calls and their results, the reward and status, a group's samples side by side, filters by
// status, reward and agent, and new trajectories as they finish.
//
// The entry type is Handler, an http.Handler over a Source: a Ring of recent trajectories that `agentrt serve`'s
// rollout service feeds (Ring.Add never blocks and never fails), or a File of JSON lines that `agentrt view`
// opens and follows as it grows. Token texts are decoded on the server with the model's own tokenizer; the page
// never tokenizes anything.
//
// The viewer only reads: it cannot submit, cancel or ack anything, and what it shows is what a trainer of the
// same server receives (prompts, completions, tool results, labels, metadata, provenance). With a token set it
// asks for the same bearer token as the trajectory stream; without one it answers only requests addressed to a
// loopback host. The package does not know the stream, SGLang or the plugin host. Its types are safe for
// concurrent use. Read Example first.
package viewer
