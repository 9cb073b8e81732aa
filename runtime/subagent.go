package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/turn"
	"github.com/agentrt/agentrt/tito"
)

// ReasonMaxTurns: a sub-agent's episode reached the max_turns of the tool that ran it (or of a tool that ran an
// episode it is part of).
const ReasonMaxTurns = "max_turns"

// SubAgentLimits bound the episodes a sub-agent tool runs.
type SubAgentLimits struct {
	// MaxDepth is the deepest a sub-episode the tool starts may be: the top-level episode is at depth 0, the
	// episodes its sub-agent calls run at depth 1, theirs at 2. A call that would start one deeper is refused with
	// an error result (no episode runs), so a sub-agent may call itself and the recursion still ends.
	MaxDepth int
	// MaxTurns bounds the model calls of the sub-episode, those of the sub-episodes it runs in turn included
	// (0: no bound of its own); past it the sub-episode ends truncated with reason max_turns.
	MaxTurns int
	// MaxTokens is the sub-episode's response budget (its max_response_tokens: the tokens after its first prompt;
	// 0: the sub-agent's own).
	MaxTokens int
}

// SubAgent is a tool that runs another agent on a sub-task: the model calls it with a "task" string; the agent's
// episode runs with that task as its user message (after its own system prompt), on the same model, in the same
// group; its final answer (the content of its last reply, without reasoning) is the call's result; its samples
// become samples of the calling episode's trajectory (tito.Trajectory.AddSubSamples), whatever ended it. A
// sub-episode that does not complete (a limit, truncation, an error, a cancelled parent) gives an error result
// saying how it ended. The calling episode's cancellation and the call's timeout end the sub-episode.
type SubAgent struct {
	// Agent is the sub-agent's name. Resolve returns it: agents are built one after the other and may name each
	// other or themselves, so it is looked up when a call runs.
	Agent   string
	Resolve func() (*Agent, error)
	Limits  SubAgentLimits
}

// Call is refused: a sub-agent runs inside an episode only (the loop calls it through the episode).
func (s *SubAgent) Call(context.Context, string, json.RawMessage) (abi.ToolResult, error) {
	return abi.ToolResult{}, fmt.Errorf("sub-agent %s: runs only inside an episode", s.Agent)
}

// SubAgentSpec is the function spec of a sub-agent tool: one required "task" string.
func SubAgentSpec(name, description string) json.RawMessage {
	spec := map[string]any{"type": "function", "function": map[string]any{
		"name": name, "description": description,
		"parameters": map[string]any{"type": "object", "required": []string{"task"}, "properties": map[string]any{
			"task": map[string]any{"type": "string", "description": "The sub-task, with everything the agent needs to know to do it."}}},
	}}
	b, err := json.Marshal(spec)
	if err != nil {
		panic("runtime: sub-agent spec: " + err.Error()) // a map of strings: a bug, not input
	}
	return b
}

// checkSubAgents checks an agent's sub-agent tools (at NewAgent).
func checkSubAgents(name string, tools []ToolBinding) error {
	for _, tb := range tools {
		s, ok := tb.Tool.(*SubAgent)
		if !ok {
			continue
		}
		if s.Resolve == nil || s.Agent == "" {
			return fmt.Errorf("runtime: agent %q: sub-agent tool %s names no agent", name, tb.Plugin)
		}
		if s.Limits.MaxDepth < 1 || s.Limits.MaxTurns < 0 || s.Limits.MaxTokens < 0 {
			return fmt.Errorf("runtime: agent %q: sub-agent tool %s: max_depth must be >= 1, max_turns and max_tokens >= 0", name, tb.Plugin)
		}
	}
	return nil
}

// subRun is what a sub-agent's episode knows of where it runs: its depth, and the turn budgets of the tools that
// ran it and the episodes above it (each counts every model call below it).
type subRun struct {
	depth   int
	budgets []*turnBudget
}

type turnBudget struct {
	used  atomic.Int64
	max   int64
	agent string
}

// subResult is a sub-agent call's episode, for the calling episode to record.
type subResult struct {
	traj *tito.Trajectory
	link tito.SubLink
}

// depth is the episode's depth (0: a top-level episode).
func (e *episode) depth() int {
	if e.ep.sub == nil {
		return 0
	}
	return e.ep.sub.depth
}

// takeSubTurn counts a model call against the turn budgets of the sub-agent tools above the episode; past one, the
// episode ends truncated (ReasonMaxTurns) and it reports false.
func (e *episode) takeSubTurn() bool {
	if e.ep.sub == nil {
		return true
	}
	for _, b := range e.ep.sub.budgets {
		if n := b.used.Add(1); n > b.max {
			e.finish(StatusTruncated, ReasonMaxTurns, fmt.Sprintf("sub-agent %s reached max_turns %d", b.agent, b.max))
			return false
		}
	}
	return true
}

// runSubAgent runs call c (the i-th of the turn) of sub-agent tool st: the result is the sub-episode's final answer
// or an error result saying why there is none; c.sub keeps the sub-episode for addSubSamples. An error is returned
// only when ctx ended (the call's timeout or the parent's end), with the error result.
func (e *episode) runSubAgent(ctx context.Context, st *SubAgent, c *call, i int) (abi.ToolResult, error) {
	depth := e.depth() + 1
	if depth > st.Limits.MaxDepth {
		return errorResult(fmt.Sprintf("Error: sub-agent %s refused: it would run at depth %d, past max_depth %d", st.Agent, depth, st.Limits.MaxDepth)), nil
	}
	var args struct {
		Task *string `json:"task"`
	}
	if err := json.Unmarshal(json.RawMessage(c.tc.Arguments), &args); err != nil || args.Task == nil || strings.TrimSpace(*args.Task) == "" {
		return errorResult(fmt.Sprintf("Error: sub-agent %s needs a \"task\": a non-empty string", st.Agent)), nil
	}
	sub, err := st.Resolve()
	if err == nil && sub == nil {
		err = fmt.Errorf("no agent %q is built", st.Agent)
	}
	if err != nil {
		return errorResult(fmt.Sprintf("Error: sub-agent %s: %v", st.Agent, err)), nil
	}
	if err := e.a.sameModel(sub); err != nil {
		return errorResult(fmt.Sprintf("Error: sub-agent %s: %v", st.Agent, err)), nil
	}
	run := &subRun{depth: depth}
	if e.ep.sub != nil {
		run.budgets = slices.Clone(e.ep.sub.budgets)
	}
	if st.Limits.MaxTurns > 0 {
		run.budgets = append(run.budgets, &turnBudget{max: int64(st.Limits.MaxTurns), agent: st.Agent})
	}
	id := fmt.Sprintf("%s/%d.%d", e.ep.ID, e.counts.ModelCalls-1, i)
	tr := sub.Run(ctx, Episode{ID: id, ItemID: e.ep.ItemID, GroupID: e.ep.GroupID, SampleIndex: e.ep.SampleIndex,
		Messages: []tito.Message{{Role: tito.RoleUser, Content: *args.Task}}, MaxResponseTokens: st.Limits.MaxTokens, sub: run})
	c.sub = &subResult{traj: tr, link: tito.SubLink{Episode: id, Agent: st.Agent, CallID: c.tc.ID, Tools: sub.toolSpecs}}
	if tr.Status == StatusCompleted && tr.StatusReason == "" {
		answer := finalAnswer(sub, tr)
		return abi.ToolResult{Text: &answer}, nil
	}
	how := tr.Status
	if tr.StatusReason != "" {
		how += " (" + tr.StatusReason + ")"
	}
	if detail := tr.Error + tr.StopMessage; detail != "" {
		how += ": " + detail
	}
	res := errorResult(fmt.Sprintf("Error: sub-agent %s did not finish the task: %s", st.Agent, how))
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// finalAnswer is the content of a completed episode's last reply, without its reasoning.
func finalAnswer(a *Agent, tr *tito.Trajectory) string {
	var msgs []tito.Message
	if err := json.Unmarshal(tr.Messages, &msgs); err != nil || len(msgs) == 0 {
		return ""
	}
	_, content := turn.SplitReasoning(a.m.Reasoning, msgs[len(msgs)-1].Content)
	return content
}

// sameModel checks that sub runs on a's model as a's trajectories record it (tokenizer, chat template and its
// kwargs): its samples are samples of a's trajectory.
func (a *Agent) sameModel(sub *Agent) error {
	for _, k := range []string{tito.ProvTokenizerSHA256, tito.ProvTemplateSHA256} {
		if x, y := a.d.Provenance[k], sub.d.Provenance[k]; x != y {
			return fmt.Errorf("agent %q runs with %s %v, the calling agent with %v: a sub-agent must use the caller's model", sub.cfg.Name, k, y, x)
		}
	}
	if !reflect.DeepEqual(a.m.Kwargs, sub.m.Kwargs) {
		return fmt.Errorf("agent %q renders with chat_template_kwargs %v, the calling agent with %v: a sub-agent must use the caller's", sub.cfg.Name, sub.m.Kwargs, a.m.Kwargs)
	}
	return nil
}

// addSubSamples records the sub-episodes the turn's calls ran (in call order) as samples of the episode's
// trajectory: every one that has a response, however it ended. A sub-episode whose trajectory is not valid is left
// out with a warning (its status says why: it failed on an invariant).
func (e *episode) addSubSamples(calls []*call) {
	for _, c := range calls {
		if c.sub == nil {
			continue
		}
		tr := c.sub.traj
		e.traj.SetMetric("subagent.episodes", e.traj.Metrics["subagent.episodes"]+1)
		e.traj.SetMetric("subagent.turns", e.traj.Metrics["subagent.turns"]+tr.Metrics["turns"])
		if tr.Turns() == 0 {
			continue // no response: nothing the model generated to keep
		}
		if err := tr.Validate(); err != nil {
			e.warnings = append(e.warnings, fmt.Sprintf("sub-agent %s (%s): its samples are not kept: %v", c.sub.link.Agent, c.sub.link.Episode, err))
			continue
		}
		all := tr.AllSamples()
		if err := e.traj.AddSubSamples(all, c.sub.link); err != nil {
			e.warnings = append(e.warnings, fmt.Sprintf("sub-agent %s (%s): its samples are not kept: %v", c.sub.link.Agent, c.sub.link.Episode, err))
			continue
		}
		e.traj.SetMetric("subagent.samples", e.traj.Metrics["subagent.samples"]+float64(len(all)))
	}
}
