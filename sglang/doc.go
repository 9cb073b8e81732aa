// Package sglang is a client for SGLang's native HTTP API (/generate in token ids, health, model info, aborts,
// pause/continue, weight updates), with retries that follow SGLang's real error behaviour and episode affinity
// across several workers or a Model Gateway.
//
// It knows nothing of agents, tokenizers or plugins and uses the standard library only.
package sglang
