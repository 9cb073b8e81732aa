package parsers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const testTools = `[
 {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
   "city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":["string","null"]}},"required":["city"]}}},
 {"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{
   "query":{"type":"string"},"topn":{"type":"integer"},"score":{"type":"number"},"exact":{"type":"boolean"},
   "filters":{"type":"object"},"tags":{"type":"array"},"any":{}}}}},
 {"name":"noargs","description":"a bare function spec, as the plugin ABI sends them"}
]`

// summary renders a Result compactly: one line per call or error in id order, then the normal text.
func summary(r Result) string {
	var lines []string
	ci, ei := 0, 0
	for ci < len(r.Calls) || ei < len(r.Errors) {
		if ei >= len(r.Errors) || (ci < len(r.Calls) && r.Calls[ci].ID < r.Errors[ei].ID) {
			c := r.Calls[ci]
			lines = append(lines, fmt.Sprintf("%s %s%s %v", c.ID, c.Name, c.Arguments, c.Span))
			ci++
			continue
		}
		e := r.Errors[ei]
		lines = append(lines, fmt.Sprintf("%s !%s(%s) %v", e.ID, e.Reason, e.Name, e.Span))
		ei++
	}
	lines = append(lines, fmt.Sprintf("normal=%q", r.NormalText))
	return strings.Join(lines, "\n")
}

func mustTools(t testing.TB, spec string) *Tools {
	t.Helper()
	ts, err := ParseTools([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestParse(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	tests := []struct {
		name, format, text string
		noTools            bool
		want               string
	}{
		// think handling
		{"think block ignored", "hermes",
			`<think>maybe <tool_call>{"name":"search","arguments":{}}</tool_call></think>` + "\n" +
				`<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`,
			false, "call_0000 get_weather{\"city\":\"Paris\"} [77 151]\n" +
				`normal="<think>maybe <tool_call>{\"name\":\"search\",\"arguments\":{}}</tool_call></think>"`},
		{"lone close think", "hermes",
			`draft <tool_call>{"name":"search","arguments":{}}</tool_call></think>answer`,
			false, `normal="draft <tool_call>{\"name\":\"search\",\"arguments\":{}}</tool_call></think>answer"`},
		{"lone close think then call", "qwen3_coder",
			"draft</think>\n\n<tool_call>\n<function=search>\n<parameter=topn>\n3\n</parameter>\n</function>\n</tool_call>",
			false, "call_0000 search{\"topn\":3} [15 101]\nnormal=\"draft</think>\""},
		{"unclosed think hides calls", "hermes",
			`<think>I could call <tool_call>{"name":"search","arguments":{}}</tool_call>`,
			false, `normal="<think>I could call <tool_call>{\"name\":\"search\",\"arguments\":{}}</tool_call>"`},
		{"two think blocks", "kimi_k2",
			"<think>a</think>x<|tool_calls_section_begin|><|tool_call_begin|>functions.noargs:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|><think>b<|tool_calls_section_begin|></think>y",
			false, "call_0000 noargs{} [45 129]\nnormal=\"<think>a</think>x<think>b<|tool_calls_section_begin|></think>y\""},

		// hermes
		{"hermes two calls and text", "hermes",
			"Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\", \"score\": 1.5e3, \"tags\": [1, {\"a\": null}]}}\n</tool_call>",
			false, "call_0000 get_weather{\"city\":\"Paris\",\"days\":3} [13 104]\n" +
				"call_0001 search{\"query\":\"q\",\"score\":1.5e3,\"tags\":[1,{\"a\":null}]} [105 219]\nnormal=\"Let me look.\""},
		{"hermes errors keep ids in order", "hermes",
			`<tool_call>{"name":"get_weather","arguments":{"city":"A"}}</tool_call>` +
				`<tool_call>{"name":"get_weather","arguments":{"city":}}</tool_call>` +
				`<tool_call>{"name":"nope","arguments":{}}</tool_call>` +
				`<tool_call>{"arguments":{}}</tool_call>` +
				`<tool_call>{"name":"search","arguments":"q"}</tool_call>` +
				`<tool_call>[{"name":"search"}]</tool_call>` +
				`<tool_call>{"name":"search","arguments":{"topn":"3"}}</tool_call>` +
				`<tool_call>{"name":"search","arguments":{"topn":1,"topn":2}}</tool_call>` +
				`<tool_call>{"name":"get_weather","arguments":{"city":"B"}}`,
			false, "call_0000 get_weather{\"city\":\"A\"} [0 70]\n" +
				"call_0001 !malformed_json(get_weather) [70 137]\n" +
				"call_0002 !unknown_tool(nope) [137 190]\n" +
				"call_0003 !missing_name() [190 229]\n" +
				"call_0004 !bad_arguments(search) [229 285]\n" +
				"call_0005 !invalid_format() [285 327]\n" +
				"call_0006 !bad_arguments(search) [327 392]\n" +
				"call_0007 !bad_arguments(search) [392 464]\n" +
				"call_0008 !unclosed_tag(get_weather) [464 522]\nnormal=\"\""},
		{"hermes name not a string", "hermes", `<tool_call>{"name":7}</tool_call>`, false,
			"call_0000 !missing_name() [0 33]\nnormal=\"\""},
		{"hermes nullable and null values", "hermes",
			`<tool_call>{"name":"get_weather","arguments":{"city":"X","unit":null,"days":null}}</tool_call>`, false,
			"call_0000 get_weather{\"city\":\"X\",\"unit\":null,\"days\":null} [0 94]\nnormal=\"\""},
		{"hermes number for integer", "hermes",
			`<tool_call>{"name":"search","arguments":{"topn":2.5}}</tool_call>`, false,
			"call_0000 !bad_arguments(search) [0 65]\nnormal=\"\""},
		{"hermes no tools: any name", "hermes",
			`<tool_call>{"name":"whatever","parameters":{"x":"1"}}</tool_call> done`, true,
			"call_0000 whatever{\"x\":\"1\"} [0 65]\nnormal=\"done\""},
		{"hermes unicode and escapes kept", "hermes",
			`<tool_call>{"name":"get_weather","arguments":{"city":"北京 \u00e9\n"}}</tool_call>`, false,
			"call_0000 get_weather{\"city\":\"北京 \\u00e9\\n\"} [0 84]\nnormal=\"\""},
		{"hermes stray close tag is text", "hermes", "a </tool_call> b", false, `normal="a </tool_call> b"`},
		{"hermes NaN rejected", "hermes", `<tool_call>{"name":"search","arguments":{"score":NaN}}</tool_call>`, false,
			"call_0000 !malformed_json(search) [0 66]\nnormal=\"\""},

		// qwen3_coder
		{"qwen3_coder coercion", "qwen3_coder",
			"<tool_call>\n<function=search>\n<parameter=query>\n  spaced  \n</parameter>\n<parameter=topn>\n 7 \n</parameter>\n<parameter=score>\n2\n</parameter>\n<parameter=exact>\nFALSE\n</parameter>\n<parameter=filters>\n{\"a\": [1, 2]}\n</parameter>\n<parameter=tags>\nNull\n</parameter>\n<parameter=any>\nnot json\n</parameter>\n<parameter=extra>\n5\n</parameter>\n</function>\n</tool_call>",
			false, "call_0000 search{\"query\":\"  spaced  \",\"topn\":7,\"score\":2,\"exact\":false,\"filters\":{\"a\":[1,2]},\"tags\":null,\"any\":\"not json\",\"extra\":\"5\"} [0 353]\nnormal=\"\""},
		{"qwen3_coder bad integer", "qwen3_coder",
			"<tool_call>\n<function=search>\n<parameter=topn>\nthree\n</parameter>\n</function>\n</tool_call>", false,
			"call_0000 !bad_arguments(search) [0 90]\nnormal=\"\""},
		{"qwen3_coder bad boolean", "qwen3_coder",
			"<tool_call><function=search><parameter=exact>yes</parameter></function></tool_call>", false,
			"call_0000 !bad_arguments(search) [0 83]\nnormal=\"\""},
		{"qwen3_coder object wants object", "qwen3_coder",
			"<tool_call><function=search><parameter=filters>[1]</parameter></function></tool_call>", false,
			"call_0000 !bad_arguments(search) [0 85]\nnormal=\"\""},
		{"qwen3_coder two functions in one block", "qwen3_coder",
			"<tool_call>\n<function=noargs>\n</function>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>", false,
			"call_0000 noargs{} [12 41]\ncall_0001 get_weather{\"city\":\"Rome\"} [42 111]\nnormal=\"\""},
		{"qwen3_coder stray text", "qwen3_coder",
			"<tool_call><function=search>hello<parameter=query>x</parameter></function></tool_call>", false,
			"call_0000 !invalid_format(search) [0 86]\nnormal=\"\""},
		{"qwen3_coder unclosed parameter", "qwen3_coder",
			"<tool_call><function=search><parameter=query>x<parameter=topn>1</parameter></function></tool_call>", false,
			"call_0000 !unclosed_tag(search) [0 98]\nnormal=\"\""},
		{"qwen3_coder unclosed function", "qwen3_coder",
			"<tool_call><function=search><parameter=query>x</parameter></tool_call>", false,
			"call_0000 !unclosed_tag(search) [0 70]\nnormal=\"\""},
		{"qwen3_coder json body", "qwen3_coder",
			`<tool_call>{"name":"search","arguments":{}}</tool_call>`, false,
			"call_0000 !invalid_format() [0 55]\nnormal=\"\""},
		{"qwen3_coder repeated parameter", "qwen3_coder",
			"<tool_call><function=search><parameter=query>a</parameter><parameter=query>b</parameter></function></tool_call>", false,
			"call_0000 !bad_arguments(search) [0 111]\nnormal=\"\""},
		{"qwen3_coder unknown tool", "qwen3_coder",
			"x<tool_call><function=rm>\n</function></tool_call>y", false,
			"call_0000 !unknown_tool(rm) [1 49]\nnormal=\"xy\""},

		// llama3
		{"llama3 semicolons", "llama3",
			`<|python_tag|>{"name": "search", "parameters": {"query": "a"}}; {"name": "noargs", "parameters": {}}`, false,
			"call_0000 search{\"query\":\"a\"} [0 62]\ncall_0001 noargs{} [64 100]\nnormal=\"\""},
		{"llama3 bare json after think", "llama3",
			"<think>hm</think>\n\n{\"name\": \"noargs\", \"parameters\": {}}<|eom_id|>", false,
			"call_0000 noargs{} [19 55]\nnormal=\"<think>hm</think>\\n\\n<|eom_id|>\""},
		{"llama3 python code after tag", "llama3", "<|python_tag|>print(1)", false,
			"call_0000 !invalid_format() [0 22]\nnormal=\"\""},
		{"llama3 json answer is not a call", "llama3", `{"answer": 42}`, false,
			"call_0000 !missing_name() [0 14]\nnormal=\"\""},
		{"llama3 plain text", "llama3", "no {calls} here", false, `normal="no {calls} here"`},

		// glm45 / glm47
		{"glm45 typed values", "glm45",
			"<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>\"quoted\" text</arg_value>\n<arg_key>topn</arg_key>\n<arg_value>5</arg_value>\n<arg_key>filters</arg_key>\n<arg_value>{\"k\": 1}</arg_value>\n<arg_key>undeclared</arg_key>\n<arg_value>[1,2]</arg_value>\n<arg_key>any</arg_key>\n<arg_value>plain</arg_value>\n</tool_call>",
			false, "call_0000 search{\"query\":\"\\\"quoted\\\" text\",\"topn\":5,\"filters\":{\"k\":1},\"undeclared\":[1,2],\"any\":\"plain\"} [0 311]\nnormal=\"\""},
		{"glm47 no newlines", "glm47",
			"ok<tool_call>get_weather<arg_key>city</arg_key><arg_value> Paris </arg_value></tool_call>", false,
			"call_0000 get_weather{\"city\":\" Paris \"} [2 89]\nnormal=\"ok\""},
		{"glm45 bad integer", "glm45",
			"<tool_call>search\n<arg_key>topn</arg_key>\n<arg_value>five</arg_value>\n</tool_call>", false,
			"call_0000 !bad_arguments(search) [0 82]\nnormal=\"\""},
		{"glm45 missing value", "glm45",
			"<tool_call>search\n<arg_key>topn</arg_key>\n</tool_call>", false,
			"call_0000 !invalid_format(search) [0 54]\nnormal=\"\""},
		{"glm45 empty name", "glm45", "<tool_call>\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>", false,
			"call_0000 !missing_name() [0 68]\nnormal=\"\""},
		{"glm45 unclosed", "glm45", "<tool_call>search\n<arg_key>topn</arg_key>\n<arg_value>5", false,
			"call_0000 !unclosed_tag(search) [0 54]\nnormal=\"\""},

		// kimi_k2
		{"kimi two calls", "kimi_k2",
			"Hi<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"query\": \"x\"}<|tool_call_end|>\n<|tool_call_begin|>functions.noargs:1<|tool_call_argument_begin|>{}<|tool_call_end|>\n<|tool_calls_section_end|>bye",
			false, "call_0000 search{\"query\":\"x\"} [31 127]\ncall_0001 noargs{} [128 212]\nnormal=\"Hibye\""},
		{"kimi unclosed section", "kimi_k2",
			"<|tool_calls_section_begin|><|tool_call_begin|>functions.noargs:0<|tool_call_argument_begin|>{}<|tool_call_end|>", false,
			"call_0000 noargs{} [28 112]\nnormal=\"\""},
		{"kimi bad args", "kimi_k2",
			"<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>[1]<|tool_call_end|><|tool_calls_section_end|>", false,
			"call_0000 !bad_arguments(search) [28 113]\nnormal=\"\""},
		{"kimi malformed json", "kimi_k2",
			"<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"query\": <|tool_call_end|><|tool_calls_section_end|>", false,
			"call_0000 !malformed_json(search) [28 120]\nnormal=\"\""},
		{"kimi stray text", "kimi_k2",
			"<|tool_calls_section_begin|>oops<|tool_calls_section_end|>", false,
			"call_0000 !invalid_format() [28 32]\nnormal=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			ts := tools
			if tt.noTools {
				ts = nil
			}
			got := p.Parse(tt.text, ts)
			if s := summary(got); s != tt.want {
				t.Errorf("got\n%s\nwant\n%s", s, tt.want)
			}
			checkInvariants(t, tt.text, got)
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		p, err := New(n)
		if err != nil || p.Name() != n {
			t.Errorf("New(%q) = %v, %v", n, p, err)
		}
	}
	_, err := New("step3")
	if !errors.Is(err, ErrUnknownParser) || !strings.Contains(err.Error(), "hermes") {
		t.Errorf("New(step3) error = %v, want ErrUnknownParser listing the known names", err)
	}
}

func TestParseTools(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, spec, wantErr string }{
		{"empty", "", ""},
		{"null", " null ", ""},
		{"empty list", "[]", ""},
		{"not a list", `{"name":"x"}`, "want a JSON array"},
		{"bad json", `[{"name":}]`, "tool specs: invalid character"},
		{"no name", `[{"type":"function","function":{"parameters":{}}}]`, `tools[0]: missing "name"`},
		{"duplicate", `[{"name":"a"},{"name":"a"}]`, `tools[1]: duplicate tool name "a"`},
		{"bad parameters", `[{"name":"a","parameters":[]}]`, `"parameters" is not a JSON schema object`},
		{"trailing garbage", `[] x`, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTools([]byte(tt.spec))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	ts := mustTools(t, testTools)
	if got := strings.Join(ts.Names(), ","); got != "get_weather,search,noargs" {
		t.Errorf("names %s", got)
	}
}

func TestInputNotMutated(t *testing.T) {
	t.Parallel()
	spec := []byte(testTools)
	ts := mustTools(t, string(spec))
	if string(spec) != testTools {
		t.Fatal("ParseTools mutated its input")
	}
	p, _ := New("hermes")
	r1 := p.Parse(`<tool_call>{"name":"search","arguments":{"query":"a"}}</tool_call>`, ts)
	r2 := p.Parse(`<tool_call>{"name":"search","arguments":{"query":"b"}}</tool_call>`, ts)
	if string(r1.Calls[0].Arguments) != `{"query":"a"}` || string(r2.Calls[0].Arguments) != `{"query":"b"}` {
		t.Fatalf("results share buffers: %s %s", r1.Calls[0].Arguments, r2.Calls[0].Arguments)
	}
}

// TestParseIntoReuse: a reused Result gives, call after call, exactly what a fresh Parse gives.
func TestParseIntoReuse(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	texts := []string{
		`<tool_call>{"name":"search","arguments":{"query":"a"}}</tool_call> x`,
		"<tool_call>\n<function=search>\n<parameter=query>\nb\n</parameter>\n</function>\n</tool_call>",
		`plain`,
		`<tool_call>{"name":"nope","arguments":{}}</tool_call><tool_call>{"name":"get_weather","arguments":{"city":"c"}}</tool_call>`,
	}
	for _, name := range Names() {
		p, _ := New(name)
		var r Result
		for round := 0; round < 3; round++ {
			for _, text := range texts {
				p.ParseInto(&r, text, tools)
				got, want := summary(r)+fmt.Sprint(r.Errors), p.Parse(text, tools)
				if w := summary(want) + fmt.Sprint(want.Errors); got != w {
					t.Fatalf("%s round %d %q:\ngot  %s\nwant %s", name, round, text, got, w)
				}
			}
		}
	}
}

// TestConcurrentParse: one Parser and one Tools shared by many goroutines (as the runtime shares them) give
// every goroutine the serial results; run with -race.
func TestConcurrentParse(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	texts := []string{
		`<tool_call>{"name":"search","arguments":{"query":"a","topn":2}}</tool_call> x`,
		"<think>no</think><tool_call>\n<function=search>\n<parameter=query>\nb\n</parameter>\n</function>\n</tool_call>",
		`<tool_call>{"name":"get_weather","arguments":{"city":}}</tool_call>`,
	}
	for _, name := range Names() {
		p, _ := New(name)
		want := make([]string, len(texts))
		for i, text := range texts {
			r := p.Parse(text, tools)
			want[i] = string(r.AppendJSON(nil))
		}
		errs := make(chan string, 8)
		done := make(chan struct{})
		for g := 0; g < 8; g++ {
			go func() {
				defer func() { done <- struct{}{} }()
				var r Result
				for round := 0; round < 50; round++ {
					i := (g + round) % len(texts)
					p.ParseInto(&r, texts[i], tools)
					if got := string(r.AppendJSON(nil)); got != want[i] {
						errs <- got
						return
					}
				}
			}()
		}
		for g := 0; g < 8; g++ {
			<-done
		}
		close(errs)
		for e := range errs {
			t.Errorf("%s: concurrent result %s differs from the serial one", name, e)
		}
	}
}
