package emulator

import (
	"reflect"
	"testing"
)

// DeepSeek prompts as SGLang's tool templates render them (V3: tool outputs wrapped in <｜tool▁outputs▁begin｜>
// and answered without an <｜Assistant｜> marker; V3.1: bare tool outputs) split into their messages.
func TestSplitDeepSeek(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []message
		open       *message
	}{
		{"first prompt", "<｜begin▁of▁sentence｜>Be careful.\n\ntools...<｜User｜>2+3?<｜Assistant｜>",
			[]message{{"system", "Be careful.\n\ntools..."}, {"user", "2+3?"}}, &message{"assistant", ""}},
		{"v3 after two tool outputs", "<｜begin▁of▁sentence｜>S<｜User｜>2+3?<｜Assistant｜><｜tool▁calls▁begin｜>x<｜tool▁calls▁end｜><｜end▁of▁sentence｜>" +
			"Use the results below.<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>5<｜tool▁output▁end｜>\n<｜tool▁output▁begin｜>6<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
			[]message{{"system", "S"}, {"user", "2+3?"}, {"assistant", "<｜tool▁calls▁begin｜>x<｜tool▁calls▁end｜>"}, {"tool", "5"}, {"tool", "6"}}, &message{"assistant", ""}},
		{"v3.1 answered", "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜></think>call<｜end▁of▁sentence｜><｜tool▁output▁begin｜>5<｜tool▁output▁end｜>It is 5.<｜end▁of▁sentence｜><｜User｜>more",
			[]message{{"user", "q"}, {"assistant", "</think>call"}, {"tool", "5"}, {"assistant", "It is 5."}, {"user", "more"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, open := layoutOf(tc.text).split(tc.text)
			if !reflect.DeepEqual(msgs, tc.want) || !reflect.DeepEqual(open, tc.open) {
				t.Fatalf("got %q open %v\nwant %q open %v", msgs, open, tc.want, tc.open)
			}
		})
	}
}

// gpt-oss prompts split into harmony messages (a tool result's header names the function), and the developer
// message's TypeScript tool signatures give the tools.
func TestSplitHarmony(t *testing.T) {
	text := "<|start|>system<|message|>You are ChatGPT.<|end|><|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n" +
		"// Evaluate an arithmetic expression.\ntype calculator = (_: {\n// The expression\nexpression: string,\n// Digits\nprecision?: number,\n}) => any;\n\n" +
		"type now = () => any;\n\n} // namespace functions<|end|><|start|>user<|message|>What is 12*7+3?<|end|>" +
		"<|start|>assistant to=functions.calculator<|channel|>commentary json<|message|>{\"expression\": \"12*7\"}<|call|>" +
		"<|start|>functions.calculator to=assistant<|channel|>commentary<|message|>84<|end|><|start|>assistant"
	c := parseConversation(text, nil)
	var roles []string
	for _, m := range c.messages {
		roles = append(roles, m.role)
	}
	if !reflect.DeepEqual(roles, []string{"system", "developer", "user", "assistant", "tool"}) || c.open == nil || c.open.role != "assistant" {
		t.Fatalf("roles %v, open %v", roles, c.open)
	}
	if got := c.toolResults(); !reflect.DeepEqual(got, []string{"84"}) || c.task() != "What is 12*7+3?" {
		t.Errorf("tool results %q, task %q", got, c.task())
	}
	want := []toolSpec{{Name: "calculator", Params: []string{"expression", "precision"}, ParamTypes: map[string]string{"expression": "string", "precision": "number"}, Required: []string{"expression"}},
		{Name: "now", ParamTypes: map[string]string{}}}
	if !reflect.DeepEqual(c.tools, want) {
		t.Errorf("tools %+v, want %+v", c.tools, want)
	}
}

// Tool lists that are not one JSON object a line: Qwen3-Coder's XML, and Hermes-3's hand-written JSON (raw
// newlines and quotes in the description, only the schema through tojson).
func TestScanToolListVariants(t *testing.T) {
	xml := "\n<function>\n<name>calculator</name>\n<description>Evaluate \"2+3\"</description>\n<parameters>\n<parameter>\n<name>expression</name>\n<type>string</type>\n</parameter>\n" +
		"<parameter>\n<name>digits</name>\n<type>integer</type>\n</parameter>\n<required>[\"expression\"]</required>\n</parameters>\n</function>\n<function>\n<name>now</name>\n</function>\n"
	want := []toolSpec{
		{Name: "calculator", Description: `Evaluate "2+3"`, Params: []string{"expression", "digits"}, ParamTypes: map[string]string{"expression": "string", "digits": "integer"}, Required: []string{"expression"}},
		{Name: "now", ParamTypes: map[string]string{}},
	}
	if got := scanXMLTools(xml); !reflect.DeepEqual(got, want) {
		t.Errorf("scanXMLTools = %+v", got)
	}
	hermes := ` {"type": "function", "function": {"name": "calculator", "description": "calculator(expression: str) - Evaluate "(2 + 3)".

    Args:
        expression(str): The expression.", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}
{"type": "function", "function": {"name": "now", "description": "now() - The time.", "parameters": {}} `
	if got := scanTools(hermes); len(got) != 1 || got[0].Name != "now" {
		t.Errorf("scanTools on Hermes-3's list = %+v (only the well-formed one is JSON)", got)
	}
	want = []toolSpec{
		{Name: "calculator", Params: []string{"expression"}, ParamTypes: map[string]string{"expression": "string"}, Required: []string{"expression"},
			Schemas: map[string]paramSchema{"expression": {}}},
		{Name: "now", ParamTypes: map[string]string{}, Schemas: map[string]paramSchema{}},
	}
	if got := scanLooseTools(hermes); !reflect.DeepEqual(got, want) {
		t.Errorf("scanLooseTools = %+v", got)
	}
}

// Mistral prompts as Nemo's and Small 3.2's templates render them split into their messages: the tool list, user
// turns, tool calls, tool results (their content taken out of the template's wrapping) and the open generation
// prompt; the tools are read from Nemo's list, whose string values the template writes unescaped.
func TestSplitMistral(t *testing.T) {
	nemoTools := `[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "calculator", "description": "Evaluate "2 + 3" and the like.", ` +
		`"parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}, ` +
		`{"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {}}}][/AVAILABLE_TOOLS]`
	calcTool := toolSpec{Name: "calculator", Params: []string{"expression"}, ParamTypes: map[string]string{"expression": "string"}, Required: []string{"expression"}}
	for _, tc := range []struct {
		name, text string
		roles      []string
		open       bool
		task       string
		results    []string
		tools      []string
	}{
		{"nemo first prompt", "<s>" + nemoTools + "[INST]Be careful.\n\nWhat is 12*7?[/INST]",
			[]string{"tools", "user"}, true, "Be careful.\n\nWhat is 12*7?", nil, []string{"calculator", "now"}},
		{"nemo after two results", "<s>" + nemoTools + "[INST]What is 12*7 and 1+1?[/INST]" +
			`[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "12*7"}, "id": "abcDEF123"}, ` +
			`{"name": "calculator", "arguments": {"expression": "1+1"}, "id": "XyZ987abc"}]</s>` +
			`[TOOL_RESULTS]{"content": {"result": "84"}, "call_id": "abcDEF123"}[/TOOL_RESULTS]` +
			`[TOOL_RESULTS]{"content": Error: it failed, "call_id": "XyZ987abc"}[/TOOL_RESULTS]`,
			[]string{"tools", "user", "assistant", "tool", "tool"}, true, "What is 12*7 and 1+1?",
			[]string{`{"result": "84"}`, "Error: it failed"}, []string{"calculator", "now"}},
		{"nemo answered, then a follow-up", "<s>[INST]q[/INST]It is 5.</s>[INST]more[/INST]",
			[]string{"user", "assistant", "user"}, true, "q", nil, nil},
		{"small 3.2", "<s>[SYSTEM_PROMPT]Be careful.[/SYSTEM_PROMPT][AVAILABLE_TOOLS][" + calcToolJSON + "][/AVAILABLE_TOOLS][INST]What is 12*7?[/INST]" +
			`[TOOL_CALLS]calculator[CALL_ID]abcDEF123[ARGS]{"expression": "12*7"}</s>[TOOL_RESULTS]abcDEF123[TOOL_CONTENT]84[/TOOL_RESULTS]`,
			[]string{"system", "tools", "user", "assistant", "tool"}, true, "What is 12*7?", []string{"84"}, []string{"calculator"}},
		{"devstral", "<s>[SYSTEM_PROMPT]Be careful.[/SYSTEM_PROMPT][AVAILABLE_TOOLS][" + calcToolJSON + "][/AVAILABLE_TOOLS][INST]What is 12*7?[/INST]" +
			`[TOOL_CALLS]calculator[ARGS]{"expression": "12*7"}[TOOL_CALLS]calculator[ARGS]{"expression": "1+1"}</s>[TOOL_RESULTS]84[/TOOL_RESULTS][TOOL_RESULTS]2[/TOOL_RESULTS]`,
			[]string{"system", "tools", "user", "assistant", "tool", "tool"}, true, "What is 12*7?", []string{"84", "2"}, []string{"calculator"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parseConversation(tc.text, nil)
			var roles, tools []string
			for _, m := range c.messages {
				roles = append(roles, m.role)
			}
			for _, ts := range c.tools {
				tools = append(tools, ts.Name)
			}
			if c.format != chatMistral || !reflect.DeepEqual(roles, tc.roles) || (c.open != nil) != tc.open || (c.open != nil && c.open.role != "assistant") {
				t.Fatalf("format %s, roles %v, open %v; want mistral, %v, open %v", c.format, roles, c.open, tc.roles, tc.open)
			}
			if got := c.toolResults(); c.task() != tc.task || !reflect.DeepEqual(got, tc.results) || !reflect.DeepEqual(tools, tc.tools) {
				t.Errorf("task %q, results %q, tools %v; want %q, %q, %v", c.task(), got, tools, tc.task, tc.results, tc.tools)
			}
			if len(c.tools) > 0 {
				got := c.tools[0]
				got.Description, got.Schemas = "", nil // TestToolSchemas reads these
				if !reflect.DeepEqual(got, calcTool) {
					t.Errorf("calculator spec %+v, want %+v", got, calcTool)
				}
			}
		})
	}
}

// Kimi K2, MiniMax-M2, Seed-OSS and GLM prompts as their templates render them split into messages: the tool
// list, the task, assistant turns, each tool result (out of its wrapping) and the open generation prompt. GLM's
// messages have no end token: each runs to the next role token (<|observation|> for the results), without the
// newline GLM-4.5/4.6 write after the role token and the /nothink they append to a user message.
func TestSplitFamilyLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, text, format string
		roles              []string
		open               string // the generation prompt's content; "-" for none
		results            []string
	}{
		{"kimi first prompt", "<|im_system|>tool_declare<|im_middle|>[" + calcToolJSON + "]<|im_end|><|im_system|>system<|im_middle|>S<|im_end|>" +
			"<|im_user|>user<|im_middle|>What is 12*7?<|im_end|><|im_assistant|>assistant<|im_middle|>",
			chatKimi, []string{"tools", "system", "user"}, "", nil},
		{"kimi after results", "<|im_system|>tool_declare<|im_middle|>[" + calcToolJSON + "]<|im_end|><|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>" +
			"<|im_user|>user<|im_middle|>What is 12*7?<|im_end|><|im_assistant|>assistant<|im_middle|><|tool_calls_section_begin|>x<|tool_calls_section_end|><|im_end|>" +
			`<|im_system|>tool<|im_middle|>## Return of call_0000\n{"result": "84"}<|im_end|>` + "<|im_system|>tool<|im_middle|>## Return of functions.calculator:1\n2<|im_end|>" +
			"<|im_assistant|>assistant<|im_middle|>",
			chatKimi, []string{"tools", "system", "user", "assistant", "tool", "tool"}, "", []string{`{"result": "84"}`, "2"}},
		{"minimax after results", "]~!b[]~b]system\nS\n\n<tools>\n<tool>" + `{"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}` +
			"</tool>\n</tools>\n[e~[\n]~b]user\nWhat is 12*7?[e~[\n]~b]ai\n<think>\nr\n</think>\n\n<minimax:tool_call>\n...\n</minimax:tool_call>[e~[\n" +
			"]~b]tool\n<response>84</response>\n<response>Error: no\n</response>[e~[\n]~b]ai\n<think>\n",
			chatMiniMax, []string{"system", "user", "assistant", "tool", "tool"}, "<think>\n", []string{"84", "Error: no"}},
		{"seed after a result", "<seed:bos>system\nS\n\nFunction:\ndef calculator(expression: str):\n    \"\"\"\n    E\n    \"\"\"\n<seed:eos>" +
			"<seed:bos>user\nWhat is 12*7?<seed:eos><seed:bos>assistant\n<seed:tool_call>\n<function=calculator>\n<parameter=expression>12*7</parameter>\n</function>\n</seed:tool_call><seed:eos>" +
			"<seed:bos>tool\n84<seed:eos><seed:bos>assistant\n",
			chatSeed, []string{"system", "user", "assistant", "tool"}, "", []string{"84"}},
		{"seed answered", "<seed:bos>user\nWhat is 12*7?<seed:eos><seed:bos>assistant\nIt is 84.<seed:eos>",
			chatSeed, []string{"user", "assistant"}, "-", nil},
		{"glm-4.6 after results", "[gMASK]<sop><|system|>\n# Tools\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + calcToolJSON +
			"\n</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n<tool_call>{function-name}\n...\n</tool_call>" +
			"<|system|>\nS<|user|>\nWhat is 12*7?/nothink<|assistant|>\n<think></think>\n<tool_call>calculator\n<arg_key>expression</arg_key>\n<arg_value>12*7</arg_value>\n</tool_call>" +
			"<|observation|>\n<tool_response>\n84\n</tool_response>\n<tool_response>\nError: no\n</tool_response><|assistant|>\n<think></think>",
			chatGLM, []string{"system", "system", "user", "assistant", "tool", "tool"}, "<think></think>", []string{"84", "Error: no"}},
		{"glm-4.7 first prompt, thinking", "[gMASK]<sop><|system|>\n# Tools\n\n<tools>\n" + calcToolJSON + "\n</tools>\n\n<tool_call>{function-name}<arg_key>...</tool_call>" +
			"<|user|>What is 12*7?<|assistant|><think>",
			chatGLM, []string{"system", "user"}, "<think>", nil},
		{"glm-4.7 answered", "[gMASK]<sop><|user|>What is 12*7?<|assistant|></think><tool_call>calculator<arg_key>expression</arg_key><arg_value>12*7</arg_value></tool_call>" +
			"<|observation|><tool_response>84</tool_response><|assistant|></think>It is 84.<|user|>What is 12*7?",
			chatGLM, []string{"user", "assistant", "tool", "assistant", "user"}, "-", []string{"84"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parseConversation(tc.text, nil)
			var roles []string
			for _, m := range c.messages {
				roles = append(roles, m.role)
			}
			if c.format != tc.format || !reflect.DeepEqual(roles, tc.roles) {
				t.Fatalf("format %s, roles %v; want %s, %v", c.format, roles, tc.format, tc.roles)
			}
			switch {
			case tc.open == "-" && c.open != nil:
				t.Errorf("open %+v, want none", c.open)
			case tc.open != "-" && (c.open == nil || c.open.role != "assistant" || c.open.content != tc.open):
				t.Errorf("open %+v, want the assistant's with %q", c.open, tc.open)
			}
			if got := c.toolResults(); c.task() != "What is 12*7?" || !reflect.DeepEqual(got, tc.results) {
				t.Errorf("task %q, results %q; want %q", c.task(), got, tc.results)
			}
			if tc.open != "-" && (len(c.tools) != 1 || c.tools[0].Name != "calculator" || c.tools[0].Params[0] != "expression") {
				t.Errorf("tools %+v, want the calculator", c.tools)
			}
		})
	}
	if got := kimiResult("## Return of call_0000\nreal newline"); got != "real newline" {
		t.Errorf("kimiResult with a newline: %q", got)
	}
}

// Seed-OSS's tool list: Python signatures, their types mapped back to JSON Schema's, required parameters marked
// [必填] in the docstring.
func TestScanSeedTools(t *testing.T) {
	s := "You are Doubao.\n\nFunction:\ndef calculator(expression: str,precision: int):\n    \"\"\"\n    Evaluate (2 + 3): and more.\n\n    Args:\n" +
		"    - expression (str) [必填]: The expression.\n    - precision (int) [选填]: Digits.\n\n    \"\"\"\n\n\n" +
		"Function:\ndef now():\n    \"\"\"\n    The time.\n\n    \"\"\"\n\n\nFunction:\ndef lookup(items: list,exact: bool,opts: Any):\n    \"\"\"\n    L\n\n    Args:\n" +
		"    - items (list) [选填]: x\n    - exact (bool) [必填]: y\n    - opts (Any) [选填]: z\n    \"\"\"\n工具调用请遵循如下格式:\n"
	want := []toolSpec{
		{Name: "calculator", Params: []string{"expression", "precision"}, ParamTypes: map[string]string{"expression": "string", "precision": "integer"}, Required: []string{"expression"}},
		{Name: "now", ParamTypes: map[string]string{}},
		{Name: "lookup", Params: []string{"items", "exact", "opts"}, ParamTypes: map[string]string{"items": "array", "exact": "boolean", "opts": ""}, Required: []string{"exact"}},
	}
	if got := scanSeedTools(s); !reflect.DeepEqual(got, want) {
		t.Errorf("scanSeedTools =\n%+v\nwant\n%+v", got, want)
	}
}

// TestSplitCutShort: the rules of layout.split for prompts no template writes. A message cut short by the next
// marker is a message; one the prompt ends in is the generation prompt if it is the assistant's, else a message; a
// header cut short ends at the next marker.
func TestSplitCutShort(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []message
		open *message
	}{
		{"<|im_start|>system\nS<|im_start|>user\nq", []message{{"system", "S"}, {"user", "q"}}, nil},
		{"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant", []message{{"user", "q"}}, &message{"assistant", ""}},
		{"<|im_start|>user<|im_end|><|im_start|>assistant\n<think>", []message{{"user", ""}}, &message{"assistant", "<think>"}},
		{"<|start|>user<|start|>assistant<|message|>a<|end|>", []message{{"user", ""}, {"assistant", "a"}}, nil},
	} {
		msgs, open := layoutOf(tc.text).split(tc.text)
		if !reflect.DeepEqual(msgs, tc.want) || !reflect.DeepEqual(open, tc.open) {
			t.Errorf("%q: got %q open %v, want %q open %v", tc.text, msgs, open, tc.want, tc.open)
		}
	}
}

// TestToolSchemas: a JSON tool list gives the agentic policy each tool's description and, per parameter, what it
// fills the argument by: enum, bounds (exclusive ones as the nearest integer inside), the type of array items, a
// ["T", "null"] type as T.
func TestToolSchemas(t *testing.T) {
	got := scanTools(`{"type": "function", "function": {"name": "forecast", "description": "Weather forecast for a city.",
		"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
		"days": {"type": "integer", "minimum": 1, "exclusiveMaximum": 15}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"]},
		"tags": {"type": "array", "items": {"type": "string"}}}, "required": ["city"]}}}`)
	one, fifteen := 1.0, 14.0
	want := []toolSpec{{Name: "forecast", Description: "Weather forecast for a city.", Params: []string{"city", "days", "unit", "tags"},
		ParamTypes: map[string]string{"city": "string", "days": "integer", "unit": "string", "tags": "array"}, Required: []string{"city"},
		Schemas: map[string]paramSchema{"city": {Description: "City name"}, "days": {Min: &one, Max: &fifteen},
			"unit": {Enum: []any{"celsius", "fahrenheit"}}, "tags": {Items: "string"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scanTools = %+v\nwant %+v", got, want)
	}
}
