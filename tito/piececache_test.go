package tito

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The piece cache must agree with the tokenizer on every golden string and on random mixes of text and added
// tokens, cached or not (the tokenizer itself is checked against Hugging Face's Python library elsewhere).
func TestPieceCacheMatchesTokenizer(t *testing.T) {
	for _, m := range []struct{ env, golden string }{{"AGENTRT_QWEN3_MODEL", "qwen3.json"}, {"AGENTRT_LLAMA31_MODEL", "llama3.1.json"}} {
		t.Run(m.golden, func(t *testing.T) {
			dir := os.Getenv(m.env)
			if dir == "" {
				t.Fatalf("%s is not set: source ~/.cache/agentrt/env.sh", m.env)
			}
			tok, err := LoadTokenizer(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer tok.Close()
			c := NewPieceCache(tok, 64)
			if !c.verbatim {
				t.Fatal("the piece cache refused a tokenizer whose added tokens all match verbatim")
			}
			b, err := os.ReadFile(filepath.Join("testdata", "tokenizer", m.golden))
			if err != nil {
				t.Fatal(err)
			}
			var g struct {
				Encode []struct {
					Name, Text string
					IDs        []int32 `json:"ids"`
				}
			}
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			var added []string
			for _, a := range tok.AddedTokens() {
				added = append(added, a.Content)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			texts := []string{}
			for _, e := range g.Encode {
				texts = append(texts, e.Text)
				if got := c.Encode(e.Text, false); !slices.Equal(got, e.IDs) {
					t.Fatalf("%s: piece cache %v, transformers %v", e.Name, got, e.IDs)
				}
			}
			for range 3000 {
				var sb strings.Builder
				for range 1 + rng.IntN(6) {
					switch rng.IntN(3) {
					case 0:
						sb.WriteString(added[rng.IntN(len(added))])
					case 1:
						s := texts[rng.IntN(len(texts))]
						sb.WriteString(s[:len(s)/2+rng.IntN(len(s)/2+1)])
					default:
						sb.WriteString([]string{" ", "\n", "<", "<|", "|>", "x", "  ", "\n\n"}[rng.IntN(8)])
					}
				}
				s := sb.String()
				for range 2 { // the second time from the cache
					if got, want := c.Encode(s, false), tok.Encode(s, false); !slices.Equal(got, want) {
						t.Fatalf("%q: piece cache %v, tokenizer %v", s, got, want)
					}
				}
			}
		})
	}
}

// BenchmarkPieceCacheFirstPrompt encodes a first prompt whose pieces are all cached (Qwen3: a system prompt with
// three tool specs and a user message): what is left is finding the added tokens in the text.
func BenchmarkPieceCacheFirstPrompt(b *testing.B) {
	m := tkModel(b, "qwen3")
	tpl := familyBenchTemplate(b, "qwen3")
	text, err := tpl.Render([]Message{{Role: RoleSystem, Content: "You are a helpful agent."},
		{Role: RoleUser, Content: "Find the population of Lyon and compute its square root."}},
		RenderOptions{Tools: benchTools(), AddGenerationPrompt: true})
	if err != nil {
		b.Fatal(err)
	}
	c := NewPieceCache(m.Tokenizer, 64)
	want := c.Encode(text, false)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if got := c.Encode(text, false); len(got) != len(want) {
			b.Fatalf("%d ids, want %d", len(got), len(want))
		}
	}
}
