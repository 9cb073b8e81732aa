package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/standin"
	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/config"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// familyE2E are the families that pass the self-test, whose vocabulary a set-up model folder has (or a stand-in
// one: vocabEnv standIn), and whose tool-call format the emulator speaks: each runs whole episodes through the
// runtime against the emulator, which writes the family's calls in format (its parser's name when empty).
var familyE2E = []struct {
	family, vocabEnv, format string
	// thinking leaves enable_thinking at the template's default (on) instead of false.
	thinking bool
}{
	{"qwen3", "AGENTRT_QWEN3_MODEL", "", false},
	{"qwen3-2507-instruct", "AGENTRT_QWEN3_MODEL", "", false},
	{"qwen3-2507-thinking", "AGENTRT_QWEN3_MODEL", "", false},
	{"qwen2.5", "AGENTRT_QWEN3_MODEL", "", false},
	{"qwen3.5", "AGENTRT_QWEN3_MODEL", "", false}, // Qwen3.5 with its XML calls (qwen3_coder)
	{"qwen3-coder", "AGENTRT_QWEN3_MODEL", "", false},
	{"qwq-32b", "AGENTRT_QWEN3_MODEL", "", false},
	{"hermes-3", "AGENTRT_QWEN3_MODEL", "", false}, // ChatML: Qwen's vocabulary has its <|im_start|>/<|im_end|>
	{"llama3.1", "AGENTRT_LLAMA31_MODEL", "", false},
	{"llama3.2", "AGENTRT_LLAMA31_MODEL", "", false},
	{"gpt-oss", "AGENTRT_GPTOSS_MODEL", "", false},
	// Nemo's list form ([TOOL_CALLS][{..., "id": "abcDEF123"}]), read by the mistral parser; the ids the model
	// writes are the ones the template renders back (CallIDAlnum9).
	{"mistral-nemo", "AGENTRT_MISTRAL_NEMO_MODEL", emulator.FormatMistralNemo, false},
	// No registry we reach has these vocabularies: they run on Qwen3's with the family's control tokens added
	// (internal/standin), which proves the loop (template deltas, stop tokens, parser, the emulator's format),
	// not the real tokenizer.
	{"kimi-k2", standIn, "", false},
	{"minimax-m2", standIn, "", false},
	{"seed-oss", standIn, "", false},
	// GLM stops on the token that begins the next message (<|observation|> after calls, which the agent keeps
	// and the tool message's delta starts after; <|user|> after an answer).
	{"glm-4.6", standIn, "", false},
	{"glm-4.6", standIn, "", true}, // the model opens <think> after the bare <|assistant|> and reasons first
	{"glm-4.7-flash", standIn, "", false},
	{"glm-4.7-flash", standIn, "", true}, // the generation prompt opens <think>: each turn reasons first
	// Nemo's tekken vocabulary with the tekken v7 tokens added (internal/standin's Bases). Small 3.2 writes
	// each call's 9-character id ([CALL_ID]), which its template renders back; Devstral's writes none.
	{"mistral-small-3.2", standIn, emulator.FormatMistralV11, false},
	{"devstral-small", standIn, "", false},
}

// standIn as a familyE2E vocabEnv: the family runs on its stand-in vocabulary (standin.Model).
const standIn = "stand-in"

// familyModel is a set-up model (loaded once per vocabulary) with the family's reference chat template in place
// of its own.
func familyModel(t, owner *testing.T, loaded map[string]*tito.Model, fam, vocabEnv string) *tito.Model {
	t.Helper()
	if vocabEnv == standIn {
		return standin.Model(t, fam) // the folder has the family's template already
	}
	m := loaded[vocabEnv]
	if m == nil {
		dir := os.Getenv(vocabEnv)
		if dir == "" {
			t.Fatalf("$%s is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`", vocabEnv)
		}
		var err error
		if m, err = tito.LoadModel(dir); err != nil {
			t.Fatal(err)
		}
		loaded[vocabEnv] = m
		owner.Cleanup(m.Close) // the model outlives the subtest that loads it
	}
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "tito", "testdata", "families", fam, tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	c := *m // shares the tokenizer
	c.TemplateSource, c.TemplateFile, c.NamedTemplates = string(tmpl), tito.FileChatTemplate, nil
	return &c
}

// TestFamilyEpisodes runs tool-using episodes for each family of familyE2E, with the family detected from the
// folder and its own parser, against the emulator speaking the family's tool-call format; every trajectory is
// checked against the emulator's request log (prefix invariant, verbatim responses, logprobs, loss mask).
func TestFamilyEpisodes(t *testing.T) {
	loaded, parent := map[string]*tito.Model{}, t
	for _, fe := range familyE2E {
		name := fe.family
		if fe.thinking {
			name += "/thinking"
		}
		t.Run(name, func(t *testing.T) {
			m := familyModel(t, parent, loaded, fe.family, fe.vocabEnv)
			prof, err := family.Lookup(fe.family)
			if err != nil {
				t.Fatal(err)
			}
			ac := defaultAgent()
			ac.Model, ac.Parser, ac.Family, ac.ChatTemplateKwargs = m.Dir, "", "", nil
			for _, k := range prof.Kwargs {
				if k.Name == "enable_thinking" && !fe.thinking {
					ac.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
				}
			}
			ec := emulator.DefaultConfig()
			ec.ToolFormat = prof.Parser
			if fe.format != "" {
				ec.ToolFormat = fe.format
			}
			h := newModelHarness(t, ec, ac, m)
			calls := 0
			for i, task := range []string{"What is 12*7+3?", "Compute (17+25)*3 and 144/12."} {
				tr := h.run(t, fmt.Sprintf("%s-%d", fe.family, i), task)
				wantStatus(t, tr, runtime.StatusCompleted, "")
				if got := tr.Provenance[system.ProvFamily]; got != fe.family {
					t.Errorf("%s: provenance family %v, want %s (detected)", tr.ID, got, fe.family)
				}
				if _, ok := tr.Provenance[tito.ProvPlugins].(map[string]string)["parser:"+prof.Parser]; !ok {
					t.Errorf("%s: plugins %v, want the family's parser %s", tr.ID, tr.Provenance[tito.ProvPlugins], prof.Parser)
				}
				calls += int(tr.Metrics["tool_calls.ok"])
				if tr.Metrics["parse_errors"] > 0 {
					t.Errorf("%s: parse errors %v", tr.ID, tr.Metrics)
				}
				switch prof.CallIDs {
				case family.CallIDAlnum9:
					checkModelCallIDs(t, tr, m)
				case family.CallIDKimi:
					checkKimiCallIDs(t, tr)
				}
				if prof.StopBeginsNext {
					checkStopsBeginNext(t, tr, m, prof, h.agent.ToolSpecs(), ac.ChatTemplateKwargs)
				}
			}
			if calls == 0 {
				t.Errorf("no tool call was made and answered in %s's episodes", fe.family)
			}
			checkParseErrorResults(t, ec, ac, m, fe.family)
		})
	}
}

// checkParseErrorResults runs episodes whose every tool-calling turn has a malformed first call (the emulator's
// malformed_rate 1: broken markup, an unknown tool, arguments left out): each malformed call is answered by an
// error result the family's template renders (a tool result; after a turn of malformed calls only, a user message),
// so the episode goes on, reading "Error: the tool call could not be parsed (REASON): MESSAGE" and "The call was:
// RAW" with the parser's exact reason.
func checkParseErrorResults(t *testing.T, ec emulator.Config, ac config.Agent, m *tito.Model, fam string) {
	t.Helper()
	ec.MalformedRate = 1
	h := newModelHarness(t, ec, ac, m)
	seen := map[string]bool{}
	for i := 0; i < 12 && !seen[string(parsers.ReasonBadArguments)]; i++ {
		tr := h.run(t, fmt.Sprintf("%s-malformed-%d", fam, i), "What is 12*7+3?")
		// A call whose arguments were left out is made again, malformed again at rate 1: the limiter may end it.
		if tr.Status != runtime.StatusTruncated || tr.StatusReason != runtime.ReasonMaxToolIters {
			wantStatus(t, tr, runtime.StatusCompleted, "")
		}
		for _, msg := range messages(t, tr) {
			const prefix = "Error: the tool call could not be parsed ("
			// A tool result; or, after a turn of malformed calls only, one user message with each error result.
			if (msg.Role != "tool" && msg.Role != "user") || !strings.HasPrefix(msg.Content, prefix) {
				continue
			}
			reason, rest, _ := strings.Cut(strings.TrimPrefix(msg.Content, prefix), "): ")
			detail, raw, ok := strings.Cut(rest, "\nThe call was: ")
			if !ok || detail == "" || raw == "" {
				t.Errorf("%s: error result %q lacks the parser's message or the raw call", tr.ID, msg.Content)
			}
			// The arguments left out: the exact reason, worded alike in every format.
			if want := `arguments of "calculator": missing required parameter "expression"`; reason == string(parsers.ReasonBadArguments) && detail != want {
				t.Errorf("%s: bad_arguments result says %q, want %q", tr.ID, detail, want)
			}
			if tr.Metrics["parse_errors."+reason] == 0 {
				t.Errorf("%s: error result for %s, but metrics %v do not count it", tr.ID, reason, tr.Metrics)
			}
			seen[reason] = true
		}
	}
	if !seen[string(parsers.ReasonBadArguments)] {
		t.Errorf("%s: error results seen for %v in 12 episodes, want bad_arguments among them", fam, seen)
	}
}

// checkModelCallIDs: every call keeps the 9-character id the model wrote (it is in the turn's output), and the
// tool result that answers it names it, so the template renders it back as the model saw it.
func checkModelCallIDs(t *testing.T, tr *tito.Trajectory, m *tito.Model) {
	t.Helper()
	var out strings.Builder
	for _, seg := range tr.Segments {
		if seg.Kind == tito.KindResponse {
			out.WriteString(m.Tokenizer.Decode(tr.TokenIDs[seg.Offset:seg.Offset+seg.Length], false))
		}
	}
	var ids []string
	for _, msg := range messages(t, tr) {
		for _, c := range msg.ToolCalls {
			wrote := strings.Contains(out.String(), `"id": "`+c.ID+`"`) || // Nemo's list form
				strings.Contains(out.String(), "[CALL_ID]"+c.ID+"[ARGS]") // Small 3.2's
			if !alnum9.MatchString(c.ID) || !wrote {
				t.Errorf("%s: call id %q is not the 9-character id the model wrote", tr.ID, c.ID)
			}
			ids = append(ids, c.ID)
		}
		if msg.Role == "tool" {
			if len(ids) == 0 || msg.ToolCallID != ids[0] {
				t.Errorf("%s: tool result for %q, want %v's first", tr.ID, msg.ToolCallID, ids)
			} else {
				ids = ids[1:]
			}
		}
	}
}

var alnum9 = regexp.MustCompile(`^[A-Za-z0-9]{9}$`)

// checkStopsBeginNext (GLM): every tool-calling response ends on <|observation|> and the answer on <|user|>, the
// stops that begin the next message; the agent keeps the generated token, so the last request (the whole episode
// but its answer) decodes to exactly the template's render of the conversation as a client would send it (the
// tool-calling turns' content is their text without the calls: none here): the token is neither lost nor written
// twice where the tool results follow it.
func checkStopsBeginNext(t *testing.T, tr *tito.Trajectory, m *tito.Model, prof *family.Profile, tools []json.RawMessage, kwargs map[string]any) {
	t.Helper()
	var responses []tito.Segment
	for _, seg := range tr.Segments {
		if seg.Kind == tito.KindResponse {
			responses = append(responses, seg)
		}
	}
	for i, seg := range responses {
		want := "<|observation|>"
		if i == len(responses)-1 {
			want = "<|user|>"
		}
		if got := m.Tokenizer.Decode(tr.TokenIDs[seg.Offset+seg.Length-1:seg.Offset+seg.Length], false); got != want {
			t.Errorf("%s: response %d ends on %q, want %q", tr.ID, i, got, want)
		}
	}
	tmpl, err := m.ChatTemplate(prof.TemplateOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, tr)
	for i := range msgs {
		if len(msgs[i].ToolCalls) > 0 {
			// The trajectory keeps the turn's whole text, calls included, beside its tool_calls: a client sends
			// the reasoning (before </think>, which the template splits off) and no text.
			r, _, ok := strings.Cut(msgs[i].Content, "</think>")
			msgs[i].Content = ""
			if ok {
				msgs[i].Content = r + "</think>"
			}
		}
	}
	want, err := tmpl.Render(msgs[:len(msgs)-1], tito.RenderOptions{Tools: tools, AddGenerationPrompt: true, Kwargs: kwargs})
	if err != nil {
		t.Fatal(err)
	}
	last := responses[len(responses)-1]
	if got := m.Tokenizer.Decode(tr.TokenIDs[:last.Offset], false); got != want {
		t.Errorf("%s: the last request decodes to\n%q\nwant the template's render of the conversation\n%q", tr.ID, got, want)
	}
}

// checkKimiCallIDs: Kimi K2's calls are functions.NAME:N, N counting the episode's calls from 0 (as SGLang names
// them), and each tool result names its call, so the template renders "## Return of functions.NAME:N".
func checkKimiCallIDs(t *testing.T, tr *tito.Trajectory) {
	t.Helper()
	var ids []string
	n := 0
	for _, msg := range messages(t, tr) {
		for _, c := range msg.ToolCalls {
			if want := fmt.Sprintf("functions.%s:%d", c.Function.Name, n); c.ID != want {
				t.Errorf("%s: call id %q, want %q", tr.ID, c.ID, want)
			}
			ids = append(ids, c.ID)
			n++
		}
		if msg.Role == "tool" {
			if len(ids) == 0 || msg.ToolCallID != ids[0] {
				t.Errorf("%s: tool result for %q, want %v's first", tr.ID, msg.ToolCallID, ids)
			} else {
				ids = ids[1:]
			}
		}
	}
}

// newModelHarness is newHarness for a model other than the shared Qwen3 one.
func newModelHarness(t *testing.T, ec emulator.Config, ac config.Agent, m *tito.Model, opts ...emulator.Option) *harness {
	t.Helper()
	ec.StopIDs, ec.VocabSize = m.StopIDs, m.Tokenizer.VocabSize()
	h := &harness{log: &syncBuffer{}}
	emu, err := emulator.New(ec, m.Tokenizer, append([]emulator.Option{emulator.WithLog(h.log)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(emu)
	t.Cleanup(h.srv.Close)
	sc := sglang.DefaultConfig()
	sc.Workers = []string{h.srv.URL}
	sc.Retry = fastRetry()
	client, err := sglang.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h.client = client
	h.agent, err = system.BuildAgent(context.Background(), ac, system.BuildEnv{Host: host, Generator: client, Model: m,
		MaxModelLen: func(ctx context.Context) (int, error) { return client.MaxModelLen(ctx, "") }, Server: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	return h
}
