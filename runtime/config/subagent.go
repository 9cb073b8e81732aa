package config

import (
	"fmt"
	"reflect"
	"regexp"
)

// SubAgent is the `agent` table of a [[agent.tools]] entry: a tool that runs another [[agent]] (or the same one) on
// a sub-task (docs/PROTOCOL.md section 7, runtime.SubAgent). The model calls it with a "task" string; the named
// agent's episode runs with that task as its user message, and its final answer is the call's result.
//
//	[[agent.tools]]
//	agent = { name = "coder", max_depth = 1, max_turns = 16, max_tokens = 8192 }
type SubAgent struct {
	// Name is the [[agent]] to run. It must use the calling agent's model (model, revision, chat_template and
	// chat_template_kwargs): its episode's samples are samples of the caller's trajectory.
	Name string `toml:"name"`
	// Tool is the function name the model calls ("": the agent's name); Description its description ("": one
	// naming the agent).
	Tool        string `toml:"tool"`
	Description string `toml:"description"`
	// MaxDepth is the deepest a sub-episode this tool starts may be (the top-level episode is depth 0, the episodes
	// it runs through sub-agent tools depth 1, ...): a deeper call gets an error result and runs nothing. 0: 1.
	MaxDepth int `toml:"max_depth"`
	// MaxTurns bounds the model calls of each sub-episode, the calls of the sub-episodes it runs included; past it
	// the sub-episode ends truncated (max_turns) and the call gets an error result. 0: DefaultSubAgentMaxTurns.
	MaxTurns int `toml:"max_turns"`
	// MaxTokens is each sub-episode's response budget (its max_response_tokens). 0: the sub-agent's own.
	MaxTokens int `toml:"max_tokens"`
}

// DefaultSubAgentMaxTurns is a sub-agent tool's max_turns when the entry sets none.
const DefaultSubAgentMaxTurns = 16

// Depth is the entry's max_depth, its default applied.
func (s *SubAgent) Depth() int { return max(s.MaxDepth, 1) }

// Turns is the entry's max_turns, its default applied.
func (s *SubAgent) Turns() int {
	if s.MaxTurns == 0 {
		return DefaultSubAgentMaxTurns
	}
	return s.MaxTurns
}

// FunctionName is the function the model calls.
func (s *SubAgent) FunctionName() string {
	if s.Tool != "" {
		return s.Tool
	}
	return s.Name
}

var functionNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// validateSubAgents checks every sub-agent tool entry: nothing else in the entry, a known agent on the caller's
// model, a function name, limits >= 0. A cycle (an agent that runs itself, or two that run each other) is not an
// error: max_depth ends it at run time.
func (c *Config) validateSubAgents() error {
	for i := range c.Agents {
		a := &c.Agents[i]
		for _, p := range a.Tools {
			s := p.Agent
			if s == nil {
				continue
			}
			at := ""
			if p.At != "" {
				at = p.At + ": "
			}
			if p.Plugin != "" || p.Command != nil || p.MCP != nil || p.Env != nil || p.HTTP != nil || len(p.Only) > 0 || p.Config != nil {
				return &FieldError{"agent.tools.agent", fmt.Sprintf("%sagent %q: a sub-agent tool entry takes no plugin, command, mcp, env, http, only or config", at, a.Name)}
			}
			if s.Name == "" {
				return &FieldError{"agent.tools.agent.name", fmt.Sprintf("%sagent %q: a sub-agent tool names no agent", at, a.Name)}
			}
			sub, err := c.Agent(s.Name)
			if err != nil {
				return &FieldError{"agent.tools.agent.name", fmt.Sprintf("%sagent %q: sub-agent tool: no agent %q", at, a.Name, s.Name)}
			}
			if sub.Model != a.Model || sub.Revision != a.Revision || sub.ChatTemplate != a.ChatTemplate || !reflect.DeepEqual(sub.ChatTemplateKwargs, a.ChatTemplateKwargs) {
				return &FieldError{"agent.tools.agent.name", fmt.Sprintf("%sagent %q: sub-agent %q must use the same model, revision, chat_template and chat_template_kwargs (its samples are samples of the caller's trajectory)", at, a.Name, s.Name)}
			}
			if a.MaskOffPolicy || sub.MaskOffPolicy {
				return &FieldError{"agent.mask_offpolicy", fmt.Sprintf("%sagent %q: mask_offpolicy is not supported with sub-agent tools yet (it masks one chain)", at, a.Name)}
			}
			if !functionNameRe.MatchString(s.FunctionName()) {
				return &FieldError{"agent.tools.agent.tool", fmt.Sprintf("%sagent %q: sub-agent tool name %q: want letters, digits, _ . - (at most 64)", at, a.Name, s.FunctionName())}
			}
			switch {
			case s.MaxDepth < 0:
				return &FieldError{"agent.tools.agent.max_depth", fmt.Sprintf("%sagent %q: sub-agent %q: max_depth must be >= 1 (0: 1)", at, a.Name, s.Name)}
			case s.MaxTurns < 0:
				return &FieldError{"agent.tools.agent.max_turns", fmt.Sprintf("%sagent %q: sub-agent %q: max_turns must be >= 1 (0: %d)", at, a.Name, s.Name, DefaultSubAgentMaxTurns)}
			case s.MaxTokens < 0:
				return &FieldError{"agent.tools.agent.max_tokens", fmt.Sprintf("%sagent %q: sub-agent %q: max_tokens must be >= 0 (0: the sub-agent's max_response_tokens)", at, a.Name, s.Name)}
			}
		}
	}
	return nil
}
