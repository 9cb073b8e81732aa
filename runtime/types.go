package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// Tool runs the tools of one plugin (plugins/ABI.md 5.2). A returned error is a plugin failure (trap, timeout,
// error envelope); the episode turns it into an error result for the model.
type Tool interface {
	Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error)
}

// EpisodeTool is a Tool that keeps resources per episode (a command tool's per-episode scratch directory): the loop
// calls it with the episode's id, and ends the episode once the episode is over.
type EpisodeTool interface {
	Tool
	CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error)
	EndEpisode(episodeID string)
}

// EpisodeEnv is an EpisodeTool whose state lives outside agentrt, in an environment made for each episode (a
// remote environment service, runtime/envtool). The loop begins it once the first prompt is ready, passing the
// sample's metadata; asks it for a reward when the episode completed or was truncated; and closes it when the
// episode ends, whatever ended it (CloseEpisode instead of EndEpisode). A failure of the environment itself (an
// error that implements EnvironmentFailure) aborts the episode with ReasonEnvironment: never a completed episode
// with a made-up reward.
type EpisodeEnv interface {
	EpisodeTool
	BeginEpisode(ctx context.Context, episodeID string, metadata json.RawMessage) error
	// EpisodeReward is the environment's reward for the episode (nil: it gives none).
	EpisodeReward(ctx context.Context, episodeID string) (*float64, error)
	// CloseEpisode closes the episode's environment, on a context of its own (the episode's may be cancelled).
	CloseEpisode(ctx context.Context, episodeID string) error
}

// envFailure is an environment's own failure (*envtool.Error): the episode cannot go on.
type envFailure interface {
	error
	EnvironmentFailure()
}

// ToolBinding attaches one tool plugin to an agent.
type ToolBinding struct {
	// Plugin names the plugin (for errors and provenance); SHA256 identifies its module.
	Plugin, SHA256 string
	// Tool runs the calls.
	Tool Tool
	// Specs are the OpenAI-style function specs ({"type":"function","function":{...}}) exposed to the model;
	// their names route calls to this plugin.
	Specs []json.RawMessage
	// Timeout bounds each call (0: the agent's tool_timeout).
	Timeout time.Duration
}

// Hook observes an episode and may steer it (plugins/ABI.md 5.3).
type Hook interface {
	// Subscribed reports whether the hook wants the event.
	Subscribed(event string) bool
	// Handle is called once per subscribed event. An error is a plugin failure: the episode is aborted.
	Handle(ctx context.Context, ev *abi.Event) (abi.HookResponse, error)
}

// HookBinding attaches a hook plugin to an agent.
type HookBinding struct {
	Plugin, SHA256 string
	Hook           Hook
}
