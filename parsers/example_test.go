package parsers_test

import (
	"fmt"

	"github.com/agentrt/agentrt/parsers"
)

func Example() {
	tools, err := parsers.ParseTools([]byte(`[{"type": "function", "function": {"name": "get_weather",
		"parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]`))
	if err != nil {
		panic(err)
	}
	p, err := parsers.New("hermes")
	if err != nil {
		panic(err)
	}
	completion := "<think>\nMaybe <tool_call>{\"name\": \"get_weather\"}</tool_call>?\n</think>\n\n" +
		"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": \"two\"}}\n</tool_call>"
	r := p.Parse(completion, tools)
	for _, c := range r.Calls {
		fmt.Println(c.ID, c.Name, string(c.Arguments))
	}
	for _, e := range r.Errors {
		fmt.Println(e.ID, e.Reason, e.Message)
	}
	// Output:
	// call_0000 get_weather {"city":"Paris","days":2}
	// call_0001 bad_arguments arguments of "get_weather": parameter "days": want integer, got string "two"
}
