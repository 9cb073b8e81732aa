// Package tito makes trajectories token-exact ("token in, token out"): it loads a Hugging Face model folder
// (tokenizer and chat template), renders chat templates (in full for the first prompt, as deltas afterwards),
// and keeps the trajectory: token ids, loss mask and logprobs in aligned, append-only arrays whose invariants
// are checked on every append.
//
// It does no I/O beyond reading model files and knows nothing of SGLang, plugins or the agent loop.
package tito
