package emulator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
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

// TestMistralNemoEpisode: with Nemo's own vocabulary and a prompt as its template renders it, the agentic policy
// calls the calculator from the [AVAILABLE_TOOLS] list in Nemo's list form, each call with a 9-character id that
// the mistral parser keeps, reads the [TOOL_RESULTS] that answer them and then answers; the control tokens are
// single ids of the reply, which ends with </s>.
func TestMistralNemoEpisode(t *testing.T) {
	m := nemo(t)
	const toolsCallsID, toolResults = 9, "[TOOL_RESULTS]"
	p, err := parsers.New(FormatMistral)
	if err != nil {
		t.Fatal(err)
	}
	alnum9 := regexp.MustCompile(`^[A-Za-z0-9]{9}$`)
	tools := `[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "calculator", "description": "Evaluate "2 + 3" and the like.", ` +
		`"parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}][/AVAILABLE_TOOLS]`
	for seed := uint64(0); seed < 6; seed++ {
		cfg := testConfig(m)
		cfg.ToolFormat, cfg.Seed = FormatMistralNemo, seed
		_, url := start(t, cfg, m.Tokenizer)
		ids := m.Tokenizer.Encode("<s>"+tools+"[INST]You are careful.\n\n"+threeExprTask+"[/INST]", false)
		var called []string
		seen := map[string]bool{}
		final := ""
		for turn := 0; turn < 6 && final == ""; turn++ {
			g := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 1024, "skip_special_tokens": false}})
			g.Text = strings.TrimSuffix(g.Text, "</s>") // with skip_special_tokens false the text keeps the stop token
			if last := g.OutputIDs[len(g.OutputIDs)-1]; last != 2 {
				t.Fatalf("seed %d turn %d: output ends with %d, want </s> (2)", seed, turn, last)
			}
			r := p.Parse(g.Text, nil)
			if len(r.Errors) > 0 {
				t.Fatalf("seed %d turn %d: %q: %+v", seed, turn, g.Text, r.Errors)
			}
			if len(r.Calls) == 0 {
				final = g.Text
				break
			}
			if g.OutputIDs[0] != toolsCallsID || !strings.HasPrefix(g.Text, "[TOOL_CALLS][{") {
				t.Fatalf("seed %d turn %d: %q (ids %v) is not Nemo's list form", seed, turn, g.Text, g.OutputIDs[:3])
			}
			var results strings.Builder
			for _, c := range r.Calls {
				var args struct{ Expression string }
				if err := json.Unmarshal(c.Arguments, &args); err != nil || c.Name != "calculator" {
					t.Fatalf("seed %d turn %d: call %s%s", seed, turn, c.Name, c.Arguments)
				}
				if !alnum9.MatchString(c.ID) || seen[c.ID] {
					t.Fatalf("seed %d turn %d: call id %q (ids so far %v)", seed, turn, c.ID, seen)
				}
				seen[c.ID] = true
				v, err := eval(args.Expression)
				if err != nil {
					t.Fatal(err)
				}
				called = append(called, args.Expression)
				fmt.Fprintf(&results, `%s{"content": %v, "call_id": "%s"}[/TOOL_RESULTS]`, toolResults, v, c.ID)
			}
			ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(results.String(), false)...)
		}
		if !slices.Equal(called, []string{"12*7", "(3+4)/2", "100-58"}) || !strings.Contains(final, "12*7 = 84") ||
			!strings.HasSuffix(final, "The answer is 42.") {
			t.Errorf("seed %d: called %v, final answer %q", seed, called, final)
		}
	}
}
