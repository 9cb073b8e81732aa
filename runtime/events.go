package runtime

import (
	"encoding/json"

	"github.com/agentrt/agentrt/runtime/turn"
)

// Event kinds: what an episode reports as it goes (Episode.Events). docs/PROTOCOL.md section 6 carries them to
// a trainer that asked for them.
const (
	EventTurn       = "turn"        // a model call finished (its reply is in the trajectory)
	EventToolCall   = "tool_call"   // a tool call is about to run
	EventToolResult = "tool_result" // a tool call's result, as the model will read it
	EventSample     = "sample"      // a new sample of the episode began (a compaction): its prompt is rendered
)

// Event is one step of an episode, for a live view: best effort, never part of the trajectory. Turn is the
// model call it belongs to (0 for the first); the other fields depend on Kind.
type Event struct {
	Kind string `json:"kind"`
	Turn int    `json:"turn"`
	// turn: the finish reason; the tokens sent (prompt_tokens, of which cached_tokens came from SGLang's radix
	// cache) and generated; SGLang's latency and agentrt's own time for the call (trajectory TurnInfo's); the
	// calls the parser found and the malformed ones.
	FinishReason   string  `json:"finish_reason,omitempty"`
	PromptTokens   int     `json:"prompt_tokens,omitempty"`
	CachedTokens   int     `json:"cached_tokens,omitempty"`
	ResponseTokens int     `json:"response_tokens,omitempty"`
	LatencyMS      float64 `json:"latency_ms,omitempty"`
	OverheadMS     float64 `json:"overhead_ms,omitempty"`
	ToolCalls      int     `json:"tool_calls,omitempty"`
	ParseErrors    int     `json:"parse_errors,omitempty"`
	// tool_call, tool_result: the call's id and tool name; tool_call: its arguments; tool_result: its outcome
	// (ok, error, timeout, cancelled, unknown_tool, parse_error, env_error), the call's wall time and the result's
	// size in bytes.
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Outcome   string          `json:"outcome,omitempty"`
	ToolMS    float64         `json:"tool_ms,omitempty"`
	Bytes     int             `json:"bytes,omitempty"`
	// sample: the new sample's index (its prompt's size is PromptTokens; Turn is the model call it precedes).
	Sample int `json:"sample,omitempty"`
}

// emit hands ev to the episode's Events, if it has one.
func (e *episode) emit(ev Event) {
	if e.ep.Events != nil {
		e.ep.Events(ev)
	}
}

// turnEvent reports a finished model call: its last segment's provenance holds the timings.
func (e *episode) turnEvent(r *turn.Result) {
	if e.ep.Events == nil {
		return
	}
	ev := Event{Kind: EventTurn, Turn: e.counts.ModelCalls - 1, PromptTokens: r.InputTokens, CachedTokens: r.CachedTokens,
		ResponseTokens: len(r.OutputIDs), ToolCalls: len(r.Calls), ParseErrors: len(r.ParseErrors)}
	if r.Finish != nil {
		ev.FinishReason = r.Finish.Type
	}
	if n := len(e.traj.Segments); n > 0 {
		if info := e.traj.Segments[n-1].Info; info != nil {
			ev.LatencyMS, ev.OverheadMS = info.LatencyMS, info.OverheadMS
		}
	}
	e.emit(ev)
}
