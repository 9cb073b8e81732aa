package parsers

import "testing"

// Pythonic texts are Llama 4 style call lists; values are Python literals turned into JSON.
func TestParsePythonic(t *testing.T) {
	t.Parallel()
	tools := mustTools(t, testTools)
	p, err := New("pythonic")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text, want string }{
		{"two calls, literals",
			`[get_weather(city="Paris", days=3, unit=None), search(query='it\'s', exact=True, score=-1.5, tags=('a', "b"), filters={'k': [1, {"x": False}]},)]`,
			"call_0000 get_weather{\"city\":\"Paris\",\"days\":3,\"unit\":null} [1 45]\ncall_0001 search{\"query\":\"it's\",\"exact\":true,\"score\":-1.5,\"tags\":[\"a\",\"b\"],\"filters\":{\"k\":[1,{\"x\":false}]}} [47 144]\nnormal=\"\""},
		{"tagged, text around", "Sure. <|python_start|>[noargs()]<|python_end|> done", "call_0000 noargs{} [23 31]\nnormal=\"Sure.  done\""},
		{"a list that is not a call list", "values [1, 2] and [x]", "normal=\"values [1, 2] and [x]\""},
		{"positional argument", "[get_weather('Paris')]", "call_0000 !invalid_format() [0 22]\nnormal=\"\""},
		{"expression value", "[get_weather(city=x + 1)]", "call_0000 !invalid_format() [0 25]\nnormal=\"\""},
		{"unclosed list", "[get_weather(city='Paris')", "call_0000 !invalid_format() [0 26]\nnormal=\"\""},
		{"unterminated string", "[get_weather(city='Paris)]", "call_0000 !invalid_format() [0 26]\nnormal=\"\""},
		{"unknown tool", "[rm(path='/')]", "call_0000 !unknown_tool(rm) [1 13]\nnormal=\"\""},
		{"wrong type", "[get_weather(city='Paris', days='three')]", "call_0000 !bad_arguments(get_weather) [1 40]\nnormal=\"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(p.Parse(tt.text, tools)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
