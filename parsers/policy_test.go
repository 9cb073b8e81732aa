package parsers

import (
	"strconv"
	"strings"
	"testing"
)

// policyTools is one tool whose schema has every keyword the argument policy checks (plugins/ABI.md 5.1).
const policyTools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
 "properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":14},
   "unit":{"type":"string","enum":["celsius","fahrenheit"]},"ratio":{"type":"number","exclusiveMinimum":0}},
 "required":["city"],"additionalProperties":false}}}]`

// arg is one argument as a model writes it: its JSON value (strings quoted).
type arg struct{ key, json string }

// xmlFormats write each value as text, which the parser reads by the declared type; the others write JSON.
var xmlFormats = map[string]bool{"qwen3_coder": true, "seed_oss": true, "minimax-m2": true, "glm45": true, "glm47": true}

// writeCall writes one call to get_weather in a format, as the family's model writes it.
func writeCall(t *testing.T, format string, args []arg) string {
	t.Helper()
	var obj strings.Builder
	obj.WriteByte('{')
	for i, a := range args {
		if i > 0 {
			obj.WriteString(", ")
		}
		obj.WriteString(strconv.Quote(a.key) + ": " + a.json)
	}
	obj.WriteByte('}')
	text := func(v string) string { // an XML format writes a string's text, anything else as JSON
		if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
			return s
		}
		return v
	}
	var b strings.Builder
	switch format {
	case "hermes", "qwen25":
		return "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + obj.String() + "}\n</tool_call>"
	case "llama3":
		return "{\"name\": \"get_weather\", \"parameters\": " + obj.String() + "}"
	case "mistral":
		return "[TOOL_CALLS]get_weather[ARGS]" + obj.String()
	case "deepseekv3":
		return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + obj.String() + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	case "deepseekv31":
		return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + obj.String() + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	case "kimi_k2":
		return "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + obj.String() + "<|tool_call_end|><|tool_calls_section_end|>"
	case "gpt-oss":
		return "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + obj.String() + "<|call|>"
	case "pythonic":
		b.WriteString("[get_weather(")
		for i, a := range args {
			if i > 0 {
				b.WriteString(", ")
			}
			v := a.json // JSON strings and numbers are Python literals
			if v == "null" {
				v = "None"
			}
			b.WriteString(a.key + "=" + v)
		}
		b.WriteString(")]")
	case "qwen3_coder", "seed_oss":
		nl := "\n"
		open, close := "<tool_call>", "</tool_call>"
		if format == "seed_oss" {
			nl, open, close = "", "<seed:tool_call>", "</seed:tool_call>"
		}
		b.WriteString(open + "\n<function=get_weather>\n")
		for _, a := range args {
			b.WriteString("<parameter=" + a.key + ">" + nl + text(a.json) + nl + "</parameter>\n")
		}
		b.WriteString("</function>\n" + close)
	case "minimax-m2":
		b.WriteString("<minimax:tool_call>\n<invoke name=\"get_weather\">\n")
		for _, a := range args {
			b.WriteString("<parameter name=\"" + a.key + "\">" + text(a.json) + "</parameter>\n")
		}
		b.WriteString("</invoke>\n</minimax:tool_call>")
	case "glm45", "glm47":
		nl := "\n"
		if format == "glm47" {
			nl = ""
		}
		b.WriteString("<tool_call>get_weather")
		for _, a := range args {
			b.WriteString(nl + "<arg_key>" + a.key + "</arg_key>" + nl + "<arg_value>" + text(a.json) + "</arg_value>")
		}
		b.WriteString(nl + "</tool_call>")
	default:
		t.Fatalf("no call writer for format %s", format)
	}
	return b.String()
}

// TestArgumentPolicy checks the argument policy in every format: one strict check for all (types without coercion,
// required, enum, minimum/maximum, additionalProperties: false), each refusal a bad_arguments error whose message
// names the parameter, what was wanted and what was got, worded the same in every format; XML formats read their
// text values by the declared type (that is their encoding, not a coercion).
func TestArgumentPolicy(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, policyTools)
	const prefix = `arguments of "get_weather": `
	city := arg{"city", `"Paris"`}
	tests := []struct {
		name string
		args []arg
		want string // the error message; "" for a call whose arguments are wantArgs
		// xml is the message (or arguments) of the XML formats where they differ.
		xml      *string
		wantArgs string
		// glm is the arguments of GLM's formats where they differ: a string parameter keeps its text, even "null".
		glm string
	}{
		{name: "valid", args: []arg{city, {"days", "3"}, {"unit", `"celsius"`}, {"ratio", "0.5"}},
			wantArgs: `{"city":"Paris","days":3,"unit":"celsius","ratio":0.5}`},
		{name: "integer written as a string", args: []arg{city, {"days", `"2"`}},
			want: prefix + `parameter "days": want integer, got string "2"`,
			xml:  str(""), wantArgs: `{"city":"Paris","days":2}`}, // XML: the text 2 is the integer 2
		{name: "integer written as a word", args: []arg{city, {"days", `"two"`}},
			want: prefix + `parameter "days": want integer, got string "two"`,
			xml:  str(prefix + `parameter "days": want integer, got "two" (not JSON)`)},
		{name: "number for a string", args: []arg{{"city", "42"}},
			want: prefix + `parameter "city": want string, got integer 42`,
			xml:  str(""), wantArgs: `{"city":"42"}`}, // XML: a string parameter keeps its text
		{name: "below minimum", args: []arg{city, {"days", "0"}}, want: prefix + `parameter "days": want >= 1, got 0`},
		{name: "above maximum", args: []arg{city, {"days", "15"}}, want: prefix + `parameter "days": want <= 14, got 15`},
		{name: "exclusive minimum", args: []arg{city, {"ratio", "0"}}, want: prefix + `parameter "ratio": want > 0, got 0`},
		{name: "not in enum", args: []arg{city, {"unit", `"kelvin"`}},
			want: prefix + `parameter "unit": want one of "celsius", "fahrenheit", got "kelvin"`},
		{name: "missing required", args: []arg{{"days", "3"}}, want: prefix + `missing required parameter "city"`},
		{name: "required given null", args: []arg{{"city", "null"}}, want: prefix + `parameter "city" is required, got null`,
			glm: `{"city":"null"}`},
		{name: "optional given null", args: []arg{city, {"days", "null"}}, wantArgs: `{"city":"Paris","days":null}`},
		{name: "undeclared parameter", args: []arg{city, {"country", `"FR"`}},
			want: prefix + `unknown parameter "country" (the tool takes: city, days, unit, ratio)`},
		{name: "repeated parameter", args: []arg{city, {"city", `"Lyon"`}}, want: prefix + `parameter "city" is given twice`},
	}
	for _, format := range Names() {
		p, err := New(format)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				want, wantArgs := tt.want, tt.wantArgs
				if xmlFormats[format] && tt.xml != nil {
					want = *tt.xml
				}
				if (format == "glm45" || format == "glm47") && tt.glm != "" {
					want, wantArgs = "", tt.glm
				}
				if want != "" {
					wantArgs = ""
				}
				if format == "pythonic" && tt.name == "repeated parameter" {
					// Python refuses a repeated keyword argument before any schema is consulted.
					want = ""
				}
				text := writeCall(t, format, tt.args)
				r := p.Parse(text, tools)
				switch {
				case format == "pythonic" && tt.name == "repeated parameter":
					if len(r.Errors) != 1 || len(r.Calls) != 0 {
						t.Fatalf("%q: %s, want one error", text, r.AppendJSON(nil))
					}
				case want != "":
					if len(r.Calls) != 0 || len(r.Errors) != 1 || r.Errors[0].Reason != ReasonBadArguments ||
						r.Errors[0].Message != want || r.Errors[0].Name != "get_weather" || !strings.Contains(text, r.Errors[0].Raw) ||
						!strings.Contains(r.Errors[0].Raw, "get_weather") {
						t.Fatalf("%q:\ngot  %s\nwant one bad_arguments error of get_weather with the call as raw and the message\n     %s", text, r.AppendJSON(nil), want)
					}
				default:
					if len(r.Errors) != 0 || len(r.Calls) != 1 || string(r.Calls[0].Arguments) != wantArgs {
						t.Fatalf("%q:\ngot  %s\nwant the call with arguments %s", text, r.AppendJSON(nil), wantArgs)
					}
				}
			})
		}
	}
}

// TestSchemaKeywordsOfTheWrongShape: constraint keywords the policy cannot read (a string minimum, an enum that is
// not an array) are not modelled and so not checked; the tool sees the value.
func TestSchemaKeywordsOfTheWrongShape(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, `[{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":"5","enum":"x"}},"required":"n"}}]`)
	p, _ := New("hermes")
	r := p.Parse(`<tool_call>{"name":"f","arguments":{"n":1}}</tool_call>`, tools)
	if len(r.Errors) != 0 || len(r.Calls) != 1 {
		t.Fatalf("got %s, want the call", r.AppendJSON(nil))
	}
	r = p.Parse(`<tool_call>{"name":"f","arguments":{}}</tool_call>`, tools)
	if len(r.Errors) != 0 || len(r.Calls) != 1 {
		t.Fatalf("a required that is not an array: got %s, want the call", r.AppendJSON(nil))
	}
}
