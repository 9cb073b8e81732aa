package system

import (
	"fmt"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/frontdoor"
)

// FrontdoorModel is the agent as the OpenAI-compatible front door serves it: its model (the same turn.Model its
// episodes call, pause gate included), its sampling params, provenance and reward. The agent must have no tools
// (the front door's callers bring their own, and the parser would refuse calls of tools it was not given).
func FrontdoorModel(a *runtime.Agent) (frontdoor.Model, error) {
	if a.HasTools() {
		return frontdoor.Model{}, fmt.Errorf("agent %q has tools; the front door's agent must have none (its callers bring their own tools)", a.Name())
	}
	m := frontdoor.Model{Name: a.Name(), Turn: a.Model(), Sampling: a.Sampling(), Provenance: a.Provenance()}
	if a.HasReward() {
		m.Reward = a.Reward
	}
	return m, nil
}
