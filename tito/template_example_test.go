package tito_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/agentrt/agentrt/tito"
)

// A ChatML template, as Qwen models use (a shortened one; LoadModel + Model.ChatTemplate give the real one).
const chatML = `{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\n' }}
    {%- if message.tool_calls %}
        {%- for tc in message.tool_calls %}
            {{- '<tool_call>\n{"name": "' + tc.function.name + '", "arguments": ' + tc.function.arguments | tojson + '}\n</tool_call>' }}
        {%- endfor %}
    {%- else %}
        {{- message.content }}
    {%- endif %}
    {{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}`

// Example_chatTemplate renders the first prompt of an episode in full, then the tool result that follows the model's turn as
// a delta: the text to append after the model's own tokens (which end with <|im_end|>).
func Example_chatTemplate() {
	tpl, err := tito.NewChatTemplate(chatML, tito.SpecialTokens{"eos_token": "<|im_end|>"})
	if err != nil {
		log.Fatal(err)
	}
	prompt, err := tpl.Render([]tito.Message{
		{Role: tito.RoleSystem, Content: "You are terse."},
		{Role: tito.RoleUser, Content: "Weather in Paris?"},
	}, tito.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", prompt)

	// The model answered with a tool call, ending its turn with <|im_end|>; the loop ran the tool.
	history := []tito.Message{
		{Role: tito.RoleSystem, Content: "You are terse."},
		{Role: tito.RoleUser, Content: "Weather in Paris?"},
		{Role: tito.RoleAssistant, ToolCalls: []tito.ToolCall{{ID: "call_0", Type: "function", Function: tito.FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}}},
	}
	delta, err := tpl.RenderDelta(history, []tito.Message{
		{Role: tito.RoleTool, ToolCallID: "call_0", Content: `{"temp": 21}`},
	}, tito.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("separator %q\n", tpl.Separator())
	fmt.Printf("%q\n", delta)

	// Messages decode from OpenAI-style JSON; arguments keep their key order.
	msgs, err := tito.DecodeMessages([]byte(`[{"role": "assistant", "tool_calls": [{"id": "call_0", "type": "function",
		"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}}]}]`))
	if err != nil {
		log.Fatal(err)
	}
	text, err := tpl.Render(msgs, tito.RenderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", text)
	out, _ := json.Marshal(msgs[0].ToolCalls[0])
	fmt.Println(string(out))
	// Output:
	// "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
	// separator "\n"
	// "\n<|im_start|>tool\n{\"temp\": 21}<|im_end|>\n<|im_start|>assistant\n"
	// "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"C\"}}\n</tool_call><|im_end|>\n"
	// {"id":"call_0","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","unit":"C"}}}
}
