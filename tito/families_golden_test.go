package tito

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// familyGolden is one file written by scripts/golden/families_golden.py (transformers' apply_chat_template on the
// chat templates in testdata/families).
type familyGolden struct {
	Family        string            `json:"family"`
	SpecialTokens map[string]string `json:"special_tokens"`
	Stops         []string          `json:"stops"`
	// Now is strftime_now's frozen clock when the goldens were made (a naive local time, as Python's).
	Now   string `json:"now"`
	Cases []struct {
		Kind                string                     `json:"kind"`
		Name                string                     `json:"name"`
		Kwargs              map[string]json.RawMessage `json:"kwargs"`
		Messages            json.RawMessage            `json:"messages"`
		History             json.RawMessage            `json:"history"`
		New                 json.RawMessage            `json:"new"`
		Tools               json.RawMessage            `json:"tools"`
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		Expected            *string                    `json:"expected"`
		ExpectedFull        *string                    `json:"expected_full"`
		ExpectedDelta       *string                    `json:"expected_delta"`
		ExpectedError       *string                    `json:"expected_error"`
		ErrorType           string                     `json:"error_type"`
		Raised              bool                       `json:"raised"`
		RewritesHistory     bool                       `json:"rewrites_history"`
	} `json:"cases"`
}

func loadFamilyGoldens(t testing.TB) []familyGolden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "families", "golden", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases in testdata/families/golden (run scripts/golden/families_golden.py): %v", err)
	}
	var out []familyGolden
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g familyGolden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, g)
	}
	return out
}

func familyChatTemplate(t testing.TB, g familyGolden) *ChatTemplate {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "families", g.Family, "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse("2006-01-02T15:04:05", g.Now)
	if err != nil {
		t.Fatalf("%s: golden clock %q: %v", g.Family, g.Now, err)
	}
	tpl, err := NewChatTemplate(string(src), g.SpecialTokens, WithEndOfTurn(g.Stops...), WithName(g.Family),
		WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatalf("%s: %v", g.Family, err)
	}
	return tpl
}

// TestFamiliesGolden renders every family's corpus and compares with transformers byte for byte: full renders,
// errors (raise_exception's message verbatim) and later-turn deltas (the full render's tail after the history).
func TestFamiliesGolden(t *testing.T) {
	t.Parallel()
	for _, g := range loadFamilyGoldens(t) {
		t.Run(g.Family, func(t *testing.T) {
			t.Parallel()
			tpl := familyChatTemplate(t, g)
			probeOnly := familyChatTemplate(t, g)
			probeOnly.probeOnly = true
			for _, c := range g.Cases {
				t.Run(c.Kind+"/"+c.Name, func(t *testing.T) {
					o := RenderOptions{AddGenerationPrompt: c.AddGenerationPrompt}
					if len(c.Tools) > 0 && string(c.Tools) != "null" {
						tools, err := DecodeTools(c.Tools)
						if err != nil {
							t.Fatal(err)
						}
						o.Tools = tools
					}
					if len(c.Kwargs) > 0 {
						o.Kwargs = map[string]any{}
						for k, v := range c.Kwargs {
							o.Kwargs[k] = v
						}
					}
					var got string
					var err error
					var history, newMsgs []Message
					if c.Kind == "render" {
						got, err = tpl.Render(mustMessages(t, c.Messages), o)
					} else {
						history, newMsgs = mustMessages(t, c.History), mustMessages(t, c.New)
						got, err = tpl.Render(slices.Concat(history, newMsgs), o)
					}
					if c.ExpectedError != nil {
						checkGoldenError(t, err, c.ErrorType, *c.ExpectedError, c.Raised)
						if c.Kind == "delta" {
							_, err := tpl.RenderDelta(history, newMsgs, o)
							checkGoldenError(t, err, c.ErrorType, *c.ExpectedError, c.Raised)
						}
						return
					}
					if err != nil {
						t.Fatalf("transformers renders, tito fails: %v", err)
					}
					want := c.Expected
					if c.Kind == "delta" {
						want = c.ExpectedFull
					}
					if got != *want {
						t.Fatalf("render differs from transformers\n%s", textDiff(got, *want))
					}
					if c.Kind != "delta" {
						return
					}
					delta, err := tpl.RenderDelta(history, newMsgs, o)
					// the one-render cut and the probe's must agree, error or not
					if d2, err2 := probeOnly.RenderDelta(history, newMsgs, o); d2 != delta || (err == nil) != (err2 == nil) {
						t.Fatalf("RenderDelta in one render = %q, %v; with the probe = %q, %v", tmplTail(delta), err, tmplTail(d2), err2)
					}
					if c.ExpectedDelta == nil {
						if err == nil {
							t.Fatalf("RenderDelta = %q; transformers' full render does not continue the history as generated, so no delta is exact", delta)
						}
						return
					}
					if err != nil {
						t.Fatalf("RenderDelta: %v", err)
					}
					if delta != *c.ExpectedDelta {
						t.Fatalf("delta differs from the tail of transformers' full render (rewrites history: %v)\n%s", c.RewritesHistory, textDiff(delta, *c.ExpectedDelta))
					}
					for _, s := range g.Stops {
						if tpl.StartsNextMessage(s) && !strings.HasPrefix(delta, "<|") {
							t.Errorf("StartsNextMessage(%q) but the delta %q does not start with a stop token", s, tmplTail(delta))
						}
					}
				})
			}
		})
	}
}

// checkGoldenError checks that tito fails where transformers raised; raise_exception's message must be verbatim.
func checkGoldenError(t *testing.T, err error, typ, msg string, raised bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("tito renders; transformers raised %s: %s", typ, msg)
	}
	if raised {
		var te *TemplateError
		if !errors.As(err, &te) || !te.Raised || te.Message != msg {
			t.Fatalf("error %v, want raise_exception(%q)", err, msg)
		}
	}
}

// TestFamiliesDeltaCheck runs DeltaCheck on every family and variant: the families whose delta cannot be exact
// on the canonical conversation are refused, with the reason transformers gives.
func TestFamiliesDeltaCheck(t *testing.T) {
	t.Parallel()
	// The families that DeltaCheck refuses, and why (transformers itself fails on the canonical conversation or
	// renders the answered turn differently from what the model generated).
	refused := map[string]string{
		"gemma3":           "Conversation roles must alternate",
		"kimi-k2-thinking": "unknown method",                // list.append, which transformers' sandbox rejects too
		"gpt-oss":          "user message after the answer", // the template ends the answer with <|end|>, the model with <|return|>
		"deepseek-v3.1":    "string and map",                // wants arguments as a JSON string (Python raises too)
	}
	for _, g := range loadFamilyGoldens(t) {
		tpl := familyChatTemplate(t, g)
		variants := map[string]map[string]json.RawMessage{}
		for _, c := range g.Cases {
			variants[strings.SplitN(c.Name, "/", 2)[0]] = c.Kwargs
		}
		for name, kw := range variants {
			o := RenderOptions{}
			if len(kw) > 0 {
				o.Kwargs = map[string]any{}
				for k, v := range kw {
					o.Kwargs[k] = v
				}
			}
			err := tpl.DeltaCheck(o)
			reason, isRefused := refused[g.Family]
			switch {
			case isRefused && err == nil:
				t.Errorf("%s %s: DeltaCheck passes; expected a refusal (%s)", g.Family, name, reason)
			case isRefused && !strings.Contains(err.Error(), reason):
				t.Errorf("%s %s: DeltaCheck refuses with %v, want a reason containing %q", g.Family, name, err, reason)
			case !isRefused && err != nil:
				t.Errorf("%s %s: DeltaCheck: %v", g.Family, name, err)
			}
			if err != nil {
				t.Logf("%s %s refused: %v", g.Family, name, err)
			}
		}
	}
}
