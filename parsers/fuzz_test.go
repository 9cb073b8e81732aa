package parsers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are the texts of the SGLang fixtures (when present) plus a few hand-written ones.
func fuzzSeeds(f *testing.F) []string {
	seeds := []string{
		`<tool_call>{"name":"search","arguments":{"query":"a"}}</tool_call>`,
		"<think>x</think><tool_call>\n<function=search>\n<parameter=topn>\n3\n</parameter>\n</function>\n</tool_call>",
		`<|python_tag|>{"name": "search", "parameters": {"query": "a"}}; {"name": "noargs", "parameters": {}}`,
		"<tool_call>search\n<arg_key>topn</arg_key>\n<arg_value>5</arg_value>\n</tool_call>",
		"<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
		"</think><tool_call><tool_call></tool_call>",
		`{"a":[1,2,{"b":"\ud83d\ude00\u00"}]}`,
	}
	for _, c := range loadFixtures(f) {
		seeds = append(seeds, c.Text)
	}
	return seeds
}

// FuzzParse: no parser panics on any input, and every result keeps the invariants (ids in order, spans inside
// the text and disjoint, Raw == text[span], compact JSON-object arguments, valid output JSON).
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	tools := mustTools(f, testTools)
	var parsers []*Parser
	for _, n := range Names() {
		p, err := New(n)
		if err != nil {
			f.Fatal(err)
		}
		parsers = append(parsers, p)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range parsers {
			checkInvariants(t, text, p.Parse(text, tools))
			checkInvariants(t, text, p.Parse(text, nil))
		}
	})
}

// FuzzCompact checks the hand-rolled JSON scanner against encoding/json: it accepts exactly what json.Valid
// accepts (up to our nesting limit), and its compact form is json.Compact's.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e-3, true, null, "x\n\u00e9"]}`, ` [ ] `, `{"a":}`, `"\ud800"`, `-0.0E+1`, `01`, "[\"\x01\"]", `{"a":1,}`, `nul`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "[")+strings.Count(s, "{") >= maxDepth {
			t.Skip("deeper than our nesting limit")
		}
		got, err := compactAll(nil, s, nil, 0)
		valid := json.Valid([]byte(s))
		if (err == nil) != valid {
			t.Fatalf("compactAll(%q) error = %v, json.Valid = %v", s, err, valid)
		}
		if !valid {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("compactAll(%q) = %q, json.Compact = %q", s, got, want.String())
		}
		// The members compactValue reports for the top-level object are its keys, in order, with their values.
		var mem []jmember
		if _, err := compactAll(nil, s, &mem, 1); err != nil {
			t.Fatal(err)
		}
		if want := topLevelKeys(t, s); len(mem) != len(want) {
			t.Fatalf("compactAll(%q) members %v, want keys %q", s, mem, want)
		} else {
			for k, m := range mem {
				if unquote(string(got[m.keyLo:m.keyHi])) != want[k] || !json.Valid(got[m.valueLo:m.valueHi]) {
					t.Fatalf("compactAll(%q) member %d = %+v (%s), want key %q", s, k, m, got, want[k])
				}
			}
		}
		if s[skipSpace(s, 0)] == '"' {
			var dec string
			if err := json.Unmarshal([]byte(s), &dec); err != nil {
				t.Fatal(err)
			}
			if u := unquote(strings.TrimSpace(s)); u != dec {
				t.Fatalf("unquote(%q) = %q, encoding/json = %q", s, u, dec)
			}
		}
	})
}

// FuzzQuote checks appendQuoted against encoding/json: the output is valid JSON that decodes to the input (with
// invalid UTF-8 replaced by U+FFFD, as encoding/json does).
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c\n\t\x00\x1f", "北京", "\xff\xfe", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := appendQuoted(nil, s)
		var dec string
		if err := json.Unmarshal(q, &dec); err != nil {
			t.Fatalf("appendQuoted(%q) = %s: %v", s, q, err)
		}
		if want := perByteValid(s); dec != want {
			t.Fatalf("appendQuoted(%q) round-trips to %q", s, dec)
		}
	})
}

// perByteValid replaces each byte of invalid UTF-8 with U+FFFD.
func perByteValid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\ufffd")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// topLevelKeys returns the keys of the top-level JSON object s (nil when s is not an object), via encoding/json.
func topLevelKeys(t *testing.T, s string) []string {
	t.Helper()
	if s[skipSpace(s, 0)] != '{' {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var keys []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				expectKey = depth == 1 && v == '{'
			} else {
				depth--
				expectKey = depth == 1
			}
			continue
		case string:
			if depth == 1 && expectKey {
				keys = append(keys, v)
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
}
