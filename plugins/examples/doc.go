// Package examples holds the example plugins of the guest SDKs, one folder each: as-* (AssemblyScript), c-* (C),
// rust-* (Rust) and go-* (Go). Each folder keeps its sources and the .wasm built from them (`make wasm`). This
// package has no code; its tests load every example through the plugin host (runtime/plugin), exactly as the
// runtime loads third-party plugins (sandboxed), and check the manifest, successful calls against a Go reference
// implementation, and the error results for bad input. Read examples_test.go first.
package examples
