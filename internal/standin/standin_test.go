package standin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// TestStandIns: each family's folder loads with its own template, bos and eos; every listed token is one token
// (Dir checks); the tokens the base vocabulary lacks sit after its last id, and the base's own tokens keep their
// ids.
func TestStandIns(t *testing.T) {
	bases, parent := map[string]*tito.Model{}, t
	for fam, list := range Tokens {
		t.Run(fam, func(t *testing.T) {
			env := Base(fam)
			base := bases[env]
			if base == nil {
				var err error
				if base, err = tito.LoadModel(os.Getenv(env)); err != nil {
					t.Fatalf("$%s: %v", env, err)
				}
				bases[env] = base
				parent.Cleanup(base.Close) // shared by the subtests on the same base
			}
			m := Model(t, fam)
			ref, err := os.ReadFile(filepath.Join(FamiliesDir(), fam, tito.FileChatTemplate))
			if err != nil {
				t.Fatal(err)
			}
			if m.TemplateSource != string(ref) || m.EOSToken == "" || len(m.StopIDs) != 1 {
				t.Fatalf("template from %s (the family's: %v), eos %q, stop ids %v", m.TemplateFile, m.TemplateSource == string(ref), m.EOSToken, m.StopIDs)
			}
			for _, s := range list {
				id, _ := m.Tokenizer.TokenID(s)
				if was, ok := base.Tokenizer.TokenID(s); ok && id != was {
					t.Errorf("%q: id %d, the base's is %d", s, id, was)
				} else if !ok && int(id) < base.Tokenizer.VocabSize() {
					t.Errorf("%q: id %d, within the base's %d ids", s, id, base.Tokenizer.VocabSize())
				}
			}
			for _, a := range base.AddedTokens {
				if id, ok := m.Tokenizer.TokenID(a.Content); !ok || id != a.ID {
					t.Errorf("the base's %q: id %d (present %v), want %d", a.Content, id, ok, a.ID)
				}
			}
		})
	}
}
