// Package sglang is a client for SGLang's native HTTP API (/generate in token ids, health, model info, aborts,
// pause/continue, weight updates), with retries that follow SGLang's real error behaviour and group and episode
// affinity across several workers or a Model Gateway.
//
// It knows nothing of agents, tokenizers or plugins and uses the standard library only.
//
// # Entry point
//
// New(cfg) returns a *Client; Client.Generate(ctx, episodeID, req) sends one non-streaming /generate with
// input_ids and returns the typed response (output_ids with the stop token, bit-exact logprobs,
// cached_tokens, weight_version, and the Server and Attempts that served it). Read Example first. A
// Client is safe for concurrent use; Close it when done.
//
// # Wire types
//
// GenerateRequest, SamplingParams, GenerateResponse, MetaInfo, FinishReason and LogprobEntry encode and
// decode exactly SGLang's JSON (reference: sglang-api.md, fixtures in testdata/fixtures): unset optional
// sampling params are omitted so the server defaults apply, max_new_tokens is always sent, logprob
// triples [logprob|null, token_id, text|null] decode bit for bit. Servers (the emulator) may decode requests
// with the same types. Responses are decoded by a reflection-free reader for the bulky parts (ids and
// token logprobs), falling back to encoding/json for anything unusual.
//
// # Errors and retries
//
// Every failure is an *Error naming the operation, server, rid and attempts. errors.Is classifies the cause:
// ErrContextLength and ErrBadRequest (400), ErrUnauthorized (401/403), ErrNotFound (404) are never retried;
// ErrUnavailable (408/429/5xx), ErrConnection, ErrTimeout (Retry.AttemptTimeout) and undecodable bodies
// (ErrBadResponse) are retried with exponential backoff and jitter (honouring Retry-After) while the
// deadline allows; ErrAborted (HTTP 200 with finish_reason "abort") is an *AbortError with the partial
// response, never retried. errors.As gives the *HTTPError (status, body, message). Retries send
// rid+"-retry<n>" because SGLang rejects a rid still in flight.
//
// # Routing
//
// With Workers, an episode's turns stay on one worker (so its radix cache is reused) and, under Config.Affinity
// "group" (the default), so do the samples of a group (WithGroup(ctx, group)): their shared first prompt is cached
// where they all run. A new group (or episode) goes to the healthy worker with the fewest tokens in flight (the KV
// cache its requests hold; with Adaptive, also by its /v1/loads) and is remembered there
// (Config.Placement "least_loaded", for Config.PlacementTTL after its last request), or to the worker ranked
// first by rendezvous hashing of its id ("rendezvous"). A request spills to another worker while its own has
// MaxInFlightPerWorker requests in flight or is marked unhealthy (a refused connection, or UnhealthyAfter
// transient failures in a row, for UnhealthyFor). Requests beyond every bound queue; Stats reports in-flight,
// queued, failures and retries. With a Gateway, /generate goes through it with X-SMG-Routing-Key set to the
// group (or episode) id (use the gateway's manual or consistent_hashing policy), and admin calls go to Workers,
// because the gateway does not serve them.
//
// # Notes
//
// Every turn of a conversation sends its whole context: a conversation's IDsCache (GenerateRequest.IDsCache) keeps
// the encoded input_ids between its requests, so that a turn encodes only its new ids (the body is the same bytes).
// The client does not stream (SSE) and does not batch: one request, one response. Admin calls make a single
// attempt. The HTTP transport keeps up to MaxInFlightPerWorker idle connections per host and no client-wide
// timeout; deadlines come from ctx (or Config.RequestTimeout / AdminTimeout when ctx has none).
package sglang
