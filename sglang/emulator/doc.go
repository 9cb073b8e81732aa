// Package emulator is a protocol-faithful SGLang stand-in for tests, demos and benchmarks: the same endpoints and
// JSON shapes, a real tokenizer supplied by the caller, scripted and agentic policies, deterministic logprobs,
// a prefix-cache model, latency and fault injection.
package emulator
