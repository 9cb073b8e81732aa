package parsers

import "testing"

// Mistral texts: the list form as the mistral-nemo template writes it ("[TOOL_CALLS][" then the call objects),
// the named form as the mistral-small-3.2 template writes it ("[TOOL_CALLS]" + name + "[ARGS]" + arguments).
func TestParseMistral(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	p, err := New("mistral")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text, want string }{
		{"nemo list, two calls",
			`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}, {"name": "noargs", "arguments": {}, "id": "bcdefghij"}]`,
			"abcdefghi get_weather{\"city\":\"Paris\"} [13 87]\nbcdefghij noargs{} [89 143]\nnormal=\"\""},
		{"nemo list, no ids", `[TOOL_CALLS][{"name": "noargs", "arguments": {}}]`, "call_0000 noargs{} [13 48]\nnormal=\"\""},
		{"small 3.2 named with [CALL_ID]", `[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}[TOOL_CALLS]noargs[CALL_ID]Z9y8X7w6v[ARGS]{}`,
			"a1B2c3D4e get_weather{\"city\":\"Paris\"} [0 64]\nZ9y8X7w6v noargs{} [64 108]\nnormal=\"\""},
		{"small 3.2 named, two calls, text before",
			`Let me check.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}[TOOL_CALLS]search[ARGS]{"query": "x"}`,
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":2} [13 70]\ncall_0001 search{\"query\":\"x\"} [70 108]\nnormal=\"Let me check.\""},
		{"named without [ARGS]", `[TOOL_CALLS]get_weather{"city": "Paris"}`,
			"call_0000 !invalid_format() [0 40]\nnormal=\"\""},
		{"named, arguments cut off", `[TOOL_CALLS]search[ARGS]{"query": "x`,
			"call_0000 !malformed_json(search) [0 36]\nnormal=\"\""},
		{"list cut off after a complete call: the call stands", `[TOOL_CALLS][{"name": "noargs", "arguments": {}}`,
			"call_0000 noargs{} [13 48]\nnormal=\"\""},
		{"text inside the list", `[TOOL_CALLS][{"name": "noargs", "arguments": {}} and more]`,
			"call_0000 noargs{} [13 49]\ncall_0001 !invalid_format() [49 58]\nnormal=\"\""},
		{"named, wrong argument type", `[TOOL_CALLS]get_weather[ARGS]{"city": 3}`,
			"call_0000 !bad_arguments(get_weather) [0 40]\nnormal=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
