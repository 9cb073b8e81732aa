package parsers

import "testing"

// Seed-OSS texts are what its chat template (seed-oss chat_template.jinja) writes for an assistant tool call.
func TestParseSeedOSS(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	p, err := New("seed_oss")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text, want string }{
		{"template form",
			"<seed:think>check the weather <seed:tool_call>\n<function=search>\n</function>\n</seed:tool_call></seed:think>\nLet me look.\n" +
				"<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>",
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":3} [121 254]\n" +
				`normal="<seed:think>check the weather <seed:tool_call>\n<function=search>\n</function>\n</seed:tool_call></seed:think>\nLet me look."`},
		{"two calls, multi-line value",
			"<seed:tool_call>\n<function=search>\n<parameter=query>line one\nline two</parameter>\n</function>\n</seed:tool_call>" +
				"<seed:tool_call>\n<function=noargs>\n</function>\n</seed:tool_call>",
			"call_0000 search{\"query\":\"line one\\nline two\"} [0 111]\ncall_0001 noargs{} [111 175]\nnormal=\"\""},
		{"plain <tool_call> is not Seed-OSS markup",
			"<tool_call>\n<function=search>\n</function>\n</tool_call>",
			"normal=\"<tool_call>\\n<function=search>\\n</function>\\n</tool_call>\""},
		{"unclosed block",
			"ok <seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>",
			"call_0000 !unclosed_tag(get_weather) [3 76]\nnormal=\"ok\""},
		{"wrong type",
			"<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>three</parameter>\n</function>\n</seed:tool_call>",
			"call_0000 !bad_arguments(get_weather) [0 137]\nnormal=\"\""},
		{"object and array arguments as the template writes them (Python's repr)",
			"<seed:tool_call>\n<function=search>\n<parameter=query>x</parameter>\n<parameter=filters>{'lang': 'fr', 'safe': True, 'max': None, 'n': [1, 2.5]}</parameter>\n<parameter=tags>['a', \"b'c\"]</parameter>\n</function>\n</seed:tool_call>",
			"call_0000 search{\"query\":\"x\",\"filters\":{\"lang\":\"fr\",\"safe\":true,\"max\":null,\"n\":[1,2.5]},\"tags\":[\"a\",\"b'c\"]} [0 224]\nnormal=\"\""},
		{"a Python literal of the wrong kind is still refused",
			"<seed:tool_call>\n<function=search>\n<parameter=filters>['not', 'a', 'dict']</parameter>\n</function>\n</seed:tool_call>",
			"call_0000 !bad_arguments(search) [0 116]\nnormal=\"\""},
		{"unknown tool",
			"<seed:tool_call>\n<function=rm>\n</function>\n</seed:tool_call>",
			"call_0000 !unknown_tool(rm) [0 60]\nnormal=\"\""},
		{"reasoning cut off", "<seed:think>I could call <seed:tool_call>\n<function=search>",
			"normal=\"<seed:think>I could call <seed:tool_call>\\n<function=search>\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
