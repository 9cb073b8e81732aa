package parsers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
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

// TestNumberErrorsMatchEncodingJSON: scanNumber (internal/jsonw's grammar) names the byte that breaks a number
// and where in the number it stands as encoding/json does. (appendQuoted is jsonw.AppendString, fuzzed there.)
func TestNumberErrorsMatchEncodingJSON(t *testing.T) {
	for _, s := range []string{"-x", "-.5", "1.x", "1.e5", "1ex", "1e+x", "1E-}", "0.1e"} {
		var v any
		want := json.Unmarshal([]byte(s+" "), &v)
		_, _, err := scanNumber(s+" ", 0)
		var se *syntaxError
		if !errors.As(err, &se) || want == nil || se.msg != want.Error() {
			t.Errorf("scanNumber(%q): %v; encoding/json: %v", s, err, want)
		}
	}
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
