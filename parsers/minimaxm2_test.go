package parsers

import "testing"

// MiniMax-M2 texts are what its chat template (minimax-m2 chat_template.jinja) writes for assistant tool calls.
func TestParseMiniMaxM2(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	p, err := New("minimax-m2")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text, want string }{
		{"template form, two invokes",
			"<think>\nweather first\n</think>\n\nChecking.\n<minimax:tool_call>\n" +
				`<invoke name="get_weather"><parameter name="city">Paris</parameter>` + "\n" +
				`<parameter name="days">3</parameter>` + "\n</invoke>\n" +
				`<invoke name="search"><parameter name="query">café</parameter>` + "\n" +
				`<parameter name="filters">{"a": [1, 2]}</parameter>` + "\n</invoke>\n</minimax:tool_call>",
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":3} [62 176]\n" +
				"call_0001 search{\"query\":\"café\",\"filters\":{\"a\":[1,2]}} [177 302]\n" +
				`normal="<think>\nweather first\n</think>\n\nChecking."`},
		{"unclosed invoke",
			"<minimax:tool_call>\n<invoke name=\"search\"><parameter name=\"query\">x</parameter>\n</minimax:tool_call>",
			"call_0000 !unclosed_tag(search) [0 100]\nnormal=\"\""},
		{"wrong type",
			"<minimax:tool_call>\n<invoke name=\"search\"><parameter name=\"topn\">many</parameter>\n</invoke>\n</minimax:tool_call>",
			"call_0000 !bad_arguments(search) [0 112]\nnormal=\"\""},
		{"text between invokes: the call stands, the stray text is an error",
			"<minimax:tool_call>\n<invoke name=\"noargs\">\n</invoke>\nand then\n</minimax:tool_call>",
			"call_0000 noargs{} [20 52]\ncall_0001 !invalid_format() [53 62]\nnormal=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
