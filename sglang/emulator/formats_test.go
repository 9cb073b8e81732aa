package emulator

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/parsers"
)

// TestRenderCallsRoundTrip: what the emulator writes in each tool-call format parses with the built-in parser of
// that name, calls intact; each malformed variant becomes an error result, never a call.
func TestRenderCallsRoundTrip(t *testing.T) {
	cs := []call{
		{name: "calculator", args: []kv{{"expression", "(3+4)/2"}}},
		{name: "search", args: []kv{{"query", "weather in Paris"}, {"topn", 3}, {"exact", true}}},
	}
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatSeedOSS, FormatMiniMaxM2, FormatDeepSeekV3, FormatDeepSeekV31,
		FormatMistral, FormatMistralNemo, FormatGPTOSS, FormatPythonic} {
		t.Run(format, func(t *testing.T) {
			p, err := parsers.New(formatParser(format))
			if err != nil {
				t.Fatal(err)
			}
			n := len(cs)
			if format == FormatGPTOSS {
				n = 1 // the model stops on the call's <|call|>: one call per turn
			}
			cs := cs[:n]
			text := renderCalls(format, cs, -1)
			r := p.Parse(text, nil)
			if len(r.Errors) != 0 || len(r.Calls) != len(cs) {
				t.Fatalf("%q parsed to %d calls, errors %+v", text, len(r.Calls), r.Errors)
			}
			for i, c := range cs {
				got := r.Calls[i]
				var args map[string]any
				if err := json.Unmarshal(got.Arguments, &args); err != nil {
					t.Fatalf("call %d arguments %s: %v", i, got.Arguments, err)
				}
				if got.Name != c.name || len(args) != len(c.args) {
					t.Fatalf("call %d = %s%s, want %s with %d arguments", i, got.Name, got.Arguments, c.name, len(c.args))
				}
				for _, a := range c.args {
					// With no tool specs the XML formats keep values as text; the text must be the value's.
					v := args[a.k]
					gotJSON, _ := json.Marshal(v)
					wantJSON, _ := json.Marshal(a.v)
					if string(gotJSON) != string(wantJSON) && v != valueText(a.v, false) {
						t.Errorf("call %d %s = %#v, want %#v", i, a.k, v, a.v)
					}
				}
			}
			for malformed := 0; malformed < 2; malformed++ {
				text := renderCalls(format, cs[:1], malformed)
				r := p.Parse(text, nil)
				if len(r.Calls) != 0 || len(r.Errors) != 1 {
					t.Errorf("malformed %d: %q gave calls %d, errors %+v; want one error", malformed, text, len(r.Calls), r.Errors)
				}
			}
		})
	}
}

// formatParser is the name of the built-in parser that reads a tool-call format: the format's own name, but for
// mistral_nemo (SGLang's mistral parser reads both Mistral layouts).
func formatParser(format string) string {
	if format == FormatMistralNemo {
		return FormatMistral
	}
	return format
}

// parseWithParser reads a reply's calls with the built-in parser of the format (the formats parseCalls has no
// regexp for); a malformed call is an error.
func parseWithParser(format, text string) ([]parsedCall, error) {
	p, err := parsers.New(formatParser(format))
	if err != nil {
		return nil, err
	}
	r := p.Parse(text, nil)
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("%s: %s in %q", r.Errors[0].Reason, r.Errors[0].Message, text)
	}
	var out []parsedCall
	for _, c := range r.Calls {
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, err
		}
		out = append(out, parsedCall{c.Name, args})
	}
	return out, nil
}
