// Package fastjson is a small, allocation-light JSON toolkit for plugin guests: it validates and skips values,
// looks up object keys and array elements in raw bytes without decoding them, unquotes strings and appends
// quoted strings. It exists because encoding/json inside a Wasm guest is ~10x slower than native (reflection),
// and the agentrt ABI moves JSON on every call. It never builds a tree: callers keep raw []byte slices.
//
// It is stdlib-only and has no build tags, so it is tested and fuzzed natively and also usable by host code.
// Functions are pure and safe for concurrent use. Start with [Get], [Valid] and [AppendQuote].
package fastjson
