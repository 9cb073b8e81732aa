// Command wasm is the built-in parsers as one Wasm parser plugin (GOOS=wasip1, -buildmode=c-shared), embedded in
// the agentrt binary by package parsers (parsers.Wasm). The plugin config selects the format:
// {"parser": "hermes"} (one of parsers.Names). scripts/wasm.d/20-parsers.sh builds parsers.wasm from this
// directory; natively this package builds to an empty program so that `go build ./...` works everywhere.
package main
