// Package abi is the vocabulary of the agentrt plugin ABI (plugins/ABI.md, version 1): the host-import module
// name, the guest export names, the packed pointer/length type, and the JSON shapes that cross the boundary
// (manifest, init input, envelopes, parser results, tool calls and results, hook events and responses).
//
// It is imported by both sides: the plugin host (runtime/plugin) and the guest SDKs (plugins/sdk/go). It has no
// build tags, imports neither wazero nor encoding/json (so guests stay small), and holds no state; all its types
// are plain values, safe for concurrent use when not mutated. Read ABI.md first, then [Packed] and [Manifest].
package abi
