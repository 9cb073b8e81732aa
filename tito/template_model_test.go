package tito

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// modelsForGolden loads each model folder the golden cases name, once.
type goldenModels struct {
	mu     sync.Mutex
	models map[string]*Model
}

func (g *goldenModels) get(t *testing.T, env string) *Model {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if m, ok := g.models[env]; ok {
		return m
	}
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("$%s is not set (source ~/.cache/agentrt/env.sh)", env)
	}
	m, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.models == nil {
		g.models = map[string]*Model{}
	}
	g.models[env] = m
	return m
}

// TestTemplateGoldenModel renders the golden cases with the template and special tokens that LoadModel reads
// from the real model folders, and compares the token ids of the render with transformers' id for id. For delta
// cases it proves the token-level TITO property: ids(history up to its end-of-turn) + ids(delta) = ids(full).
func TestTemplateGoldenModel(t *testing.T) {
	var g goldenModels
	t.Cleanup(func() {
		for _, m := range g.models {
			m.Close()
		}
	})
	tpls := map[string]*ChatTemplate{}
	for _, c := range loadGoldenCases(t) {
		if c.Kind == "error" {
			continue
		}
		t.Run(strings.TrimSuffix(c.file, ".json"), func(t *testing.T) {
			m := g.get(t, c.ModelEnv)
			key := c.ModelEnv + "/" + c.Template
			tpl, ok := tpls[key]
			if !ok && c.Family == "engine" { // a test template, with the model's special tokens
				src, err := os.ReadFile(filepath.Join("testdata", "template", c.Template))
				if err != nil {
					t.Fatal(err)
				}
				if tpl, err = NewChatTemplate(string(src), m.SpecialTokens()); err != nil {
					t.Fatal(err)
				}
				tpls[key] = tpl
			} else if !ok {
				src, err := os.ReadFile(filepath.Join("testdata", "template", c.Template))
				if err != nil {
					t.Fatal(err)
				}
				if m.TemplateSource != string(src) {
					t.Fatalf("LoadModel's template differs from the one transformers loaded (%s)", c.Template)
				}
				if got := map[string]string(m.SpecialTokens()); !maps.Equal(got, c.SpecialTokens) {
					t.Fatalf("special tokens %v, transformers passes %v", got, c.SpecialTokens)
				}
				if tpl, err = m.ChatTemplate(); err != nil {
					t.Fatal(err)
				}
				tpls[key] = tpl
			}
			o := c.options(t)
			tok := m.Tokenizer
			switch c.Kind {
			case "render":
				got, err := tpl.Render(mustMessages(t, c.Messages), o)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.Expected {
					t.Fatalf("render differs\n%s", textDiff(got, c.Expected))
				}
				if ids := tok.Encode(got, false); !slices.Equal(ids, c.ExpectedIDs) {
					t.Errorf("ids differ from transformers: %s", idDiff(ids, c.ExpectedIDs))
				}
			case "delta":
				newMsgs := mustMessages(t, c.New)
				delta, err := tpl.RenderDelta(mustMessages(t, c.History), newMsgs, o)
				if err != nil {
					t.Fatal(err)
				}
				if ids := tok.Encode(c.ExpectedFull, false); !slices.Equal(ids, c.ExpectedFullIDs) {
					t.Fatalf("full-render ids differ from transformers: %s", idDiff(ids, c.ExpectedFullIDs))
				}
				before := c.ExpectedFull[:len(c.ExpectedFull)-len(delta)]
				if !strings.HasSuffix(c.ExpectedFull, delta) {
					t.Fatalf("delta %q is not a suffix of the full render", delta)
				}
				joined := append(tok.Encode(before, false), tok.Encode(delta, false)...)
				if !slices.Equal(joined, c.ExpectedFullIDs) {
					t.Errorf("ids(history) + ids(delta) differ from ids(full): %s", idDiff(joined, c.ExpectedFullIDs))
				}
			}
		})
	}
}

func idDiff(got, want []int32) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	return "first difference at index " + strconv.Itoa(i) + ": got " + idSpan(got, lo, i+5) + ", want " + idSpan(want, lo, i+5) +
		" (lengths " + strconv.Itoa(len(got)) + ", " + strconv.Itoa(len(want)) + ")"
}

func idSpan(ids []int32, lo, hi int) string {
	hi = min(hi, len(ids))
	lo = min(lo, hi)
	var b strings.Builder
	for i, id := range ids[lo:hi] {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	return "[" + b.String() + "]"
}
