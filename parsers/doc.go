// Package parsers holds the built-in, model-specific tool-call parsers: hermes (Qwen2.5/Qwen3 <tool_call> JSON,
// alias qwen25), qwen3_coder (XML with schema-typed parameters), llama3 (JSON, <|python_tag|>, ";"-separated),
// glm45 (key/value XML, alias glm47), kimi_k2 (special-token sections), deepseekv3 (DeepSeek V3 and R1) and
// deepseekv31 (DeepSeek V3.1), mistral ([TOOL_CALLS] JSON list or NAME[ARGS]),
// minimax-m2 (<invoke name=...>
// XML), seed_oss (Qwen3-Coder's XML inside
// <seed:tool_call>, reasoning in <seed:think>) gpt-oss (harmony messages: the analysis channel is
// reasoning, a commentary message to=functions.NAME is a call) and pythonic (Llama 4 [f(k=v), g()] lists of
// Python literals). They are compiled to one Wasm parser
// plugin (Wasm, WasmConfig) that the runtime loads through the plugin host like any parser plugin; the same pure
// logic is importable natively (New, Parser.Parse) for tests, fuzzing and tools.
//
// Parsing is strict and on-policy: the parser sees exactly the generated text, a malformed call is never repaired
// but reported as an Error with a Reason, a message for the model and its raw text; arguments are checked against
// the tool's schema without coercion (types, enum, minimum/maximum, required, additionalProperties: false; the
// argument policy of plugins/ABI.md 5.1, run in every format by TestArgumentPolicy), and calls inside reasoning (<think>...</think>, or
// before a lone </think>; <seed:think> for seed_oss) do not count. Call ids are call_0000, call_0001, ... per response, errors included. The
// conformance test runs SGLang's own detector fixtures and states, case by case, where we deliberately differ.
//
// The package does no I/O and has no state: Parser and Tools are immutable and safe for concurrent use; a Result
// reused with ParseInto belongs to one goroutine. JSON is validated and re-emitted by a small hand-rolled scanner,
// because encoding/json inside a Wasm guest costs ~200 us per KB. Read Example first.
package parsers
