package family

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/tito"
)

// sglangTemplates are the templates SGLang's documentation has DeepSeek served with (--chat-template), kept in
// testdata/sglang-templates with their source: with them, the DeepSeek families pass the self-test.
var sglangTemplates = map[string]string{
	"deepseek-v3":   "tool_chat_template_deepseekv3.jinja",
	"deepseek-r1":   "tool_chat_template_deepseekv3.jinja",
	"deepseek-v3.1": "tool_chat_template_deepseekv31.jinja",
}

func TestSelfTestDeepSeekWithSGLangTemplates(t *testing.T) {
	for fam, file := range sglangTemplates {
		t.Run(fam, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "sglang-templates", file))
			if err != nil {
				t.Fatal(err)
			}
			m := loadRef(t, fam).WithChatTemplate(string(src), file)
			det, r := CheckModel(m, nil, fam, "", nil, nil)
			if err := r.Err(); err != nil {
				t.Fatalf("%s with %s: %v\n%s", fam, file, err, steps(r))
			}
			if det.Profile.Name != fam {
				t.Errorf("profile %s, want %s", det.Profile.Name, fam)
			}
			// The stock template is refused with the way out.
			_, r = CheckModel(loadRef(t, fam), nil, fam, "", nil, nil)
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "chat_template") {
				t.Errorf("stock %s template: %v; want a refusal naming chat_template and %s", fam, err, file)
			}
		})
	}
}

// TestSGLangTemplatesGolden: tito renders SGLang's DeepSeek templates as transformers does, byte for byte, on the
// families corpus (testdata/sglang-templates/golden.json, written by scripts/golden/sglang_templates_golden.py):
// full renders, full renders of the delta cases, and an error wherever transformers raises.
func TestSGLangTemplatesGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sglang-templates", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Now       string `json:"now"`
		Templates map[string]struct {
			SpecialTokens map[string]string `json:"special_tokens"`
			Cases         []struct {
				Name                string          `json:"name"`
				Messages            json.RawMessage `json:"messages"`
				Tools               json.RawMessage `json:"tools"`
				AddGenerationPrompt bool            `json:"add_generation_prompt"`
				Expected            *string         `json:"expected"`
				ExpectedError       *string         `json:"expected_error"`
			} `json:"cases"`
		} `json:"templates"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse("2006-01-02T15:04:05", g.Now)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Templates) != 2 {
		t.Fatalf("%d templates in golden.json, want 2", len(g.Templates))
	}
	for file, tg := range g.Templates {
		src, err := os.ReadFile(filepath.Join("testdata", "sglang-templates", file))
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := tito.NewChatTemplate(string(src), tg.SpecialTokens, tito.WithName(file), tito.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tg.Cases {
			t.Run(file+"/"+c.Name, func(t *testing.T) {
				msgs, err := tito.DecodeMessages(c.Messages)
				if err != nil {
					t.Fatal(err)
				}
				o := tito.RenderOptions{AddGenerationPrompt: c.AddGenerationPrompt}
				if len(c.Tools) > 0 && string(c.Tools) != "null" {
					if o.Tools, err = tito.DecodeTools(c.Tools); err != nil {
						t.Fatal(err)
					}
				}
				got, err := tpl.Render(msgs, o)
				switch {
				case c.ExpectedError != nil:
					if err == nil {
						t.Fatalf("transformers raises %q, tito renders %.200q", *c.ExpectedError, got)
					}
				case err != nil:
					t.Fatalf("transformers renders, tito fails: %v", err)
				case got != *c.Expected:
					i := 0
					for i < len(got) && i < len(*c.Expected) && got[i] == (*c.Expected)[i] {
						i++
					}
					t.Fatalf("render differs from transformers at byte %d:\n got %.120q\nwant %.120q", i, got[i:], (*c.Expected)[i:])
				}
			})
		}
	}
}
