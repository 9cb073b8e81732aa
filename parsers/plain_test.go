package parsers

import (
	"strings"
	"testing"
)

// checkPlain fails when Plain claims a text holds nothing that the parser of the format finds something in, or
// gives another normal text.
func checkPlain(t testing.TB, name, text string, tools *Tools) bool {
	t.Helper()
	normal, ok := Plain(name, text)
	if !ok {
		return false
	}
	p, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Parse(text, tools)
	if len(r.Calls) != 0 || len(r.Errors) != 0 || r.NormalText != normal {
		t.Fatalf("%s: Plain(%q) = %q, but Parse found %d calls, %d errors, normal text %q", name, text, normal,
			len(r.Calls), len(r.Errors), r.NormalText)
	}
	return true
}

// TestPlain checks Plain against the parser on SGLang's corpus (every text, under every format Plain knows), the
// fuzz seeds and texts made to come near the marker; and that it declines every text with a call.
func TestPlain(t *testing.T) {
	tools := mustTools(t, testTools)
	texts := []string{"", "  \n", "The answer is 42.", " <think>a <tool_call> in reasoning</think>\n\nok \n",
		"</tool_call> stray close", "<tool_call", "<tool_ call>{}</tool_call>", "<TOOL_CALL>x", "tool_call>",
		"<think>unclosed", "x</think> after a lone close", "\u00a0nbsp\u00a0", "<tool_call>{\"name\":\"search\"}</tool_call>"}
	for _, c := range loadFixtures(t) {
		texts = append(texts, c.Text)
	}
	texts = append(texts, plainFuzzSeeds...)
	for _, m := range plainMarkers {
		texts = append(texts, m, " a "+m+"\n<function=search>\n</function>\n", "<think>"+m+"</think> b")
	}
	for name, m := range plainMarkers {
		plain := 0
		for _, text := range texts {
			if checkPlain(t, name, text, tools) || checkPlain(t, name, text, nil) {
				plain++
			}
			if strings.Contains(text, m) {
				if _, ok := Plain(name, text); ok {
					t.Fatalf("%s: Plain accepted a text with %s: %q", name, m, text)
				}
			}
		}
		if plain == 0 || plain == len(texts) {
			t.Fatalf("%s: Plain accepted %d of %d texts: the corpus does not exercise both sides", name, plain, len(texts))
		}
	}
	for _, name := range Names() {
		if _, known := plainMarkers[name]; !known {
			if _, ok := Plain(name, "no call here"); ok {
				t.Fatalf("Plain(%s) accepted a text for a format without a known marker", name)
			}
		}
	}
}

// plainFuzzSeeds are texts near the markers for FuzzPlain and TestPlain.
var plainFuzzSeeds = []string{"<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", "a <tool_cal", "<think></think> x",
	"<minimax:tool_call>\n<invoke name=\"search\">\n</invoke>\n</minimax:tool_call>", "<seed:think>r</seed:think><seed:tool_call>"}

// FuzzPlain: whatever the text, Plain's answer, when it gives one, is the parser's.
func FuzzPlain(f *testing.F) {
	for _, s := range append(fuzzSeeds(f), plainFuzzSeeds...) {
		f.Add(s)
	}
	tools := mustTools(f, testTools)
	f.Fuzz(func(t *testing.T, text string) {
		for name := range plainMarkers {
			checkPlain(t, name, text, tools)
			checkPlain(t, name, text, nil)
		}
	})
}
