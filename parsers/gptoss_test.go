package parsers

import "testing"

// gpt-oss texts are harmony messages as the model writes them, and as its chat template (gpt-oss
// chat_template.jinja) writes a tool call: recipient before the channel, bare "json" content type.
func TestParseGPTOSS(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	p, err := New("gpt-oss")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text, want string }{
		{"model form, analysis first",
			"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": 3}<|call|>",
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":3} [50 179]\nnormal=\"\""},
		{"template form",
			"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Paris\"}<|call|>",
			"call_0000 get_weather{\"city\":\"Paris\"} [0 104]\nnormal=\"\""},
		{"template form, first message (the generation prompt wrote <|start|>assistant)",
			" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Paris\"}",
			"call_0000 get_weather{\"city\":\"Paris\"} [0 78]\nnormal=\"\""},
		{"text before a recipient is not a header", "I will go to=functions.x<|channel|>final<|message|>ok", "normal=\"I will go to=functions.xok\""},
		{"final answer, stop token stripped", "<|channel|>final<|message|>It is sunny.", "normal=\"It is sunny.\""},
		{"final answer with <|return|>", "<|channel|>analysis<|message|>easy<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>", "normal=\"It is sunny.\""},
		{"preamble then call",
			"<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"query\":\"x\"}<|call|>",
			"call_0000 search{\"query\":\"x\"} [48 157]\nnormal=\"Checking.\""},
		{"cut off call", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":", "call_0000 !unclosed_tag(get_weather) [0 83]\nnormal=\"\""},
		{"cut off header", "<|channel|>commentary to=functions.get_weather <|constr", "call_0000 !unclosed_tag() [0 55]\nnormal=\"\""},
		{"call ends with <|end|>", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|end|>", "call_0000 !invalid_format(get_weather) [0 98]\nnormal=\"\""},
		{"malformed JSON", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{city: Paris}<|call|>", "call_0000 !malformed_json(get_weather) [0 96]\nnormal=\"\""},
		{"wrong content type", "<|channel|>commentary to=functions.get_weather <|constrain|>yaml<|message|>city: Paris<|call|>", "call_0000 !invalid_format(get_weather) [0 94]\nnormal=\"\""},
		{"built-in tool recipient", "<|channel|>analysis to=browser.search <|constrain|>json<|message|>{\"query\":\"x\"}<|call|>", "call_0000 !invalid_format() [0 87]\nnormal=\"\""},
		{"unknown tool", "<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{}<|call|>", "call_0000 !unknown_tool(rm) [0 76]\nnormal=\"\""},
		{"plain text", "no markup at all", "normal=\"no markup at all\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
