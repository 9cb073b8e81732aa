// Package turn makes one model call for both callers: the agent loop (package runtime) and the OpenAI/Anthropic
// front door (runtime/frontdoor). Model holds what serves a call: the /generate client, tokenizer, chat template,
// tool-call parser, stop ids, context window, template kwargs, reasoning markup and call-id style. Model.Call waits
// while the pause Gate is closed, sends the trajectory to SGLang with the turn's Sampling mapped to SGLang's
// sampling_params (Sampling.Params, the one mapping, every field), aborts the request on the server when the
// caller goes away, continues a turn SGLang aborted (partial rollouts), appends each response verbatim, trims the
// final stop token, decodes and parses. Model.Prompt and Model.Delta render what a conversation appends before a
// call.
//
// The interfaces a model call needs (Generator, Tokenizer, Template, Parser, Aborter) are declared here and
// nowhere else. The package knows nothing of episodes, hooks, tools, sessions or streams; what ends a
// conversation is the caller's decision, from Call's result or error. A Model is read-only once built and safe for
// concurrent use when its components are.
package turn
