// Package tito makes trajectories token-exact ("token in, token out"): it loads a Hugging Face model folder
// (tokenizer and chat template), renders chat templates (in full for the first prompt, as deltas afterwards),
// and keeps the trajectory: token ids, loss mask and logprobs in aligned, append-only arrays whose invariants
// are checked on every append.
//
// It does no I/O beyond reading model files and knows nothing of SGLang, plugins or the agent loop.
//
// Entry points: LoadModel reads a model folder into a Model (its Tokenizer, chat template source, special
// tokens, StopIDs and sha256s for provenance). Tokenizer runs the Hugging Face Rust tokenizers library through
// cgo (the static library of github.com/daulet/tokenizers v1.22.1, built by `make setup`); it is safe for
// concurrent use. ChatTemplate renders chat templates as transformers does (minijinja through our C ABI in
// tito/jinja, docs/templates.md): Render for full prompts, RenderDelta for later turns, DeltaCheck to refuse a
// template that cannot be continued exactly; a conversation's MessageCache (RenderOptions.Messages) keeps its
// messages as the engine reads them, so that a later turn writes only its new ones. Trajectory is the token manager of one episode: AppendPrompt, NextRequest and
// AppendResponse enforce docs/design.md's invariants (prefix, verbatim responses, aligned arrays) and return an
// *InvariantError instead of repairing anything; Validate re-checks a whole trajectory, Audit records
// re-tokenization drift per response segment, SlimeSample exports slime's Sample fields. A Trajectory
// belongs to one goroutine. Read Example (rendering) and Example_trajectory (token bookkeeping) first.
package tito
