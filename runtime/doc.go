// Package runtime is the episode loop: an Agent runs Episodes, each a conversation of model calls (runtime/turn),
// tool calls and hook events, into a token-exact trajectory whose status says how it ended. Tools, hooks and
// environments are interfaces (Tool, EpisodeTool, EpisodeEnv, Hook); their Wasm, command, MCP and remote
// implementations are adapted in runtime/system, which also builds an Agent's Settings and Deps from runtime.toml.
// The loop knows nothing of configuration files, plugin hosts, streams or services. An Agent is safe for
// concurrent use: each Run is independent.
package runtime
