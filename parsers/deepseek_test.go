package parsers

import "testing"

// DeepSeek texts are what the deepseek-r1 / deepseek-v3 / deepseek-v3.1 chat templates write for tool calls.
func TestParseDeepSeek(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	tests := []struct{ name, format, text, want string }{
		{"r1 template form after reasoning", "deepseekv3",
			"<think>\nuse the tool\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"call_0000 get_weather{\"city\":\"Paris\"} [59 178]\nnormal=\"<think>\\nuse the tool\\n</think>\""},
		{"v3 without the fence", "deepseekv3",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"call_0000 !invalid_format(get_weather) [28 135]\nnormal=\"\""},
		{"v3 wrong type", "deepseekv3",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool<｜tool▁sep｜>get_weather\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"call_0000 !invalid_format() [28 128]\nnormal=\"\""},
		{"v3.1 two calls", "deepseekv31",
			"Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\", \"days\": 2}<｜tool▁call▁end｜><｜tool▁call▁begin｜>noargs<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":2} [37 146]\ncall_0001 noargs{} [146 224]\nnormal=\"Checking.\""},
		{"v3.1 arguments not an object", "deepseekv31",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>[1]<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"call_0000 !bad_arguments(search) [28 107]\nnormal=\"\""},
		{"v3.1 cut off", "deepseekv31",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"query\": \"x",
			"call_0000 !unclosed_tag() [28 91]\nnormal=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
