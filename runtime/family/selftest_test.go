package family

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// selfTestWant is what the self-test says today for each reference family, for every kwargs variant of
// families.json: "" means it passes; otherwise the first failed check and a part of its reason. A change in the
// engine, the parsers or the table that changes an outcome must change this table too, on purpose.
var selfTestWant = map[string]string{
	"qwen3":               "",
	"qwen3-2507-instruct": "",
	"qwen3-2507-thinking": "",
	"qwen3-coder":         "",
	"qwen3.5":             "",
	"qwen2.5":             "",
	"hermes-3":            "",
	"llama3.1":            "",
	"llama3.2":            "",
	"kimi-k2":             "",
	"qwq-32b":             "",
	"kimi-k2-thinking":    "delta check: tito: delta check: first tool result: full render:", // list.append: transformers raises too
	"glm-4.6":             "",
	"glm-4.7-flash":       "",
	"gemma3":              "parser: the chat template has no tool-call format",
	"gpt-oss":             "",
	"minimax-m2":          "",
	"deepseek-v3":         "first prompt: the template does not render the tool specs",
	"deepseek-r1":         "first prompt: the template does not render the tool specs",
	"deepseek-v3.1":       "first prompt: the template does not render the tool specs",
	"mistral-small-3.2":   "",
	"mistral-nemo":        "",
	"devstral-small":      "",
	"seed-oss":            "",
	"smollm3":             "parser: the chat template ignores tools and tool calls",
	"phi-4":               "parser: the chat template ignores tools and tool calls",
	"granite-3.3":         "parser: no built-in parser for Granite's <|tool_call|> JSON list",
}

// TestSelfTestReferenceFamilies runs the self-test on every reference family's real template, with each kwargs
// variant: supported families pass, the others are refused with their reason.
func TestSelfTestReferenceFamilies(t *testing.T) {
	fams := refFamilies(t)
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	passed := 0
	for _, name := range names {
		want, ok := selfTestWant[name]
		if !ok {
			t.Errorf("%s: no expectation in selfTestWant", name)
			continue
		}
		for _, kw := range fams[name].Variants {
			_, r := CheckModel(loadRef(t, name), nil, "", "", kw, nil)
			err := r.Err()
			switch {
			case want == "" && err != nil:
				t.Errorf("%s %v: %v\n%s", name, kw, err, steps(r))
			case want != "" && err == nil:
				t.Errorf("%s %v: passed, want a refusal with %q\n%s", name, kw, want, steps(r))
			case want != "" && !strings.Contains(err.Error(), want):
				t.Errorf("%s %v: %v\nwant a refusal with %q", name, kw, err, want)
			case err == nil:
				passed++
				if r.Checks[len(r.Checks)-1].Name != "round trip" {
					t.Errorf("%s %v: passed without a round trip:\n%s", name, kw, steps(r))
				}
				// The model's turn as the self-test found it holds no end of turn (it is one turn).
				eos := loadRef(t, name).EOSToken
				for _, c := range r.Checks {
					if c.Name == "tool call" && eos != "" && strings.Contains(c.Detail, eos) {
						t.Errorf("%s %v: the model's turn spans an end of turn %q: %s", name, kw, eos, c.Detail)
					}
				}
			}
		}
	}
	t.Logf("%d family variants pass the self-test", passed)
}

func steps(r *Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %-20s ok=%v %s\n", c.Name, c.OK, c.Detail)
	}
	return b.String()
}

// TestSelfTestCatchesBreakage: a wrong parser, an unread kwarg and a template whose delta disagrees with its full
// render each fail the self-test with the reason.
func TestSelfTestCatchesBreakage(t *testing.T) {
	m := loadRef(t, "qwen3")
	for _, c := range []struct {
		name, parser string
		kwargs       map[string]any
		want         string
	}{
		{"wrong parser", "llama3", nil, "round trip: parser llama3 found 0 calls"},
		{"xml parser on json calls", "qwen3_coder", nil, "round trip: parser qwen3_coder rejected the template's own tool call: invalid_format"},
		{"misspelt kwarg", "", map[string]any{"enable_thinkng": false}, "chat_template_kwargs: the chat template never reads enable_thinkng (the qwen3 family's template reads: enable_thinking)"},
		{"unknown parser", "nope", nil, `parser: its tool-call parser "nope" is not built in yet`},
	} {
		_, r := CheckModel(m, nil, "", c.parser, c.kwargs, nil)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q\n%s", c.name, err, c.want, steps(r))
		}
	}

	// A template that does not write the assistant's tool calls.
	m.TemplateSource = strings.ReplaceAll(m.TemplateSource, "message.tool_calls", "message.tool_callz")
	if m.TemplateSource == loadRef(t, "qwen3").TemplateSource {
		t.Fatal("the qwen3 template changed: update the edit above")
	}
	_, r := CheckModel(m, nil, "", "", nil, nil)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "tool call: the template does not render the assistant's tool call") {
		t.Errorf("template without tool calls: %v, want a tool call failure\n%s", err, steps(r))
	}
}

// TestSelfTestToolSpecsNotRendered: a template that leaves the tool specs out of the prompt fails at the first
// prompt, with one failed check (not an ok one and a failed one).
func TestSelfTestToolSpecsNotRendered(t *testing.T) {
	m := loadRef(t, "qwen3")
	m.TemplateSource = strings.ReplaceAll(m.TemplateSource, "tool | tojson", "'{}'")
	if m.TemplateSource == loadRef(t, "qwen3").TemplateSource {
		t.Fatal("the qwen3 template changed: update the edit above")
	}
	_, r := CheckModel(m, nil, "", "", nil, nil)
	last := r.Checks[len(r.Checks)-1]
	if err := r.Err(); err == nil || last.Name != "first prompt" || last.OK || r.Checks[len(r.Checks)-2].Name == "first prompt" {
		t.Errorf("template without tool specs: %v\n%s", err, steps(r))
	}
}

// historyWant is what the history probe finds in each reference family that reasons and passes the self-test
// (kwargs as families.json's first variant): whether its template shows an earlier turn's reasoning within a tool loop
// and after a new user message. A family that drops it somewhere is one for history = "as-deployed".
var historyWant = map[string]string{
	"qwen3":               "once a new user message comes",
	"qwen3-2507-thinking": "once a new user message comes",
	"qwen3.5":             "once a new user message comes",
	"qwq-32b":             "drops every earlier turn's reasoning",
	"glm-4.6":             "once a new user message comes",
	"glm-4.7-flash":       "once a new user message comes",
	"gpt-oss":             "once a new user message comes",
	"minimax-m2":          "once a new user message comes",
	"seed-oss":            "shows earlier turns' reasoning again",
}

// TestHistoryProbe: the self-test says, from the template itself, how it renders earlier reasoning.
func TestHistoryProbe(t *testing.T) {
	fams := refFamilies(t)
	for name, want := range historyWant {
		_, r := CheckModel(loadRef(t, name), nil, "", "", fams[name].Variants[0], nil)
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(r.History, want) || r.HistoryRewritten == strings.Contains(want, "shows") {
			t.Errorf("%s: history %q (rewritten %v), want %q", name, r.History, r.HistoryRewritten, want)
		}
	}
	// A family without reasoning markup is not probed.
	if _, r := CheckModel(loadRef(t, "qwen2.5"), nil, "", "", fams["qwen2.5"].Variants[0], nil); r.History != "" {
		t.Errorf("qwen2.5: history %q, want none (no reasoning markup)", r.History)
	}
}

// The self-test finds the template's delta window (the messages tool results are rendered after): Qwen3's needs
// the first message and the model's last turn; the report says so.
func TestSelfTestDeltaWindow(t *testing.T) {
	_, r := CheckModel(loadRef(t, "qwen3"), nil, "", "", map[string]any{"enable_thinking": true}, nil)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := (tito.DeltaWindow{Head: 1, Tail: 1}); r.Window != want || !strings.Contains(r.WindowDetail, want.String()) {
		t.Fatalf("window %v (%s), want %v", r.Window, r.WindowDetail, want)
	}
}
