package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// longScript is a scripted task of n turns for Qwen3 with thinking: each reply thinks, says its [turn:N] (so the
// emulator's script goes on after the agent drops old turns) and calls the calculator, the last one answers.
func longScript(t *testing.T, key string, n int) *emulator.Script {
	t.Helper()
	words := strings.Fields("the agent reads the long task again and plans its next step with care before it calls the tool")
	replies := make([]string, n)
	for i := range n - 1 {
		think := strings.Repeat(strings.Join(words, " ")+", then ", 4) + strings.Join(words[:8+i%(len(words)-8)], " ")
		replies[i] = fmt.Sprintf("<think>\nStep %d: %s.\n</think>\n\n[turn:%d] Working on part %d of the task.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"%d*7+%d\"}}\n</tool_call>", i, think, i, i, i+2, i)
	}
	replies[n-1] = fmt.Sprintf("<think>\nAll parts are done.\n</think>\n\n[turn:%d] The answer is 42.", n-1)
	line, err := json.Marshal(map[string]any{"key": key, "replies": replies})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := emulator.ParseScript(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// compactingAgent is a Qwen3 thinking agent with a 4k context window that keeps the last keep turns once its
// context passes maxTokens.
func compactingAgent(maxTokens, keep int) config.Agent {
	ac := defaultAgent()
	ac.ContextWindow = 4096
	ac.ChatTemplateKwargs = map[string]any{"enable_thinking": true}
	ac.Sampling.MaxNewTokens = 512
	ac.Hooks = []config.Plugin{{Plugin: "builtin:limiter", Config: map[string]any{"max_tool_iters": 200, "max_tool_calls": 400, "max_messages": 1000}}}
	ac.Context = config.Context{Policy: config.ContextKeepLast, MaxTokens: maxTokens, KeepTurns: keep}
	return ac
}

// TestCompactionLongEpisode: an agent whose context window is 4k tokens completes a 60-turn task through
// keep_last compaction. The episode is one trajectory of several samples sharing its id and reward; every sample
// is a prefix chain that the emulator's log proves token-exact (checkSamples), no sample passes the window, and
// each later sample's first prompt is the template's full render of the messages it records.
func TestCompactionLongEpisode(t *testing.T) {
	const turns = 60
	sc := longScript(t, "long", turns)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := compactingAgent(3000, 3)
	h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "lh", ItemID: "lh", GroupID: "lh",
		Messages: []tito.Message{{Role: "user", Content: "[script:long] Work through all sixty parts of the task."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if got := tr.Metrics["turns"]; got != turns {
		t.Fatalf("%v model calls, want %d", got, turns)
	}
	for _, s := range tr.AllSamples() {
		t.Logf("sample %d: %d tokens, %d turns from %d, prompt %d tokens", s.Index, len(s.TokenIDs), len(s.Segments)/2, s.FirstTurn, s.Segments[0].Length)
	}
	if tr.SampleCount() < 3 {
		t.Fatalf("%d samples: a 60-turn episode in a 4k window must compact more than once", tr.SampleCount())
	}
	if tr.Metrics["samples"] != float64(tr.SampleCount()) || tr.Metrics["context.compactions"] != float64(tr.SampleCount()-1) {
		t.Errorf("metrics samples %v, compactions %v; the episode has %d samples", tr.Metrics["samples"], tr.Metrics["context.compactions"], tr.SampleCount())
	}
	h.checkSamples(t, tr)
	for _, s := range tr.AllSamples() {
		if len(s.TokenIDs) > ac.ContextWindow {
			t.Errorf("sample %d has %d tokens, past the %d-token window", s.Index, len(s.TokenIDs), ac.ContextWindow)
		}
	}
	// Every sample's prompt keeps the first messages (system prompt, task) and then exactly keep_turns turns.
	first, err := tito.DecodeMessages(tr.Samples[0].Messages)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.AllSamples()[1:] {
		msgs, err := tito.DecodeMessages(s.Messages)
		if err != nil {
			t.Fatal(err)
		}
		if msgs[0].Content != first[0].Content || msgs[1].Content != first[1].Content || msgs[1].Role != "user" {
			t.Errorf("sample %d does not keep the system prompt and the task", s.Index)
		}
		turns := 0
		for _, m := range msgs[2:s.PromptMessages] {
			if m.Role == tito.RoleAssistant {
				turns++
				if strings.Contains(m.Content, "<tool_call>") || len(m.ToolCalls) != 1 {
					t.Errorf("sample %d: a kept assistant message writes its call in its text (%q) or has %d tool_calls", s.Index, m.Content, len(m.ToolCalls))
				}
			}
		}
		if turns != ac.Context.KeepTurns {
			t.Errorf("sample %d's prompt keeps %d turns, want %d", s.Index, turns, ac.Context.KeepTurns)
		}
	}
	var final []tito.Message
	if err := json.Unmarshal(tr.Messages, &final); err != nil {
		t.Fatal(err)
	}
	if last := final[len(final)-1]; !strings.Contains(last.Content, "The answer is 42.") {
		t.Errorf("the last message is %q, want the scripted answer", last.Content)
	}
	b, err := tr.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back tito.Trajectory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil || back.SampleCount() != tr.SampleCount() {
		t.Fatalf("read back: %v, %d samples", err, back.SampleCount())
	}
}

// TestCompactionResponseBudget: max_response_tokens is the episode's, counted over its samples (each sample's
// response: every token after its first prompt); the episode ends truncated/response_budget on a model token.
func TestCompactionResponseBudget(t *testing.T) {
	const budget = 5000
	sc := longScript(t, "budget", 60)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := compactingAgent(3000, 3)
	ac.MaxResponseTokens = budget
	h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "bud", ItemID: "bud", GroupID: "bud",
		Messages: []tito.Message{{Role: "user", Content: "[script:budget] Work through all sixty parts of the task."}}})
	wantStatus(t, tr, runtime.StatusTruncated, runtime.ReasonResponseBudget)
	if tr.SampleCount() < 2 {
		t.Fatalf("%d samples: the budget must outlast a compaction", tr.SampleCount())
	}
	h.checkSamples(t, tr)
	resp := 0
	for _, s := range tr.AllSamples() {
		resp += len(s.TokenIDs) - s.Segments[0].Length
	}
	if resp > budget || resp < budget-600 {
		t.Errorf("the samples' responses add up to %d tokens, want at most the budget %d (and near it)", resp, budget)
	}
	if tr.LossMask[len(tr.LossMask)-1] != 1 {
		t.Errorf("the episode does not end on a model token")
	}
}

// TestCompactionNotNeeded: below the threshold, a compacting agent's episode is one chain, written as one.
func TestCompactionNotNeeded(t *testing.T) {
	sc := longScript(t, "short", 3)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	h := newHarnessWith(t, ec, compactingAgent(3000, 2), fastRetry(), nil, emulator.WithScript(sc))
	tr := h.run(t, "short", "[script:short] Three parts.")
	wantStatus(t, tr, runtime.StatusCompleted, "")
	b, err := tr.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.MultiSample() || bytes.Contains(b, []byte(`"samples"`)) || bytes.Contains(b, []byte(`"tools"`)) || tr.Metrics["samples"] != 0 {
		t.Fatalf("a one-chain episode wrote samples: %d samples", tr.SampleCount())
	}
}

// checkSamples proves each sample of a (possibly multi-sample) trajectory from the server's side, as check does
// for one chain: every /generate request of the episode is claimed by exactly one sample's turn (by its rid), each
// sample's requests extend each other (the prefix invariant within the sample), a sample's first request sends its
// first prompt with logprob_start_len -1, response segments are the served output_ids verbatim, each sample ends
// on its last request + output, logprobs are the emulator's scoring function; and a later sample's first prompt is
// the chat template's full render of its recorded messages[:prompt_messages] with the episode's tools (a
// sub-agent's sample: its own tools; its model calls' rids are its episode's, which the first sample renders too);
// and the drift audit covers every sample's responses.
func (h *harness) checkSamples(t *testing.T, tr *tito.Trajectory) {
	t.Helper()
	if err := tr.Validate(); err != nil {
		t.Fatalf("%s: %v", tr.ID, err)
	}
	type served struct {
		req    wireReq
		resp   wireResp
		claims int
	}
	byRID := map[string]*served{}
	for _, r := range h.log.records(t) {
		if r.Path != "/generate" || r.Status != 200 || r.Fault != "" || (!strings.HasPrefix(r.RID, tr.ID+".") && !strings.HasPrefix(r.RID, tr.ID+"/")) {
			continue
		}
		s := &served{}
		if err := json.Unmarshal(r.Request, &s.req); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Response, &s.resp); err != nil {
			t.Fatal(err)
		}
		byRID[r.RID] = s
	}
	m := h.agent.Model()
	responses := 0
	for _, smp := range tr.AllSamples() {
		var prev *served
		for _, seg := range smp.Segments {
			if seg.Kind != tito.KindResponse {
				continue
			}
			responses++
			if seg.Drift == nil {
				t.Errorf("sample %d turn %d: the drift audit skipped the response", smp.Index, seg.Turn)
			}
			s := byRID[seg.Info.RID]
			if s == nil {
				t.Fatalf("sample %d turn %d: rid %q is not in the server's log", smp.Index, seg.Turn, seg.Info.RID)
			}
			s.claims++
			episode := tr.ID
			if smp.Episode != "" {
				episode = smp.Episode
			}
			if want := fmt.Sprintf("%s.%d", episode, smp.FirstTurn+seg.Turn); seg.Info.RID != want {
				t.Errorf("sample %d turn %d has rid %q, want %q (the episode's call %d)", smp.Index, seg.Turn, seg.Info.RID, want, smp.FirstTurn+seg.Turn)
			}
			if !equalIDs(s.req.InputIDs, smp.TokenIDs[:seg.Offset]) || !equalIDs(s.resp.OutputIDs, smp.TokenIDs[seg.Offset:seg.Offset+seg.Length]) {
				t.Fatalf("sample %d turn %d: the served request + output is not the sample's tokens up to the segment's end", smp.Index, seg.Turn)
			}
			if prev == nil && s.req.LogprobStartLen != -1 {
				t.Errorf("sample %d: first request logprob_start_len %d, want -1", smp.Index, s.req.LogprobStartLen)
			}
			if prev != nil && s.req.LogprobStartLen != len(prev.req.InputIDs)+len(prev.resp.OutputIDs)-1 {
				t.Errorf("sample %d turn %d: logprob_start_len %d does not start at the new prompt tokens", smp.Index, seg.Turn, s.req.LogprobStartLen)
			}
			prev = s
		}
		if prev == nil || len(prev.req.InputIDs)+len(prev.resp.OutputIDs) != len(smp.TokenIDs) {
			t.Fatalf("sample %d does not end on its last request + output", smp.Index)
		}
		first := smp.Segments[0].Length
		for p := first; p < len(smp.TokenIDs); p++ {
			if want := emulator.Logprob(smp.TokenIDs[max(0, p-emulator.LogprobWindow):p], smp.TokenIDs[p]); smp.Logprobs[p] != want {
				t.Fatalf("sample %d: logprob[%d] = %v, the emulator gives %v", smp.Index, p, smp.Logprobs[p], want)
			}
		}
		if smp.Episode == "" && smp.Parent == -1 {
			continue
		}
		msgs, err := tito.DecodeMessages(smp.Messages)
		if err != nil {
			t.Fatal(err)
		}
		tools := tr.Tools
		if smp.Tools != nil {
			tools = smp.Tools
		}
		o := m.RenderOptions(tools)
		o.Kwargs = tr.TemplateKwargs
		text, err := m.Template.Render(msgs[:smp.PromptMessages], o)
		if err != nil {
			t.Fatal(err)
		}
		if !equalIDs(m.Tokenizer.Encode(text, false), smp.TokenIDs[:first]) {
			t.Errorf("sample %d: the first prompt is not the template's full render of its %d prompt messages", smp.Index, smp.PromptMessages)
		}
	}
	if tr.Drift == nil || tr.Drift.Audited != responses {
		t.Errorf("the drift audit's summary %+v does not cover the episode's %d responses", tr.Drift, responses)
	}
	for rid, s := range byRID {
		if s.claims != 1 {
			t.Errorf("request %s is claimed by %d sample turns, want exactly 1", rid, s.claims)
		}
	}
}

// TestAsDeployedHistory: with history "as-deployed" every turn's prompt is the template's full render of the
// conversation so far (reasoning in reasoning_content, calls in tool_calls), so each turn after the first is a sample
// of its own, proven against the server's log like any sample.
func TestAsDeployedHistory(t *testing.T) {
	const turns = 6
	// The model writes its calls' JSON without spaces on odd turns: Qwen3's template writes them with, so a full
	// render rewrites those turns, and the next prompt does not extend the tokens as generated.
	replies := make([]string, turns)
	for i := range turns - 1 {
		call := fmt.Sprintf(`{"name": "calculator", "arguments": {"expression": "%d*7"}}`, i+2)
		if i%2 == 1 {
			call = fmt.Sprintf(`{"name":"calculator","arguments":{"expression":"%d*7"}}`, i+2)
		}
		replies[i] = fmt.Sprintf("<think>\nPart %d needs the calculator.\n</think>\n\n[turn:%d] Part %d.\n<tool_call>\n%s\n</tool_call>", i, i, i, call)
	}
	replies[turns-1] = fmt.Sprintf("<think>\nDone.\n</think>\n\n[turn:%d] The answer is 42.", turns-1)
	line, err := json.Marshal(map[string]any{"key": "deployed", "replies": replies})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := emulator.ParseScript(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := compactingAgent(3000, 3)
	ac.Context = config.Context{}
	ac.History = config.HistoryAsDeployed
	h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "dep", ItemID: "dep", GroupID: "dep",
		Messages: []tito.Message{{Role: "user", Content: "[script:deployed] Six parts."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.SampleCount() != turns {
		t.Fatalf("%d samples, want one per turn (%d)", tr.SampleCount(), turns)
	}
	h.checkSamples(t, tr)
	all := tr.AllSamples()
	for _, s := range all[1:] {
		// the turn before it (turn Index-1) wrote its call without spaces when Index-1 is odd
		p := all[s.Parent].TokenIDs
		extends := len(p) <= s.Segments[0].Length && equalIDs(s.TokenIDs[:len(p)], p)
		if rewritten := (s.Index-1)%2 == 1; extends == rewritten {
			t.Errorf("sample %d: its prompt extends its parent's tokens as generated: %v, want %v (the template rewrites a call written without spaces)", s.Index, extends, !rewritten)
		}
		if s.Reason != tito.SampleAsDeployed || s.Parent != s.Index-1 || len(s.Segments) != 2 {
			t.Errorf("sample %d: reason %q, parent %d, %d segments; want one as_deployed turn after sample %d", s.Index, s.Reason, s.Parent, len(s.Segments), s.Index-1)
		}
		msgs, err := tito.DecodeMessages(s.Messages)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:s.PromptMessages] {
			if m.Role == tito.RoleAssistant && (m.ReasoningContent == "" || strings.Contains(m.Content, "<think>") || strings.Contains(m.Content, "<tool_call>")) {
				t.Errorf("sample %d: an assistant message is not as a deployed client keeps it: content %q, reasoning %q", s.Index, m.Content, m.ReasoningContent)
			}
		}
	}
}

// TestAsDeployedFamilies: history "as-deployed" for the families whose templates rewrite history, on their real
// vocabularies, with the emulator reasoning before every reply: each turn is a sample whose prompt is the full render
// (checkSamples, against the server's log). DeepSeek-R1 (SGLang's tool template, which renders content only) drops
// the earlier turns' reasoning, so no later prompt extends the tokens as generated; Qwen3's template keeps the
// reasoning of turns after the last user message, so in a tool loop its renders may equal them. gpt-oss (harmony
// channels) keeps each turn as SGLang's server returns it (analysis in reasoning_content, which its template reads as
// thinking; the calls in tool_calls): in a tool loop its template shows the analysis again (TestAsDeployedGPTOSS has
// the turns it rewrites).
func TestAsDeployedFamilies(t *testing.T) {
	for _, tc := range []struct {
		family, env, template, format string
		rewrites                      bool // every later prompt differs from its parent's tokens as generated
	}{
		{"qwen3", "AGENTRT_QWEN3_MODEL", "", "hermes", false},
		{"deepseek-r1", "AGENTRT_DEEPSEEK_V3_MODEL", "tool_chat_template_deepseekv3.jinja", "deepseekv3", true},
	} {
		t.Run(tc.family, func(t *testing.T) {
			dir := os.Getenv(tc.env)
			if dir == "" {
				t.Fatalf("$%s is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`", tc.env)
			}
			m, err := tito.LoadModel(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			ac := defaultAgent()
			ac.Model, ac.ChatTemplateKwargs, ac.Family, ac.History = m.Dir, nil, tc.family, config.HistoryAsDeployed
			if tc.template != "" {
				if ac.ChatTemplate, err = filepath.Abs(filepath.Join("..", "family", "testdata", "sglang-templates", tc.template)); err != nil {
					t.Fatal(err)
				}
			}
			ec := emulator.DefaultConfig()
			ec.ToolFormat, ec.ThinkRate = tc.format, 1
			h := newModelHarness(t, ec, ac, m)
			tr := h.agent.Run(context.Background(), runtime.Episode{ID: tc.family, ItemID: "x", GroupID: "x",
				Messages: []tito.Message{{Role: "user", Content: "Compute (17+25)*3 and 144/12 and 9*9."}}})
			wantStatus(t, tr, runtime.StatusCompleted, "")
			if tr.SampleCount() != int(tr.Metrics["turns"]) || tr.SampleCount() < 2 {
				t.Fatalf("%d samples for %v turns, want one per turn (and more than one turn)", tr.SampleCount(), tr.Metrics["turns"])
			}
			h.checkSamples(t, tr)
			all := tr.AllSamples()
			for _, s := range all[1:] {
				p := all[s.Parent].TokenIDs
				extends := len(p) <= s.Segments[0].Length && equalIDs(s.TokenIDs[:len(p)], p)
				if tc.rewrites && extends {
					t.Errorf("sample %d's prompt extends its parent's tokens as generated: the template should have dropped the reasoning", s.Index)
				}
				if tc.rewrites && strings.Contains(decode(m, s.TokenIDs[:s.Segments[0].Length]), "<think>") {
					t.Errorf("sample %d's prompt still shows an earlier turn's reasoning", s.Index)
				}
			}
		})
	}
	// Families whose templates drop earlier reasoning once a new user message comes (MiniMax-M2 and GLM on stand-in
	// vocabularies, internal/standin): in a tool loop each turn is still a sample rendered in full, checked against
	// the log.
	for _, tc := range []struct{ family, vocab string }{
		{"qwen3.5", "AGENTRT_QWEN3_MODEL"}, // Qwen3.5's template and XML calls on Qwen3's vocabulary
		{"minimax-m2", standIn},
		{"glm-4.7-flash", standIn},          // thinking on: the generation prompt opens <think>
		{"gpt-oss", "AGENTRT_GPTOSS_MODEL"}, // the emulator writes calls as the template does, an analysis first
	} {
		t.Run(tc.family, func(t *testing.T) {
			m := familyModel(t, t, map[string]*tito.Model{}, tc.family, tc.vocab)
			prof, err := family.Lookup(tc.family)
			if err != nil {
				t.Fatal(err)
			}
			ac := defaultAgent()
			ac.Model, ac.Parser, ac.Family, ac.ChatTemplateKwargs, ac.History = m.Dir, "", "", nil, config.HistoryAsDeployed
			ec := emulator.DefaultConfig()
			ec.ToolFormat, ec.ThinkRate = prof.Parser, 1
			h := newModelHarness(t, ec, ac, m)
			tr := h.agent.Run(context.Background(), runtime.Episode{ID: tc.family, ItemID: "x", GroupID: "x",
				Messages: []tito.Message{{Role: "user", Content: "Compute (17+25)*3 and 144/12 and 9*9."}}})
			wantStatus(t, tr, runtime.StatusCompleted, "")
			if tr.SampleCount() != int(tr.Metrics["turns"]) || tr.SampleCount() < 2 {
				t.Fatalf("%d samples for %v turns, want one per turn (and more than one turn)", tr.SampleCount(), tr.Metrics["turns"])
			}
			h.checkSamples(t, tr)
			if prof.Reasoning == family.ReasoningHarmony {
				for _, s := range tr.AllSamples()[1:] {
					checkHarmonyViews(t, s)
				}
			}
		})
	}
}

// checkHarmonyViews fails when an assistant message that sample s's prompt renders is not as SGLang's server
// returns a gpt-oss turn: harmony markup left in its content, its analysis not in reasoning_content, a call turn
// with content as well as analysis (the template refuses both). (The sample's response keeps its text as generated.)
func checkHarmonyViews(t *testing.T, s tito.Sample) {
	t.Helper()
	msgs, err := tito.DecodeMessages(s.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) <= s.PromptMessages || msgs[s.PromptMessages].Role != tito.RoleAssistant || !strings.Contains(msgs[s.PromptMessages].Content, "<|channel|>") {
		t.Errorf("sample %d's response is not its harmony text as generated: %+v", s.Index, msgs[s.PromptMessages:])
	}
	for i, m := range msgs[:s.PromptMessages] {
		if m.Role != tito.RoleAssistant {
			continue
		}
		if strings.Contains(m.Content, "<|") || strings.Contains(m.ReasoningContent, "<|") || m.ReasoningContent == "" ||
			(len(m.ToolCalls) > 0) == (m.Content != "") {
			t.Errorf("sample %d message %d is not a deployed gpt-oss turn: content %q, reasoning_content %q, %d calls", s.Index, i, m.Content, m.ReasoningContent, len(m.ToolCalls))
		}
	}
}

// TestAsDeployedGPTOSS: gpt-oss under history "as-deployed", with the model writing its calls as gpt-oss models do
// (the recipient after the channel, "<|constrain|>json", arguments without spaces) where its template writes them
// back in its own form ("<|start|>assistant to=functions.NAME<|channel|>commentary json", tojson's spaces): every
// later turn's prompt is the template's full render of the conversation as SGLang's server returns it (analysis in
// reasoning_content, which the template reads as thinking and shows again for a call turn in the tool loop; the
// call in tool_calls), so none extends the tokens as generated, and each sample is proven against the server's log
// and the template (checkSamples). As-generated, the same episode is one chain proven against the log.
func TestAsDeployedGPTOSS(t *testing.T) {
	const turns = 4
	// The scripted policy counts assistant messages after the task: a harmony turn is two (its analysis and its
	// call), so turn i's reply is the script's reply 2i.
	replies := make([]string, 2*turns)
	for i := range turns - 1 {
		replies[2*i] = fmt.Sprintf("<|channel|>analysis<|message|>Part %d needs the calculator.<|end|><|start|>assistant<|channel|>commentary to=functions.calculator <|constrain|>json<|message|>{\"expression\":\"%d*7\"}<|call|>", i, i+2)
	}
	replies[2*(turns-1)] = "<|channel|>analysis<|message|>All parts are done.<|end|><|start|>assistant<|channel|>final<|message|>The answer is 42.<|return|>"
	line, err := json.Marshal(map[string]any{"key": "harmony", "replies": replies})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := emulator.ParseScript(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	m := familyModel(t, t, map[string]*tito.Model{}, "gpt-oss", "AGENTRT_GPTOSS_MODEL")
	ac := defaultAgent()
	ac.Model, ac.Family, ac.Parser, ac.ChatTemplateKwargs, ac.History = m.Dir, "gpt-oss", "", nil, config.HistoryAsDeployed
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	h := newModelHarness(t, ec, ac, m, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "harmony", ItemID: "harmony", GroupID: "harmony",
		Messages: []tito.Message{{Role: "user", Content: "[script:harmony] Three parts."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.SampleCount() != turns {
		t.Fatalf("%d samples, want one per turn (%d)", tr.SampleCount(), turns)
	}
	h.checkSamples(t, tr)
	all := tr.AllSamples()
	for _, s := range all[1:] {
		checkHarmonyViews(t, s)
		p := all[s.Parent].TokenIDs
		if len(p) <= s.Segments[0].Length && equalIDs(s.TokenIDs[:len(p)], p) {
			t.Errorf("sample %d's prompt extends its parent's tokens as generated: the template should have rewritten the call", s.Index)
		}
		prompt := decode(m, s.TokenIDs[:s.Segments[0].Length])
		for k := range s.Index {
			// The tool loop has no final answer yet: the template shows each call turn's analysis again, before
			// the call as it writes calls.
			want := fmt.Sprintf("<|start|>assistant<|channel|>analysis<|message|>Part %d needs the calculator.<|end|><|start|>assistant to=functions.calculator<|channel|>commentary json<|message|>{\"expression\": \"%d*7\"}<|call|>", k, k+2)
			if !strings.Contains(prompt, want) {
				t.Errorf("sample %d's prompt does not render turn %d as the template writes it (%q):\n%s", s.Index, k, want, prompt)
			}
		}
	}

	// The same episode as-generated is one chain: each delta is the template's tail after the conversation as
	// the template reads it (it refuses harmony markup in content), appended to the tokens as generated.
	ac.History = config.HistoryAsGenerated
	h = newModelHarness(t, ec, ac, m, emulator.WithScript(sc))
	tr = h.agent.Run(context.Background(), runtime.Episode{ID: "harmony-gen", ItemID: "harmony", GroupID: "harmony",
		Messages: []tito.Message{{Role: "user", Content: "[script:harmony] Three parts."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if tr.SampleCount() != 1 || tr.Turns() != turns {
		t.Fatalf("as-generated: %d samples of %d turns, want one chain of %d", tr.SampleCount(), tr.Turns(), turns)
	}
	h.check(t, tr)
}

// TestAsDeployedGPTOSSMalformed: a gpt-oss call the parser refuses (a content type other than json) is answered by
// the error as a user message; the turn is kept as SGLang's server returns it, its analysis in reasoning_content and
// no tool call (the template refuses harmony markup in content), so both histories go on to the answer, proven
// against the server's log.
func TestAsDeployedGPTOSSMalformed(t *testing.T) {
	final := "<|channel|>analysis<|message|>The calculator refused it.<|end|><|start|>assistant<|channel|>final<|message|>The answer is 14.<|return|>"
	// The scripted policy counts the assistant messages the emulator reads in the prompt, which differ between the
	// tokens as generated and the render: every later reply is the answer.
	replies := []string{"<|channel|>analysis<|message|>Compute 2*7.<|end|><|start|>assistant<|channel|>commentary to=functions.calculator <|constrain|>yaml<|message|>{\"expression\":\"2*7\"}<|call|>", final, final, final, final, final}
	line, err := json.Marshal(map[string]any{"key": "malformed", "replies": replies})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := emulator.ParseScript(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	m := familyModel(t, t, map[string]*tito.Model{}, "gpt-oss", "AGENTRT_GPTOSS_MODEL")
	for _, history := range []string{config.HistoryAsGenerated, config.HistoryAsDeployed} {
		t.Run(history, func(t *testing.T) {
			ac := defaultAgent()
			ac.Model, ac.Family, ac.Parser, ac.ChatTemplateKwargs, ac.History = m.Dir, "gpt-oss", "", nil, history
			ec := emulator.DefaultConfig()
			ec.Policy = emulator.PolicyScripted
			h := newModelHarness(t, ec, ac, m, emulator.WithScript(sc))
			tr := h.agent.Run(context.Background(), runtime.Episode{ID: "malformed", ItemID: "malformed", GroupID: "malformed",
				Messages: []tito.Message{{Role: "user", Content: "[script:malformed] What is 2*7?"}}})
			wantStatus(t, tr, runtime.StatusCompleted, "")
			if ms := messages(t, tr); tr.Metrics["turns"] != 2 || !strings.HasSuffix(ms[len(ms)-1].Content, "The answer is 14.") {
				t.Fatalf("%v turns, last message %+v; want the answer on the second", tr.Metrics["turns"], ms[len(ms)-1])
			}
			if history == config.HistoryAsGenerated {
				h.check(t, tr)
				return
			}
			h.checkSamples(t, tr)
			s := tr.AllSamples()[1]
			msgs, err := tito.DecodeMessages(s.Messages)
			if err != nil {
				t.Fatal(err)
			}
			if a := msgs[s.PromptMessages-2]; a.Role != tito.RoleAssistant || a.Content != "" || a.ReasoningContent != "Compute 2*7." || a.ToolCalls != nil {
				t.Errorf("the malformed turn is kept as %+v, want its analysis only", a)
			}
		})
	}
}

// decode decodes ids with special tokens kept.
func decode(m *tito.Model, ids []int32) string { return m.Tokenizer.Decode(ids, false) }

// TestCompactionByWasmHook: the same 60-turn task in a 4k window, compacted by a before_generate hook plugin (a Go
// guest through the plugin host: runtime/plugin/testdata/go/compact) instead of [agent.context]: the hook's
// conversations start samples rendered in full, every sample proven against the server's log.
func TestCompactionByWasmHook(t *testing.T) {
	const turns = 60
	sc := longScript(t, "hooked", turns)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := compactingAgent(3000, 3)
	ac.Context = config.Context{}
	wasm, err := filepath.Abs(filepath.Join("..", "plugin", "testdata", "go", "compact", "compact.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ac.Hooks = append(ac.Hooks, config.Plugin{Plugin: wasm, Config: map[string]any{"max_tokens": 3000, "keep_turns": 3}})
	h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "wh", ItemID: "wh", GroupID: "wh",
		Messages: []tito.Message{{Role: "user", Content: "[script:hooked] Work through all sixty parts of the task."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	if got := tr.Metrics["turns"]; got != turns {
		t.Fatalf("%v model calls, want %d", got, turns)
	}
	if tr.SampleCount() < 3 || tr.Metrics["context.compactions"] != float64(tr.SampleCount()-1) {
		t.Fatalf("%d samples, %v compactions: the hook must have compacted more than once", tr.SampleCount(), tr.Metrics["context.compactions"])
	}
	h.checkSamples(t, tr)
	for _, s := range tr.AllSamples() {
		if len(s.TokenIDs) > ac.ContextWindow {
			t.Errorf("sample %d has %d tokens, past the window", s.Index, len(s.TokenIDs))
		}
	}
}

// TestCompactionSummarize: policy "summarize" asks the same model for a summary when the context passes the
// threshold: the summary call is a sample of its own (its prompt the full render of the conversation and the
// summary request, its response the summary, loss mask 1), and the continuation is a sample whose parent is the
// summarized one, its prompt the first messages, the summary as a user message and the kept turns. Every sample is
// proven against the server's log. (The scripted emulator answers the summary request with its next scripted reply,
// which then serves as the summary; the task still ends after its 60 scripted turns.)
func TestCompactionSummarize(t *testing.T) {
	const turns = 60
	sc := longScript(t, "sum", turns)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	ac := compactingAgent(3000, 2)
	ac.Context.Policy, ac.Context.SummaryPrompt = config.ContextSummarize, "Summarize the work so far."
	h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
	tr := h.agent.Run(context.Background(), runtime.Episode{ID: "sm", ItemID: "sm", GroupID: "sm",
		Messages: []tito.Message{{Role: "user", Content: "[script:sum] Work through all sixty parts of the task."}}})
	wantStatus(t, tr, runtime.StatusCompleted, "")
	h.checkSamples(t, tr)
	compactions := int(tr.Metrics["context.compactions"])
	if compactions < 2 || tr.SampleCount() != 1+2*compactions || int(tr.Metrics["turns"]) != turns+compactions {
		t.Fatalf("%d samples, %d compactions, %v model calls: want a summary sample and a continuation per compaction, one extra call each", tr.SampleCount(), compactions, tr.Metrics["turns"])
	}
	all := tr.AllSamples()
	for k := 1; k < len(all); k += 2 {
		sum, cont := all[k], all[k+1]
		if sum.Reason != tito.SampleSummary || sum.Parent != k-1 || len(sum.Segments) != 2 || sum.LossMask[len(sum.LossMask)-1] != 1 {
			t.Errorf("sample %d: reason %q, parent %d, %d segments: want the summary of sample %d, one trained response", k, sum.Reason, sum.Parent, len(sum.Segments), k-1)
		}
		if cont.Reason != tito.SampleCompaction || cont.Parent != k-1 || cont.BranchOffset != len(all[k-1].TokenIDs) {
			t.Errorf("sample %d: reason %q, parent %d at %d: want the continuation of sample %d at its end", k+1, cont.Reason, cont.Parent, cont.BranchOffset, k-1)
		}
		sm, err := tito.DecodeMessages(sum.Messages)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := tito.DecodeMessages(cont.Messages)
		if err != nil {
			t.Fatal(err)
		}
		if last := sm[sum.PromptMessages-1]; last.Role != "user" || last.Content != "Summarize the work so far." {
			t.Errorf("sample %d's prompt does not end with the summary request: %+v", k, last)
		}
		if m := cm[2]; m.Role != "user" || !strings.HasPrefix(m.Content, runtime.SummaryPrefix) || !strings.Contains(m.Content, "Working on part") {
			t.Errorf("sample %d's third message is not the summary: %+v", k+1, m)
		}
	}
}

// TestCompactionSummaryMasked: with mask_summary the summary call's response has loss mask 0 (its sample says
// masked, its logprobs are kept), and the rest of the episode is what it is without: the same scripted episode run
// both ways gives the same samples, token for token, logprob for logprob, loss mask for loss mask, but for the
// summaries' response tokens. Both runs are proven against the server's log and survive a JSON round trip.
func TestCompactionSummaryMasked(t *testing.T) {
	const turns = 24
	run := func(mask bool) *tito.Trajectory {
		sc := longScript(t, "sum", turns)
		ec := emulator.DefaultConfig()
		ec.Policy = emulator.PolicyScripted
		ac := compactingAgent(3000, 2)
		ac.Context.Policy, ac.Context.SummaryPrompt, ac.Context.MaskSummary = config.ContextSummarize, "Summarize the work so far.", mask
		h := newHarnessWith(t, ec, ac, fastRetry(), nil, emulator.WithScript(sc))
		tr := h.agent.Run(context.Background(), runtime.Episode{ID: "sk", ItemID: "sk", GroupID: "sk",
			Messages: []tito.Message{{Role: "user", Content: "[script:sum] Work through all the parts of the task."}}})
		wantStatus(t, tr, runtime.StatusCompleted, "")
		h.checkSamples(t, tr)
		b, err := tr.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var back tito.Trajectory
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("mask_summary %v: read back: %v", mask, err)
		}
		if got, want := strings.Count(string(b), `"masked":true`), map[bool]int{true: int(tr.Metrics["context.compactions"])}[mask]; got != want {
			t.Errorf("mask_summary %v: %d samples say masked in JSON, want %d", mask, got, want)
		}
		return &back
	}
	trained, masked := run(false), run(true)
	if masked.Metrics["context.compactions"] < 1 {
		t.Fatalf("%v compactions: the episode must summarize at least once", masked.Metrics["context.compactions"])
	}
	ta, ma := trained.AllSamples(), masked.AllSamples()
	if len(ta) != len(ma) {
		t.Fatalf("%d samples with mask_summary, %d without: the mask must not change the episode", len(ma), len(ta))
	}
	summaries := 0
	for k := range ma {
		a, b := ta[k], ma[k]
		if a.Reason != b.Reason || !slices.Equal(a.TokenIDs, b.TokenIDs) || len(a.Segments) != len(b.Segments) || len(a.Logprobs) != len(b.Logprobs) {
			t.Fatalf("sample %d differs beyond its loss mask (reason %q/%q, %d/%d tokens)", k, a.Reason, b.Reason, len(a.TokenIDs), len(b.TokenIDs))
		}
		for i := range a.Logprobs {
			if x, y := a.Logprobs[i], b.Logprobs[i]; x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
				t.Fatalf("sample %d token %d: logprob %v with mask_summary, %v without", k, i, y, x)
			}
		}
		if a.Masked {
			t.Errorf("sample %d is masked without mask_summary", k)
		}
		if b.Reason != tito.SampleSummary {
			if b.Masked || !slices.Equal(a.LossMask, b.LossMask) {
				t.Errorf("sample %d (%s): masked %v, loss mask differs %v: only summaries change", k, b.Reason, b.Masked, !slices.Equal(a.LossMask, b.LossMask))
			}
			continue
		}
		summaries++
		if !b.Masked {
			t.Errorf("summary sample %d is not marked masked", k)
		}
		resp := b.Segments[1]
		for i := range b.LossMask {
			inResp := i >= resp.Offset && i < resp.Offset+resp.Length
			if wantA := map[bool]uint8{true: 1}[inResp]; a.LossMask[i] != wantA || b.LossMask[i] != 0 {
				t.Fatalf("summary sample %d token %d (response %v): loss mask %d with mask_summary, %d without; want 0 and %d", k, i, inResp, b.LossMask[i], a.LossMask[i], wantA)
			}
			if inResp && math.IsNaN(b.Logprobs[i]) {
				t.Fatalf("summary sample %d token %d: a masked response token lost its logprob", k, i)
			}
		}
	}
	if summaries != int(masked.Metrics["context.compactions"]) {
		t.Errorf("%d summary samples, %v compactions", summaries, masked.Metrics["context.compactions"])
	}
}

// TestCompactionGroupMixedStatuses: a group of three samples of one item, each an episode of its own number of
// samples and its own status: one completes (every compaction), one reaches its response budget (truncated), one is
// cancelled mid-run (aborted) and carries the samples it finished and its last one as far as it got. Each is one
// trajectory with the group's id, each valid and proven against the server's log.
func TestCompactionGroupMixedStatuses(t *testing.T) {
	sc := longScript(t, "grp", 60)
	ec := emulator.DefaultConfig()
	ec.Policy = emulator.PolicyScripted
	h := newHarnessWith(t, ec, compactingAgent(3000, 3), fastRetry(), nil, emulator.WithScript(sc))
	item := runtime.Item{ID: "q", Prompt: "[script:grp] Work through all sixty parts of the task.", N: 3}
	eps := item.Episodes("req/")
	eps[1].MaxResponseTokens = 5000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eps[2].Events = func(ev runtime.Event) {
		if ev.Kind == runtime.EventTurn && ev.Turn == 25 {
			cancel()
		}
	}
	want := []struct{ status, reason string }{
		{runtime.StatusCompleted, ""},
		{runtime.StatusTruncated, runtime.ReasonResponseBudget},
		{runtime.StatusAborted, ""}, // the reason is whichever call met the cancellation (a hook's, the model's)
	}
	for i, ep := range eps {
		runCtx := context.Background()
		if i == 2 {
			runCtx = ctx
		}
		tr := h.agent.Run(runCtx, ep)
		if tr.Status != want[i].status || (want[i].status != runtime.StatusAborted && tr.StatusReason != want[i].reason) {
			t.Fatalf("%s: status %s/%s (%s), want %s/%s", tr.ID, tr.Status, tr.StatusReason, tr.Error, want[i].status, want[i].reason)
		}
		if tr.GroupID != "req/q" || tr.ID != fmt.Sprintf("req/q#%d", i) {
			t.Errorf("episode %d: id %q group %q", i, tr.ID, tr.GroupID)
		}
		if tr.SampleCount() < 2 {
			t.Errorf("%s: %d samples, want the compactions' samples whatever the status", tr.ID, tr.SampleCount())
		}
		h.checkSamples(t, tr)
		if i == 2 && int(tr.Metrics["turns"]) != 26 {
			t.Errorf("%s: %v model calls, want 26 (cancelled after the 26th)", tr.ID, tr.Metrics["turns"])
		}
	}
}
