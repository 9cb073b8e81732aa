package family

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

const refDir = "../../tito/testdata/families" // the reference templates, shared with tito's golden tests

// refFamilies reads families.json: per family, the kwargs variants worth testing.
func refFamilies(t *testing.T) map[string]struct {
	Stops    []string         `json:"stops"`
	Variants []map[string]any `json:"variants"`
} {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(refDir, "families.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fams map[string]struct {
		Stops    []string         `json:"stops"`
		Variants []map[string]any `json:"variants"`
	}
	if err := json.Unmarshal(data, &fams); err != nil {
		t.Fatal(err)
	}
	return fams
}

func loadRef(t *testing.T, name string) *tito.Model {
	t.Helper()
	m, err := tito.LoadModelTemplate(filepath.Join(refDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTableCoversReferenceFamilies: every reference family has a profile and every profile a reference folder,
// with the same extra end-of-turn tokens.
func TestTableCoversReferenceFamilies(t *testing.T) {
	fams := refFamilies(t)
	for name, f := range fams {
		p, err := Lookup(name)
		if err != nil {
			t.Errorf("reference family %s has no profile: %v", name, err)
			continue
		}
		if !sameSet(p.Stops, f.Stops) {
			t.Errorf("%s: profile stops %q, reference says %q", name, p.Stops, f.Stops)
		}
	}
	for _, p := range Profiles {
		if _, ok := fams[p.Name]; !ok {
			t.Errorf("profile %s has no reference template in %s", p.Name, refDir)
		}
		if (p.Parser == "") == (p.Unsupported == "") {
			t.Errorf("profile %s: want exactly one of parser (%q) and unsupported (%q)", p.Name, p.Parser, p.Unsupported)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestDetectReferenceTemplates: each family's real template is detected as that family, and as no other.
func TestDetectReferenceTemplates(t *testing.T) {
	for name := range refFamilies(t) {
		m := loadRef(t, name)
		d, err := Detect(m, "")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d.Profile.Name != name || d.By != "chat template" || len(d.Others) > 0 {
			t.Errorf("%s: detected %s by %s (also matched %v), want %s by its chat template alone", name, d.Profile.Name, d.By, d.Others, name)
		}
	}
}

// TestDetectOverride: runtime.toml's family wins over detection; an unknown name is an error listing the known.
func TestDetectOverride(t *testing.T) {
	m := loadRef(t, "qwen3")
	d, err := Detect(m, "glm-4.6")
	if err != nil || d.Profile.Name != "glm-4.6" || d.By != "family = glm-4.6" {
		t.Fatalf("Detect(qwen3, glm-4.6) = %+v, %v", d, err)
	}
	_, err = Detect(m, "qwen9")
	if !errors.Is(err, ErrUnknownFamily) || !strings.Contains(err.Error(), `"qwen9"`) || !strings.Contains(err.Error(), "qwen3, ") {
		t.Fatalf("Detect(qwen9) error = %v, want ErrUnknownFamily naming it and the known families", err)
	}
}

// TestDetectBySpecialTokens: without a recognisable template, a family's own special tokens identify it; shared
// or unknown tokens identify nothing, and the error says what to set.
func TestDetectBySpecialTokens(t *testing.T) {
	m := loadRef(t, "glm-4.6")
	m.TemplateSource = "{{ messages }}"
	if _, err := Detect(m, ""); !errors.Is(err, ErrUnknownFamily) || !strings.Contains(err.Error(), "set family") {
		t.Fatalf("GLM config without added tokens: error %v, want ErrUnknownFamily saying to set family", err)
	}
	m.AddedTokens = []tito.AddedToken{{ID: 1, Content: "<|observation|>", Special: true}}
	d, err := Detect(m, "")
	if err != nil || d.Profile.Name != "glm-4.6" || d.By != "special tokens" {
		t.Fatalf("with <|observation|> added: %+v, %v, want glm-4.6 by special tokens", d, err)
	}
	m.AddedTokens = append(m.AddedTokens, tito.AddedToken{ID: 2, Content: "<|im_middle|>"}, tito.AddedToken{ID: 3, Content: "<|tool_calls_section_begin|>"})
	if d, err := Detect(m, ""); err == nil {
		t.Fatalf("tokens of two families: detected %s, want no family", d.Profile.Name)
	}
}
