// Package examples holds the example plugins of the guest SDKs, one folder each: as-* (AssemblyScript), c-* (C),
// rust-* (Rust) and go-* (Go). Every SDK implements the same four, one per plugin kind: repeat (a tool with typed
// arguments and a config), stop-phrase (a hook with config, per-episode state and a stop), reward (label_reward)
// and xmltag (a parser); the SDK reference pages (plugins/sdk/*/README.md) quote the first three verbatim. Each
// folder keeps its sources and the .wasm built from them (`make wasm`, with the commands of `make plugin`). This
// package has no code; its tests load every example through the plugin host (runtime/plugin), exactly as the
// runtime loads third-party plugins (sandboxed), and check the manifests, calls against one expectation for all
// SDKs (kinds_test.go) or a Go reference implementation (examples_test.go), and the errors for bad input and bad
// config. Read kinds_test.go first.
package examples
