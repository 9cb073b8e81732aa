// Package agentrt is the repository root: it ships the commented runtime.toml to the binary (`agentrt init` writes
// it). The runtime itself is under cmd/agentrt, runtime/, tito/, sglang/, parsers/ and plugins/ (docs/design.md).
package agentrt

import _ "embed"

// RuntimeTOML is the repository's runtime.toml, commented key by key: the configuration `agentrt init` starts from.
//
//go:embed runtime.toml
var RuntimeTOML string
