package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// subScript is an emulator script of several conversations (key -> replies).
func subScript(t *testing.T, convs map[string][]string) *emulator.Script {
	t.Helper()
	var b bytes.Buffer
	for key, replies := range convs {
		line, err := json.Marshal(map[string]any{"key": key, "replies": replies})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	sc, err := emulator.ParseScript(&b)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// toolCall is a Qwen3 (hermes) tool call of name with args.
func toolCall(name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return "<tool_call>\n" + string(b) + "\n</tool_call>"
}

// subAgents is a lead agent that has the "coder" agent as a tool (leadLimits), and the coder, which has the
// calculator and itself as a tool (max_depth 1: a coder running as a sub-agent cannot run itself).
func subAgents(leadLimits config.SubAgent) (lead, coder config.Agent) {
	lead = defaultAgent()
	lead.Name = "lead"
	lead.SystemPrompt = "You lead. Hand sub-tasks to the coder."
	leadLimits.Name = "coder"
	lead.Tools = []config.Plugin{{Agent: &leadLimits}}
	coder = defaultAgent()
	coder.Name = "coder"
	coder.SystemPrompt = "You are the coder. Use the calculator."
	coder.Tools = []config.Plugin{{Plugin: "builtin:calculator"}, {Agent: &config.SubAgent{Name: "coder", MaxDepth: 1}}}
	return lead, coder
}

// newSubHarness runs the agents on one emulator (scripted by sc); h.agent is the first. The agents find each other
// by name, as a System's do.
func newSubHarness(t *testing.T, sc *emulator.Script, acs ...config.Agent) *harness {
	t.Helper()
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	h := newHarnessWith(t, ec, defaultAgent(), fastRetry(), nil, emulator.WithScript(sc))
	cfg := &config.Config{Agents: acs}
	agents := map[string]*runtime.Agent{}
	lookup := func(name string) (*runtime.Agent, error) {
		ac, err := cfg.Agent(name)
		if err != nil {
			return nil, err
		}
		return agents[ac.Name], nil
	}
	for _, ac := range acs {
		a, err := system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: h.client, Model: qwen3,
			MaxModelLen: func(ctx context.Context) (int, error) { return h.client.MaxModelLen(ctx, "") }, Server: h.srv.URL, Agents: lookup})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(context.Background()) })
		agents[ac.Name] = a
	}
	h.agent = agents[acs[0].Name]
	return h
}

// toolResults are the contents of the tool messages of a trajectory's conversation.
func toolResults(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	msgs, err := tito.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Role == tito.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// roundTrip writes the trajectory's JSON and reads it back, valid and with the same samples.
func roundTrip(t *testing.T, tr *tito.Trajectory) {
	t.Helper()
	b, err := tr.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back tito.Trajectory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("read back: %v", err)
	}
	all, got := tr.AllSamples(), back.AllSamples()
	if len(got) != len(all) {
		t.Fatalf("read back %d samples, want %d", len(got), len(all))
	}
	for k := range all {
		if got[k].SampleOrigin != all[k].SampleOrigin || len(got[k].Tools) != len(all[k].Tools) || len(got[k].TokenIDs) != len(all[k].TokenIDs) {
			t.Errorf("sample %d read back as %+v, want %+v", k, got[k].SampleOrigin, all[k].SampleOrigin)
		}
	}
}

// TestSubAgentTwoCalls: a lead that hands two sub-tasks to the coder (which uses the calculator in the first)
// completes; each sub-episode's final answer is the call's result; the sub-episodes' turns are samples of the lead's
// trajectory (reason subagent, linked to the lead's chain and call, depth 1, the coder's tools), listed before the
// lead's own chain, which stays one prefix chain; every sample is proven against the emulator's log.
func TestSubAgentTwoCalls(t *testing.T) {
	sc := subScript(t, map[string][]string{
		"lead": {
			"Let me delegate.\n" + toolCall("coder", map[string]any{"task": "[script:sub1] Compute 6*7."}),
			"Now the second part.\n" + toolCall("coder", map[string]any{"task": "[script:sub2] Say hello."}),
			"Both parts are done: 42 and hello.",
		},
		"sub1": {"I will use the calculator.\n" + toolCall("calculator", map[string]any{"expression": "6*7"}), "The result is 42."},
		"sub2": {"Hello from the coder."},
	})
	lead, coder := subAgents(config.SubAgent{MaxDepth: 1})
	h := newSubHarness(t, sc, lead, coder)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "sa", ItemID: "sa", GroupID: "sa",
		Messages: []tito.Message{{Role: "user", Content: "[script:lead] Do both parts."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if got := toolResults(t, tr.Messages); len(got) != 2 || got[0] != "The result is 42." || got[1] != "Hello from the coder." {
		t.Fatalf("the lead's tool results are %q, want the coder's two final answers", got)
	}
	if tr.SampleCount() != 3 || tr.Turns() != 3 {
		t.Fatalf("%d samples, the lead's chain %d turns; want 3 (two sub-episodes, the lead's) and 3", tr.SampleCount(), tr.Turns())
	}
	s1, s2 := tr.Samples[0], tr.Samples[1]
	for k, s := range []tito.Sample{s1, s2} {
		want := fmt.Sprintf("sa/%d.0", k)
		if s.Reason != tito.SampleSubAgent || s.Parent != 2 || s.Depth != 1 || s.Agent != "coder" || s.Episode != want ||
			s.BranchTurn != k+1 || s.CallID == "" || len(s.Tools) != 2 {
			t.Errorf("sub-sample %d: %+v (%d tools), want a subagent sample of episode %s under sample 2 at its turn %d", k, s.SampleOrigin, len(s.Tools), want, k+1)
		}
	}
	if got := len(s1.Segments) / 2; got != 2 {
		t.Errorf("the first sub-episode's sample has %d turns, want 2 (calculator, answer)", got)
	}
	if cur := tr.CurrentSample(); cur.Parent != -1 || cur.Episode != "" || tr.Tools == nil {
		t.Errorf("the lead's chain %+v", cur.SampleOrigin)
	}
	if tr.Metrics["subagent.episodes"] != 2 || tr.Metrics["subagent.samples"] != 2 || tr.Metrics["subagent.turns"] != 3 || tr.Metrics["samples"] != 3 {
		t.Errorf("metrics %v", tr.Metrics)
	}
	h.checkSamples(t, tr)
	roundTrip(t, tr)
}

// TestSubAgentDepthLimit: the coder, run as a sub-agent, calls itself: past its tool's max_depth the call is an
// error result (no episode runs), the coder answers anyway, and the lead's episode completes.
func TestSubAgentDepthLimit(t *testing.T) {
	sc := subScript(t, map[string][]string{
		"lead":  {toolCall("coder", map[string]any{"task": "[script:rec] Split the work."}), "Done."},
		"rec":   {toolCall("coder", map[string]any{"task": "[script:never] The half."}), "I could not split it; the answer is 42."},
		"never": {"This reply is never asked for."},
	})
	lead, coder := subAgents(config.SubAgent{MaxDepth: 2})
	h := newSubHarness(t, sc, lead, coder)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "dl", ItemID: "dl", GroupID: "dl",
		Messages: []tito.Message{{Role: "user", Content: "[script:lead] Go."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if got := toolResults(t, tr.Messages); len(got) != 1 || got[0] != "I could not split it; the answer is 42." {
		t.Fatalf("the lead's tool results %q", got)
	}
	sub, err := tito.DecodeMessages(tr.Samples[0].Messages)
	if err != nil {
		t.Fatal(err)
	}
	var refusal string
	for _, m := range sub {
		if m.Role == tito.RoleTool {
			refusal = m.Content
		}
	}
	if !strings.Contains(refusal, "sub-agent coder refused: it would run at depth 2, past max_depth 1") {
		t.Errorf("the coder's own call got %q, want the depth refusal", refusal)
	}
	for _, r := range h.log.records(t) {
		if strings.HasPrefix(r.RID, "dl/0.0/") {
			t.Errorf("a refused sub-agent call reached the server: %s", r.RID)
		}
	}
	if tr.SampleCount() != 2 || tr.Samples[0].Episode != "dl/0.0" {
		t.Fatalf("%d samples, want the coder's and the lead's", tr.SampleCount())
	}
	h.checkSamples(t, tr)
	roundTrip(t, tr)
}

// TestSubAgentMaxTurns: a sub-episode that reaches its tool's max_turns ends truncated (max_turns); the call's
// result is an error saying so, the turns it made are kept as its sample, and the lead goes on to complete.
func TestSubAgentMaxTurns(t *testing.T) {
	calc := func(i int) string {
		return toolCall("calculator", map[string]any{"expression": fmt.Sprintf("%d*3", i)})
	}
	sc := subScript(t, map[string][]string{
		"lead": {toolCall("coder", map[string]any{"task": "[script:long] Many steps."}), "The coder ran out of turns; I stop."},
		"long": {calc(1), calc(2), calc(3), calc(4), "Finished."},
	})
	lead, coder := subAgents(config.SubAgent{MaxTurns: 2})
	h := newSubHarness(t, sc, lead, coder)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "mt", ItemID: "mt", GroupID: "mt",
		Messages: []tito.Message{{Role: "user", Content: "[script:lead] Go."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	got := toolResults(t, tr.Messages)
	if len(got) != 1 || !strings.Contains(got[0], "Error: sub-agent coder did not finish the task: truncated (max_turns): sub-agent coder reached max_turns 2") {
		t.Fatalf("the lead's tool result %q, want the max_turns error", got)
	}
	if tr.SampleCount() != 2 || len(tr.Samples[0].Segments)/2 != 2 {
		t.Fatalf("%d samples; the sub-episode's must keep its 2 turns", tr.SampleCount())
	}
	if tr.Metrics["tool_calls.error"] != 1 {
		t.Errorf("tool_calls.error %v, want 1", tr.Metrics["tool_calls.error"])
	}
	h.checkSamples(t, tr)
}

// TestSubAgentCancel: cancelling the lead's episode while its sub-agent call runs aborts the sub-episode (no model
// call of it is made once cancelled) and the lead's episode ends aborted.
func TestSubAgentCancel(t *testing.T) {
	sc := subScript(t, map[string][]string{
		"lead": {toolCall("coder", map[string]any{"task": "[script:sub1] Compute."}), "Done."},
		"sub1": {"The result is 42."},
	})
	lead, coder := subAgents(config.SubAgent{})
	h := newSubHarness(t, sc, lead, coder)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := h.agent.Run(ctx, runtime.Episode{ID: "cx", ItemID: "cx", GroupID: "cx",
		Messages: []tito.Message{{Role: "user", Content: "[script:lead] Go."}},
		Events: func(ev runtime.Event) {
			if ev.Kind == runtime.EventToolCall && ev.Name == "coder" {
				cancel()
			}
		}})
	wantStatus(t, tr, runtime.StatusAborted, runtime.ReasonAbortedByRequest)
	for _, r := range h.log.records(t) {
		if strings.HasPrefix(r.RID, "cx/") && r.Status == 200 {
			t.Errorf("the sub-episode's call %s was served after the cancel", r.RID)
		}
	}
	if tr.Metrics["subagent.episodes"] != 1 || tr.MultiSample() {
		t.Errorf("subagent.episodes %v, %d samples: the aborted sub-episode ran and has no sample", tr.Metrics["subagent.episodes"], tr.SampleCount())
	}
}

// TestSubAgentParallelCalls: two sub-agent calls of one reply run concurrently; their samples are added in the
// reply's call order, and the second call's episode is named by its position.
func TestSubAgentParallelCalls(t *testing.T) {
	sc := subScript(t, map[string][]string{
		"lead": {"Both at once.\n" + toolCall("coder", map[string]any{"task": "[script:p1] One."}) + "\n" +
			toolCall("coder", map[string]any{"task": "[script:p2] Two."}), "Done."},
		"p1": {toolCall("calculator", map[string]any{"expression": "2*3"}), "Six."},
		"p2": {"Two is done."},
	})
	lead, coder := subAgents(config.SubAgent{})
	h := newSubHarness(t, sc, lead, coder)
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "pc", ItemID: "pc", GroupID: "pc",
		Messages: []tito.Message{{Role: "user", Content: "[script:lead] Go."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if got := toolResults(t, tr.Messages); len(got) != 2 || got[0] != "Six." || got[1] != "Two is done." {
		t.Fatalf("the lead's tool results %q", got)
	}
	if tr.SampleCount() != 3 || tr.Samples[0].Episode != "pc/0.0" || tr.Samples[1].Episode != "pc/0.1" ||
		tr.Samples[0].BranchTurn != 1 || tr.Samples[1].BranchTurn != 1 || tr.Samples[0].CallID == tr.Samples[1].CallID {
		t.Fatalf("samples %+v / %+v", tr.Samples[0].SampleOrigin, tr.Samples[1].SampleOrigin)
	}
	h.checkSamples(t, tr)
}
