package runtime_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/standin"
	"github.com/agentrt/agentrt/runtime"
	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

// familyE2E are the families that pass the self-test, whose vocabulary a set-up model folder has (or a stand-in
// one: vocabEnv standIn), and whose tool-call format the emulator speaks: each runs whole episodes through the
// runtime against the emulator, which writes the family's calls in format (its parser's name when empty).
// Mistral Small 3.2 and Devstral are not here: their tekken v7 control tokens ([SYSTEM_PROMPT], [ARGS],
// [CALL_ID]) are not in Nemo's vocabulary, the only Mistral one set up, so they pass the self-test only (their
// call ids: TestAgentMistralCallIDs).
var familyE2E = []struct {
	family, vocabEnv, format string
}{
	{"qwen3", "AGENTRT_QWEN3_MODEL", ""},
	{"qwen3-2507-instruct", "AGENTRT_QWEN3_MODEL", ""},
	{"qwen3-2507-thinking", "AGENTRT_QWEN3_MODEL", ""},
	{"qwen2.5", "AGENTRT_QWEN3_MODEL", ""},
	{"qwen3.5", "AGENTRT_QWEN3_MODEL", ""}, // Qwen3.5 with its XML calls (qwen3_coder)
	{"qwen3-coder", "AGENTRT_QWEN3_MODEL", ""},
	{"qwq-32b", "AGENTRT_QWEN3_MODEL", ""},
	{"hermes-3", "AGENTRT_QWEN3_MODEL", ""}, // ChatML: Qwen's vocabulary has its <|im_start|>/<|im_end|>
	{"llama3.1", "AGENTRT_LLAMA31_MODEL", ""},
	{"llama3.2", "AGENTRT_LLAMA31_MODEL", ""},
	{"gpt-oss", "AGENTRT_GPTOSS_MODEL", ""},
	// Nemo's list form ([TOOL_CALLS][{..., "id": "abcDEF123"}]), read by the mistral parser; the ids the model
	// writes are the ones the template renders back (CallIDAlnum9).
	{"mistral-nemo", "AGENTRT_MISTRAL_NEMO_MODEL", emulator.FormatMistralNemo},
	// No registry we reach has these vocabularies: they run on Qwen3's with the family's control tokens added
	// (internal/standin), which proves the loop (template deltas, stop tokens, parser, the emulator's format),
	// not the real tokenizer.
	{"kimi-k2", standIn, ""},
	{"minimax-m2", standIn, ""},
	{"seed-oss", standIn, ""},
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
	tmpl, err := os.ReadFile(filepath.Join("..", "tito", "testdata", "families", fam, tito.FileChatTemplate))
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
		t.Run(fe.family, func(t *testing.T) {
			m := familyModel(t, parent, loaded, fe.family, fe.vocabEnv)
			prof, err := family.Lookup(fe.family)
			if err != nil {
				t.Fatal(err)
			}
			ac := defaultAgent()
			ac.Model, ac.Parser, ac.Family, ac.ChatTemplateKwargs = m.Dir, "", "", nil
			for _, k := range prof.Kwargs {
				if k.Name == "enable_thinking" {
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
				if got := tr.Provenance[runtime.ProvFamily]; got != fe.family {
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
			}
			if calls == 0 {
				t.Errorf("no tool call was made and answered in %s's episodes", fe.family)
			}
		})
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
			if !alnum9.MatchString(c.ID) || !strings.Contains(out.String(), `"id": "`+c.ID+`"`) {
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
func newModelHarness(t *testing.T, ec emulator.Config, ac runtime.AgentConfig, m *tito.Model) *harness {
	t.Helper()
	ec.StopIDs, ec.VocabSize = m.StopIDs, m.Tokenizer.VocabSize()
	h := &harness{log: &syncBuffer{}}
	emu, err := emulator.New(ec, m.Tokenizer, emulator.WithLog(h.log))
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
	h.agent, err = runtime.BuildAgent(context.Background(), ac, runtime.BuildEnv{Host: host, Generator: client, Model: m,
		MaxModelLen: func(ctx context.Context) (int, error) { return client.MaxModelLen(ctx, "") }, Server: h.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.agent.Close(context.Background()) })
	return h
}
