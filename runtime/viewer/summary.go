package viewer

import (
	"math"
	"strings"

	"github.com/agentrt/agentrt/tito"
)

// Provenance keys the viewer reads (the runtime writes them; see runtime.ProvAgent and tito.ProvModel).
const (
	provAgent         = "agent"
	provModel         = tito.ProvModel
	provModelRevision = tito.ProvModelRevision
)

// Summary is one trajectory in the page's list.
type Summary struct {
	// Seq numbers the trajectories in the order the source received them (the list is newest first).
	Seq            uint64   `json:"seq,omitempty"`
	ID             string   `json:"id"`
	GroupID        string   `json:"group_id"`
	ItemID         string   `json:"item_id"`
	SampleIndex    int      `json:"sample_index"`
	Status         string   `json:"status"`
	StatusReason   string   `json:"status_reason,omitempty"`
	Reward         *float64 `json:"reward"`
	Agent          string   `json:"agent,omitempty"`
	Model          string   `json:"model,omitempty"`
	Turns          int      `json:"turns"`
	Tokens         int      `json:"tokens"`
	ResponseTokens int      `json:"response_tokens"`
	// ToolCalls counts the episode's tool calls; ToolErrors those that did not end ok (error results, timeouts,
	// malformed calls), from the trajectory's tool_calls.* metrics.
	ToolCalls  int `json:"tool_calls"`
	ToolErrors int `json:"tool_errors"`
}

// summarize reads a trajectory's summary; it never fails, whatever the trajectory holds.
func summarize(t *tito.Trajectory) Summary {
	s := Summary{ID: t.ID, GroupID: t.GroupID, ItemID: t.ItemID, SampleIndex: t.SampleIndex, Status: t.Status,
		StatusReason: t.StatusReason, Tokens: len(t.TokenIDs)}
	if s.GroupID == "" {
		s.GroupID = s.ID
	}
	if t.Reward != nil && !math.IsNaN(*t.Reward) && !math.IsInf(*t.Reward, 0) {
		r := *t.Reward
		s.Reward = &r
	}
	s.Agent, _ = t.Provenance[provAgent].(string)
	s.Model, _ = t.Provenance[provModel].(string)
	for _, seg := range t.Segments {
		if seg.Kind == tito.KindResponse {
			s.Turns++
			s.ResponseTokens += max(seg.Length, 0)
		}
	}
	for k, v := range t.Metrics {
		if o, ok := strings.CutPrefix(k, "tool_calls."); ok {
			s.ToolCalls += int(v)
			if o != "ok" {
				s.ToolErrors += int(v)
			}
		}
	}
	return s
}

// Filter selects trajectories for the list; the zero value selects all.
type Filter struct {
	// Status is a status (completed, truncated, aborted, failed) or "" for any.
	Status string
	// Agent is an agent name or "" for any.
	Agent string
	// MinReward and MaxReward bound the reward (inclusive); a trajectory without a reward fails either bound.
	MinReward, MaxReward *float64
	// Query is a substring of the trajectory id, group id or item id.
	Query string
}

func (f Filter) match(s *Summary) bool {
	if f.Status != "" && s.Status != f.Status {
		return false
	}
	if f.Agent != "" && s.Agent != f.Agent {
		return false
	}
	if f.MinReward != nil && (s.Reward == nil || *s.Reward < *f.MinReward) {
		return false
	}
	if f.MaxReward != nil && (s.Reward == nil || *s.Reward > *f.MaxReward) {
		return false
	}
	if f.Query != "" && !strings.Contains(s.ID, f.Query) && !strings.Contains(s.GroupID, f.Query) && !strings.Contains(s.ItemID, f.Query) {
		return false
	}
	return true
}

// Facets are what the page's filter menus offer.
type Facets struct {
	// Total is the number of trajectories the source holds.
	Total int `json:"total"`
	// Statuses counts them by status; Agents lists the agents that made them.
	Statuses map[string]int `json:"statuses"`
	Agents   []string       `json:"agents"`
}
