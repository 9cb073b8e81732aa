// Package system assembles agentrt from a runtime.toml (runtime/config): Build loads the model folders, starts the
// SGLang client or the in-process emulator and the plugin host, and builds every agent (BuildAgent: family
// profile and self-test, parser, tools from Wasm plugins, WASI commands, MCP servers and environment services,
// hooks, reward); NewServer wires `agentrt serve` (rollout service, trajectory stream, front door, metrics) and
// Server.Serve runs it until shutdown, closing in order. Only cmd/agentrt imports it.
package system
