package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// Item is one prompt of a rollout request: a JSON line of `agentrt run`'s --prompts file, or an item of a
// WebSocket rollout request.
type Item struct {
	ID string `json:"id"`
	// Messages is the conversation so far (OpenAI-style); Prompt is a shorthand for one user message.
	Messages []tito.Message `json:"messages,omitempty"`
	Prompt   string         `json:"prompt,omitempty"`
	// N is the number of samples (default 1); they share a group id.
	N        int             `json:"n,omitempty"`
	Label    json.RawMessage `json:"label,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Sampling overrides the agent's sampling params.
	Sampling *turn.Sampling `json:"sampling_params,omitempty"`
	// MaxResponseTokens is the episode-wide response budget of each sample (0: the agent's max_response_tokens).
	MaxResponseTokens int `json:"max_response_tokens,omitempty"`
}

// Validate checks an item; where names it in errors (e.g. "prompts.jsonl:3").
func (it *Item) Validate(where string) error {
	if it.ID == "" {
		return fmt.Errorf("%s: item has no \"id\"", where)
	}
	if len(it.Messages) == 0 && it.Prompt == "" {
		return fmt.Errorf("%s: item %q has neither \"messages\" nor \"prompt\"", where, it.ID)
	}
	if len(it.Messages) > 0 && it.Prompt != "" {
		return fmt.Errorf("%s: item %q has both \"messages\" and \"prompt\"", where, it.ID)
	}
	if it.N < 0 {
		return fmt.Errorf("%s: item %q: n must be >= 1", where, it.ID)
	}
	if it.MaxResponseTokens < 0 {
		return fmt.Errorf("%s: item %q: max_response_tokens must be >= 0 (0: the agent's)", where, it.ID)
	}
	if it.Sampling != nil {
		if err := it.Sampling.Validate(); err != nil {
			return fmt.Errorf("%s: item %q: sampling_params: %w", where, it.ID, err)
		}
	}
	return nil
}

// Episodes expands the item into its samples. groupPrefix scopes the group id (a request id under serve).
func (it *Item) Episodes(groupPrefix string) []Episode {
	msgs := it.Messages
	if it.Prompt != "" {
		msgs = []tito.Message{{Role: "user", Content: it.Prompt}}
	}
	n := max(it.N, 1)
	group := groupPrefix + it.ID
	eps := make([]Episode, n)
	shared := &sharedPrompt{} // one agent runs all of an item's samples
	for k := range n {
		eps[k] = Episode{ID: fmt.Sprintf("%s#%d", group, k), ItemID: it.ID, GroupID: group, SampleIndex: k,
			Messages: msgs, Label: it.Label, Metadata: it.Metadata, Sampling: it.Sampling, MaxResponseTokens: it.MaxResponseTokens,
			firstPrompt: shared}
	}
	return eps
}
