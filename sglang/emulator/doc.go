// Package emulator is a protocol-faithful SGLang stand-in for tests, demos and benchmarks: the same native
// endpoints and JSON shapes as SGLang (sglang@8905cbd, reference/sglang-api.md), a real tokenizer supplied by
// the caller, scripted and agentic policies, deterministic logprobs, a radix prefix-cache model, a latency
// model, and fault injection. It needs no GPU and does no I/O of its own beyond HTTP (the caller opens the log
// file and the script).
//
// Entry point: New returns a *Server, an http.Handler; serve it with Run(ctx, listener), or in tests with
// httptest.NewServer(srv), then srv.Close(ctx). A Server is safe for concurrent use.
//
// # Endpoints
//
// POST|PUT /generate (single, batch `input_ids: [[...]]` or `text: [...]`, `sampling_params.n > 1`, SSE
// streaming with cumulative chunks and `data: [DONE]`), GET /health, /health_generate, /model_info,
// /server_info, /v1/models, POST /abort_request, /pause_generation, /continue_generation, GET|POST /flush_cache,
// POST /update_weights_from_disk, /update_weight_version, /update_weights_from_tensor,
// /update_weights_from_distributed, /init_weights_update_group, /destroy_weights_update_group (accepted; only
// weight_version and the cache flush act), /tokenize, /detokenize; /get_weight_version answers
// 404 as SGLang does. A weight_version change that does not abort the requests in flight
// (abort_all_requests=false) lands mid-request: with a per-output-token latency, the output of a request that
// decoded across it reports meta_info.weight_versions, [{version, start, end}] per version (absent when one
// version made every token). Bad input gets SGLang's status codes and bodies: 400 {"object":"error",...,"type":"Bad
// Request"} for a body that fails validation, 400 {"error":{"message":...}} for ValueErrors (no input, empty
// input_ids, SamplingParams.verify, context length), 500 "Internal Server Error" for an unknown sampling_params
// key; a streaming request gets its ValueError as an SSE error event after HTTP 200.
//
// # Token behaviour
//
// A reply is text from the policy, tokenized with the real tokenizer (Encode(text, false)), then
// Config.StopIDs[0] appended: output_ids keep the stop token, text drops it (unless no_stop_trim), and
// finish_reason is {"type":"stop","matched":<id>}. With max_new_tokens = N at most N ids are returned; N ids
// means {"type":"length","length":N} even when the last one is the stop token (SGLang checks the length
// first). stop_token_ids, stop strings and ignore_eos are honoured.
//
// # Logprobs
//
// Every logprob the emulator reports (output_token_logprobs, input_token_logprobs, top logprobs,
// token_ids_logprob) is Logprob(preceding ids, id), a function of the last LogprobWindow (3) preceding ids of
// the whole sequence (prompt, then output) and the id itself, so a client can recompute every value from a
// trajectory alone. The exact formula, with a Python port, is in Logprob's documentation. Temperature does not
// change it. input_token_logprobs covers prompt positions logprob_start_len..len-1 and its first entry's
// logprob is null, as in SGLang.
//
// # Determinism
//
// The emulator has no sampler; a per-request PRNG stands in for it. It picks the reply (for the agentic policy:
// the think block, how many of the remaining calls this turn makes, the plain answer's sentences), the
// non-canonical tokenization and the malformed tool call, and is seeded from Config.Seed, a hash of the request's
// input ids, and, by the request's sampling mode:
//
//   - greedy (temperature < 1e-6, which SGLang turns into top_k = 1, or top_k = 1): nothing more, so every
//     sample of a prompt is the same, as SGLang's argmax makes it;
//   - sampling_params.sampling_seed (an integer) given: that seed, so the same seed and prompt give the same
//     reply, the n samples of an n > 1 request included (SGLang's seeded sampler hashes only the seed and the
//     position; it honours sampling_seed only with --enable-deterministic-inference, the emulator always does,
//     and answers a non-integer one with 500 like any mistyped sampling param);
//   - otherwise the rid the client sent for the item (a string rid r of a batch counts as r_i, as SGLang names
//     the item; with n > 1 the samples' own rids are fresh uuids, so the client's rid is used) and the sample
//     index within an n > 1 request. SGLang samples at random here; the rid is the emulator's stand-in, so
//     samples with different rids (agentrt sends "<episode id>.<turn>") get different replies while a request
//     re-sent with the same rid gets the same one (agentrt's client names a retry "<rid>-retryN", so a retried
//     turn may get another reply, as from SGLang). A request without a rid, or any request when
//     Config.IgnoreRID is set (agentrt emulate --ignore-rid), depends on the prompt (and the sample index) alone.
//
// The agentic policy keeps no per-episode plan: each turn reads from the prompt which expressions earlier
// assistant turns already passed to the calculator (a malformed call counts), and calls some of the rest
// (Llama 3: one) or, when none is left, answers; so the samples of a task can spread their calls differently,
// and every episode calls each expression once. Fault draws come from a PRNG seeded by Config.Seed and advanced once per /generate
// request, so a retry draws again.
//
// # Policies
//
// The agentic policy decodes the prompt (ChatML: <|im_start|>role\n...<|im_end|>; Llama 3:
// <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>; gpt-oss's harmony messages; DeepSeek's
// <｜User｜>/<｜Assistant｜> turns and tool outputs; Mistral's [INST]...[/INST] turns and [TOOL_RESULTS], Nemo's
// {"content": ..., "call_id": ...} or Small 3.2's ID[TOOL_CONTENT]...; Kimi K2's <|im_user|>user<|im_middle|>...
// <|im_end|> messages and "## Return of ID" tool results; MiniMax-M2's ]~b]role\n...[e~[ messages and
// <response> tool results; Seed-OSS's <seed:bos>role\n...<seed:eos>; GLM's [gMASK]<sop><|system|>...<|user|>...
// <|assistant|>... messages, which no token ends, and <|observation|> tool results), reads the tool specs (Qwen's,
// MiniMax-M2's and GLM's <tools> block, the JSON of Llama 3's tool preamble, gpt-oss's TypeScript signatures, the JSON or
// "### NAME ... Parameters:" blocks of SGLang's DeepSeek templates, Mistral's [AVAILABLE_TOOLS] list, Kimi K2's
// tool_declare JSON, Seed-OSS's Python signatures) and the user task (Nemo's template writes the system prompt
// into it). With a calculator-like tool (a parameter named
// "expression", or a name containing calc/math/eval) it calls it for every arithmetic expression of the task,
// in one turn (parallel calls) or over several, in Config.ToolFormat (hermes, qwen3_coder, llama3, seed_oss,
// minimax-m2, kimi_k2, glm45, glm47, deepseekv3, deepseekv31, mistral, mistral_v11, mistral_nemo, gpt-oss, pythonic;
// llama3 and gpt-oss make one call per turn; kimi_k2 names each call functions.NAME:N, N counting the
// conversation's calls, as Kimi K2 does; mistral_nemo writes Nemo's list with a 9-character id per call, and
// mistral_v11 Small 3.2's [CALL_ID] with one, drawn like the rest of the reply; a reply to a GLM prompt ends on the
// token that begins the next message, <|observation|> after calls and <|user|> after an answer, as GLM's do;
// seed_oss reasons in <seed:think>, gpt-oss in an analysis message; gpt-oss calls are written as its chat
// template writes them, the first one continuing the generation prompt's "<|start|>assistant"); without a calculator but with a Python tool (a "code" parameter, or "python" in the name) it sends one program that prints each expression and boxes the last printed value in its answer; with
// other tools it calls, once, the tool whose name and description share the most words with the task (name
// words count twice; the first listed among equals; none when no tool shares a word: the task is answered without
// one), with arguments made from its schema: each required parameter (all when none is required) and an
// optional one the task names, an enum value the task names (else drawn), the task's numbers in order clamped to
// minimum/maximum, a quoted phrase or a capitalised name of the task for a string (the whole task for a text-like
// one: text, query, ...), a drawn boolean; once
// the calls are done it answers with the tool results ("12*7 = 84 ... The answer is 84."), saying a result
// that is an error ("Error: ...") could not be computed rather than quoting it. Without tools it answers in a
// few sentences. Config.ThinkRate adds a <think> block (ChatML, DeepSeek), or an analysis message before the calls
// or the final channel's answer (gpt-oss's harmony); where MiniMax-M2's or GLM-4.7's generation prompt
// opens <think> (or GLM-4.5/4.6's is a bare <|assistant|>, thinking on), every reply reasons a sentence (Config.ThinkWords more) and closes it first; Config.WrongAnswerRate makes a final answer
// misreport the last value (an integer off by one), so a correctness reward varies within a group. The scripted
// policy replies from a Script (ParseScript), keyed per conversation and indexed by turn: a JSONL file of
// {"key": KEY, "replies": [turn 0, turn 1, ...]} lines, a conversation's key being the KEY of a [script:KEY] marker in
// its first user message (else ScriptKey, the sha256 of that message), "*" the fallback for conversations without
// a line of their own; each reply is the model's text verbatim (tool calls in the agent's format included), and a
// turn past the script gets NoScriptReply.
//
// # Prefix cache
//
// A radix tree of token ids (namespaced by extra_key, bounded by Config.CacheTokens with LRU leaf eviction).
// cached_tokens = min(longest cached prefix of input_ids, len(input_ids)-1); a finished request inserts its
// input_ids + output_ids without the last output id (whose KV was never computed). So the turn after a reply
// of k ids over a prompt of p ids reports p+k-1 cached tokens. /flush_cache and /update_weights_from_disk
// (flush_cache defaults to true) clear it.
//
// # Latency, queueing, abort, pause
//
// Prefill takes Latency.Fixed + Latency.PerPromptToken × uncached prompt tokens, decoding
// Latency.PerOutputToken per id. At most Config.MaxRunningRequests generate at once; the rest wait in a queue
// (bounded by MaxQueuedRequests, beyond which 503). /abort_request aborts a running request (HTTP 200, partial
// output, finish_reason {"type":"abort","message":"Aborted","status_code":null,"err_type":null}) or a waiting
// one ("Abort in waiting queue", no prompt_tokens/cached_tokens). /pause_generation blocks new and running
// generation until /continue_generation (mode "abort", the default, first aborts everything in flight).
//
// # Request log
//
// WithLog writes one LogRecord a line: method, path, rid, monotonic arrival and completion times (ns since the
// Server started), status, injected fault, the request body's size as sent and the request and response bodies,
// so a test can check the prefix invariant and a benchmark the client's overhead between turns and the bytes it
// sends from the server side.
package emulator
