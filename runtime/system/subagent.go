package system

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
)

// subAgentTool binds a sub-agent tool entry (config.SubAgent): one function, its "task" argument, that runs the
// named agent (looked up through env.Agents when a call runs); timeout bounds the whole sub-episode (0: the
// calling agent's tool_timeout).
func subAgentTool(s config.SubAgent, timeout time.Duration, env BuildEnv) (runtime.ToolBinding, []abi.ToolSpec, error) {
	if env.Agents == nil {
		return runtime.ToolBinding{}, nil, fmt.Errorf("sub-agent tool %q: no agents to run it with (BuildEnv.Agents)", s.Name)
	}
	desc := s.Description
	if desc == "" {
		desc = fmt.Sprintf("Runs the agent %q on a sub-task and returns its final answer.", s.Name)
	}
	spec := runtime.SubAgentSpec(s.FunctionName(), desc)
	var fn struct {
		Function abi.ToolSpec `json:"function"`
	}
	if err := json.Unmarshal(spec, &fn); err != nil {
		return runtime.ToolBinding{}, nil, fmt.Errorf("sub-agent tool %q: %w", s.Name, err)
	}
	name := s.Name
	st := &runtime.SubAgent{Agent: name, Resolve: func() (*runtime.Agent, error) { return env.Agents(name) },
		Limits: runtime.SubAgentLimits{MaxDepth: s.Depth(), MaxTurns: s.Turns(), MaxTokens: s.MaxTokens}}
	tb := runtime.ToolBinding{Plugin: "agent:" + name, SHA256: "agent:" + name, Tool: st, Specs: []json.RawMessage{spec}, Timeout: timeout}
	return tb, []abi.ToolSpec{fn.Function}, nil
}
