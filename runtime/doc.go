// Package runtime runs agent episodes: it renders prompts, calls the model, parses tool calls, runs tools and
// hooks, and assembles token-exact trajectories; it also holds the agent config, the scheduler and the server.
package runtime
