package tito

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snippetDeviations are the Python behaviours of the snippets golden (testdata/snippets.json) that the
// engine does not reproduce, with the reason. No family template in testdata/families depends on them.
var snippetDeviations = map[string]string{
	"percent_format": "minijinja has no printf-style '%' on strings (and no hook for operators); no family template uses it",
	"loop_vars":      "minijinja does not know the length of a loop over a string: loop.length, loop.last and loop.revindex are undefined there (they work over lists)",
}

// TestTemplateSnippetsGolden renders the snippets of Python/Jinja2 behaviour that chat templates rely on and
// compares with transformers byte for byte; where transformers raises, tito must fail (raise_exception with the
// same message).
func TestTemplateSnippetsGolden(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "snippets.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kwargs        map[string]json.RawMessage `json:"kwargs"`
		SpecialTokens map[string]string          `json:"special_tokens"`
		Cases         []struct {
			Name          string  `json:"name"`
			Template      string  `json:"template"`
			Expected      *string `json:"expected"`
			ExpectedError string  `json:"expected_error"`
			ErrorType     string  `json:"error_type"`
			Raised        bool    `json:"raised"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	o := RenderOptions{Kwargs: map[string]any{}}
	for k, v := range doc.Kwargs {
		o.Kwargs[k] = v
	}
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := snippetDeviations[c.Name]; ok {
				t.Skip("known deviation: " + why)
			}
			tpl, err := NewChatTemplate(c.Template, doc.SpecialTokens)
			if err == nil {
				var got string
				got, err = tpl.Render([]Message{{Role: RoleUser, Content: "hi"}}, o)
				if err == nil && c.Expected != nil {
					if got != *c.Expected {
						t.Fatalf("template %q\n got: %q\nwant: %q", c.Template, got, *c.Expected)
					}
					return
				}
			}
			if c.Expected != nil {
				t.Fatalf("template %q: %v; transformers renders %q", c.Template, err, *c.Expected)
			}
			if err == nil {
				t.Fatalf("template %q renders; transformers raised %s: %s", c.Template, c.ErrorType, c.ExpectedError)
			}
			var te *TemplateError
			if c.Raised && (!errors.As(err, &te) || !te.Raised || te.Message != c.ExpectedError) {
				t.Fatalf("error %v, want raise_exception(%q)", err, c.ExpectedError)
			}
		})
	}
}

// TestTemplateBounds renders hostile templates: each must fail with an error (bounded recursion, loops and
// output), never crash or hang the process.
func TestTemplateBounds(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"recursive macro":    "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
		"mutual recursion":   "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}",
		"endless loops":      "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
		"string blow-up":     "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
		"replace blow-up":    "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s.replace('x', 'xx') %}{% endfor %}{{ ns.s | length }}",
		"nested expressions": "{{ " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + " }}",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tpl, err := NewChatTemplate(src, nil)
			if err == nil {
				_, err = tpl.Render([]Message{{Role: RoleUser, Content: "hi"}}, RenderOptions{})
			}
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *TemplateError", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestTemplateLongConversation checks that the engine's bounds leave room for long episodes: 1,000 messages of
// tool rounds with the heaviest family templates.
func TestTemplateLongConversation(t *testing.T) {
	t.Parallel()
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "lookup", "description": "Look up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}}`)}
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "go"}}
	for i := 0; len(msgs) < 1000; i++ {
		id := "call" + strings.Repeat("0", 5) + string(rune('a'+i%26))
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: "", ReasoningContent: "thinking", ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "lookup", Arguments: json.RawMessage(`{"word": "w"}`)}}}},
			Message{Role: RoleTool, ToolCallID: id, Name: "lookup", Content: strings.Repeat("result ", 50)})
	}
	for _, g := range loadFamilyGoldens(t) {
		if g.Family != "qwen3" && g.Family != "gpt-oss" && g.Family != "seed-oss" && g.Family != "glm-4.6" {
			continue
		}
		tpl := familyChatTemplate(t, g)
		if _, err := tpl.Render(msgs, RenderOptions{Tools: tools, AddGenerationPrompt: true}); err != nil {
			t.Errorf("%s: %d messages: %v", g.Family, len(msgs), err)
		}
	}
}
