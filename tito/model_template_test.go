package tito

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadModelTemplateMatchesLoadModel: without its tokenizer, a real folder's template, special tokens and
// added tokens read the same as LoadModel reads them.
func TestLoadModelTemplateMatchesLoadModel(t *testing.T) {
	for _, name := range []string{"qwen3", "qwen2.5", "llama3.1"} {
		full := tkModel(t, name)
		m, err := LoadModelTemplate(full.Dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Tokenizer != nil || m.StopIDs != nil || m.TokenizerSHA256 != "" {
			t.Errorf("%s: tokenizer-derived fields set: %v %v %q", name, m.Tokenizer, m.StopIDs, m.TokenizerSHA256)
		}
		if m.TemplateSource != full.TemplateSource || m.TemplateFile != full.TemplateFile || m.TemplateSHA256 != full.TemplateSHA256 {
			t.Errorf("%s: template %s (%s), want %s (%s)", name, m.TemplateFile, m.TemplateSHA256, full.TemplateFile, full.TemplateSHA256)
		}
		if m.BOSToken != full.BOSToken || m.EOSToken != full.EOSToken || m.PadToken != full.PadToken || m.UnkToken != full.UnkToken {
			t.Errorf("%s: special tokens %q %q %q %q differ from LoadModel's", name, m.BOSToken, m.EOSToken, m.PadToken, m.UnkToken)
		}
		if len(m.AddedTokens) > 0 && !slices.EqualFunc(m.AddedTokens, full.AddedTokens, func(a, b AddedToken) bool {
			return a.ID == b.ID && a.Content == b.Content && a.Special == b.Special
		}) {
			t.Errorf("%s: added tokens differ from LoadModel's", name)
		}
	}
}

func TestLoadModelTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadModelTemplate(filepath.Join(dir, "nope")); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "model folder") {
		t.Errorf("missing folder: %v", err)
	}
	if _, err := LoadModelTemplate(dir); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), FileTokenizerConfig) {
		t.Errorf("no tokenizer_config.json: %v", err)
	}
	os.WriteFile(filepath.Join(dir, FileTokenizerConfig), []byte(`{"eos_token": 7}`), 0o644)
	if _, err := LoadModelTemplate(dir); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "eos_token") {
		t.Errorf("bad eos_token: %v", err)
	}
	os.WriteFile(filepath.Join(dir, FileTokenizerConfig), []byte(`{"eos_token": "</s>", "added_tokens_decoder": {"x": {"content": "a"}}}`), 0o644)
	if _, err := LoadModelTemplate(dir); !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "added_tokens_decoder[x]") {
		t.Errorf("bad added token id: %v", err)
	}
}
