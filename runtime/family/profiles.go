package family

// Reasoning is how a family marks the model's reasoning in its output.
type Reasoning string

// The reasoning markups the families use.
const (
	ReasoningNone      Reasoning = "none"       // no reasoning block
	ReasoningThink     Reasoning = "think"      // <think>...</think> (the generation prompt may open it)
	ReasoningSeedThink Reasoning = "seed:think" // <seed:think>...</seed:think>
	ReasoningHarmony   Reasoning = "harmony"    // gpt-oss channels: analysis is reasoning, commentary/final are not
)

// Kwarg is one chat_template_kwargs variable a family's template reads.
type Kwarg struct {
	Name string
	// Effect says what it does and its default, in words.
	Effect string
}

// Profile is what agentrt needs to know about a model family beyond its chat template: which tool-call parser
// reads its output, how it marks reasoning, which tokens end a turn, and which template variables it takes.
type Profile struct {
	// Name is the family's name, as runtime.toml's family key and `agentrt model check --family` spell it.
	Name string
	// Models names models of the family, for people.
	Models string
	// Parser is the built-in tool-call parser, by SGLang's --tool-call-parser name; "" when there is none.
	Parser string
	// Unsupported says why the family cannot run agents (no parser, a template that cannot express tool calls);
	// "" when it can. The self-test refuses such a family with this reason.
	Unsupported string
	// Reasoning is the reasoning markup of the model's output.
	Reasoning Reasoning
	// Stops are the end-of-turn tokens besides the tokenizer's EOS token: the model may end a turn with any of
	// them, so each is a stop id sent to SGLang and trimmed before parsing.
	Stops []string
	// StopBeginsNext: the template writes no end-of-turn token after an assistant message; the stop token the
	// model generated (one of Stops) is the first token of the next message (GLM: <|observation|>, <|user|>).
	// History keeps it as generated, and the next message's delta starts after it.
	StopBeginsNext bool
	// CallArgsString: the family's own templates concatenate a tool call's arguments as a JSON string and render
	// calls only when the assistant's content is None (DeepSeek's), so the self-test writes the call so when the
	// template in use does (SGLang's DeepSeek templates write them with tojson, after the content).
	CallArgsString bool
	// RewrittenEnd is what the template writes in place of the model's stop token at the end of an earlier turn
	// (gpt-oss: <|end|> for a final answer's <|return|>); see tito.WithRewrittenEnd.
	RewrittenEnd string
	// CallIDs is the form of tool call ids the template accepts (Mistral's raise unless they are 9 alphanumerics).
	CallIDs CallIDStyle
	// ToolTemplate names the chat template in SGLang's examples/chat_template that SGLang documents for the
	// family's tool calls, when the family's own template renders no tools (DeepSeek): agents set it as
	// chat_template.
	ToolTemplate string
	// Kwargs are the chat_template_kwargs the template reads.
	Kwargs []Kwarg
	// Template holds fingerprints of the family's chat template: it contains all of Template and none of
	// NotTemplate. Each reference template matches exactly one family (tito/testdata/families).
	Template, NotTemplate []string
	// Tokens are special tokens that only this family's tokenizer has (with the BOS and EOS tokens they
	// identify it when no template fingerprint matches).
	Tokens []string
}

// Reused fingerprints and kwargs.
const (
	chatML       = "<|im_start|>"
	hermesCall   = "<tool_call>"
	xmlFunction  = "<function="
	llamaHeader  = "<|start_header_id|>"
	dsToolCalls  = "<｜tool▁calls▁begin｜>"
	dsToolOutput = "<｜tool▁outputs▁begin｜>"
	mistralCalls = "[TOOL_CALLS]"
)

var (
	enableThinking = Kwarg{"enable_thinking", "false renders the turn with thinking switched off (default true)"}
	thinkingFlag   = Kwarg{"thinking", "true opens a <think> block in the generation prompt (default false)"}
	llamaKwargs    = []Kwarg{{"tools_in_user_message", "false puts the tool specs in the system message (default true)"},
		{"date_string", "the date the system message states"}}
)

// Profiles is the table of supported and known families: one row per family. To add a family, add a row (and,
// for a new tool-call format, a parser in parsers/); `go test ./runtime/family` then proves detection and the
// self-test on the family's template in tito/testdata/families.
var Profiles = []Profile{
	// Qwen: ChatML with Hermes-style <tool_call>{json}</tool_call> (SGLang: qwen25 = hermes here).
	{Name: "qwen3", Models: "Qwen3-0.6B ... Qwen3-235B-A22B (hybrid thinking)", Parser: "hermes", Reasoning: ReasoningThink,
		Kwargs:   []Kwarg{enableThinking},
		Template: []string{chatML, hermesCall, "enable_thinking", "reasoning_content"}, NotTemplate: []string{xmlFunction, "vision_start"},
		Tokens: []string{"<|im_start|>", "<think>"}},
	{Name: "qwen3-2507-instruct", Models: "Qwen3-*-Instruct-2507", Parser: "hermes", Reasoning: ReasoningNone,
		Template: []string{chatML, hermesCall, "reasoning_content"}, NotTemplate: []string{"enable_thinking", xmlFunction, "'<|im_start|>assistant\n<think>"}},
	{Name: "qwen3-2507-thinking", Models: "Qwen3-*-Thinking-2507 (the prompt opens <think>)", Parser: "hermes", Reasoning: ReasoningThink,
		Template: []string{chatML, hermesCall, "reasoning_content", "'<|im_start|>assistant\n<think>\n'"}, NotTemplate: []string{"enable_thinking", xmlFunction}},
	{Name: "qwen3-coder", Models: "Qwen3-Coder-30B-A3B, Qwen3-Coder-480B-A35B", Parser: "qwen3_coder", Reasoning: ReasoningNone,
		Template: []string{chatML, "<tool_call>\\n<function="}, NotTemplate: []string{"<think>"}},
	{Name: "qwen3.5", Models: "Qwen3.5 (the prompt opens <think>)", Parser: "qwen3_coder", Reasoning: ReasoningThink,
		Kwargs:   []Kwarg{enableThinking},
		Template: []string{chatML, xmlFunction, "<think>", "vision_start"}},
	{Name: "qwen2.5", Models: "Qwen2.5-*-Instruct", Parser: "hermes", Reasoning: ReasoningNone,
		Template: []string{chatML, hermesCall, "You are Qwen, created by Alibaba Cloud"}, NotTemplate: []string{"<think>"}},
	{Name: "qwq-32b", Models: "QwQ-32B (the prompt opens <think>)", Parser: "hermes", Reasoning: ReasoningThink,
		Template: []string{chatML, hermesCall, `'<|im_start|>assistant\n<think>\n'`}, NotTemplate: []string{"reasoning_content"}},
	{Name: "hermes-3", Models: "Hermes-3-Llama-3.1 (tool_use template)", Parser: "hermes", Reasoning: ReasoningNone,
		Template: []string{chatML, hermesCall, "<tool_response>", "{{- bos_token }}"}, NotTemplate: []string{"<think>"}},
	{Name: "smollm3", Models: "SmolLM3-3B", Reasoning: ReasoningThink, Kwargs: []Kwarg{enableThinking},
		Unsupported: "the chat template ignores tools and tool calls (no tool-call format to parse)",
		Template:    []string{chatML, "Reasoning Mode: ", "SmolLM"}},
	{Name: "phi-4", Models: "phi-4", Reasoning: ReasoningNone,
		Unsupported: "the chat template ignores tools and tool calls (no tool-call format to parse)",
		Template:    []string{chatML, "<|im_sep|>"}, Tokens: []string{"<|im_sep|>"}},

	// Llama 3: JSON calls {"name": ..., "parameters": ...}; <|eom_id|> ends a turn that expects a tool result.
	{Name: "llama3.1", Models: "Llama-3.1-8B/70B/405B-Instruct, Llama-3.3-70B-Instruct", Parser: "llama3", Reasoning: ReasoningNone,
		Stops: []string{"<|eom_id|>"}, Kwargs: append([]Kwarg{{"builtin_tools", "the built-in tools (brave_search, wolfram_alpha, code_interpreter) to enable"}}, llamaKwargs...),
		Template: []string{llamaHeader, "<|python_tag|>", "<|eom_id|>"}, Tokens: []string{"<|start_header_id|>", "<|eom_id|>"}},
	{Name: "llama3.2", Models: "Llama-3.2-1B/3B-Instruct", Parser: "llama3", Reasoning: ReasoningNone,
		Stops: []string{"<|eom_id|>"}, Kwargs: llamaKwargs,
		Template: []string{llamaHeader, "Cutting Knowledge Date"}, NotTemplate: []string{"<|python_tag|>"}},

	// DeepSeek: special-token call sections with ```json arguments.
	{Name: "deepseek-v3", Models: "DeepSeek-V3, DeepSeek-V3-0324", Parser: "deepseekv3", Reasoning: ReasoningNone, CallArgsString: true,
		ToolTemplate: "tool_chat_template_deepseekv3.jinja",
		Template:     []string{dsToolCalls, dsToolOutput}, NotTemplate: []string{"</think>"},
		Tokens: []string{"<｜tool▁calls▁begin｜>"}},
	{Name: "deepseek-r1", Models: "DeepSeek-R1, R1-Distill-*", Parser: "deepseekv3", Reasoning: ReasoningThink, CallArgsString: true,
		ToolTemplate: "tool_chat_template_deepseekv3.jinja",
		Template:     []string{dsToolCalls, dsToolOutput, "</think>"}},
	{Name: "deepseek-v3.1", Models: "DeepSeek-V3.1 (hybrid thinking)", Parser: "deepseekv31", Reasoning: ReasoningThink, CallArgsString: true,
		ToolTemplate: "tool_chat_template_deepseekv31.jinja",
		Kwargs:       []Kwarg{thinkingFlag},
		Template:     []string{dsToolCalls, "<think>", "thinking"}, NotTemplate: []string{dsToolOutput}},

	// GLM: <tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>; no end-of-turn token.
	{Name: "glm-4.6", Models: "GLM-4.5, GLM-4.5-Air, GLM-4.6", Parser: "glm45", Reasoning: ReasoningThink,
		Stops: []string{"<|user|>", "<|observation|>"}, StopBeginsNext: true, Kwargs: []Kwarg{enableThinking},
		Template: []string{"<|observation|>", "<arg_key>", "/nothink"}, Tokens: []string{"<|observation|>"}},
	{Name: "glm-4.7-flash", Models: "GLM-4.7, GLM-4.7-Flash", Parser: "glm47", Reasoning: ReasoningThink,
		Stops: []string{"<|user|>", "<|observation|>"}, StopBeginsNext: true,
		Kwargs:   []Kwarg{enableThinking, {"clear_thinking", "false keeps the reasoning of earlier turns in history"}},
		Template: []string{"<|observation|>", "<arg_key>", "clear_thinking"}},

	// Kimi K2: <|tool_calls_section_begin|> sections with functions.NAME:IDX ids.
	{Name: "kimi-k2", Models: "Kimi-K2-Instruct (July 2025 template)", Parser: "kimi_k2", Reasoning: ReasoningNone, CallIDs: CallIDKimi,
		Template: []string{"<|im_middle|>", "<|tool_calls_section_begin|>"}, NotTemplate: []string{"<think>"},
		Tokens: []string{"<|im_middle|>", "<|tool_calls_section_begin|>"}},
	{Name: "kimi-k2-thinking", Models: "Kimi-K2-Thinking", Parser: "kimi_k2", Reasoning: ReasoningThink, CallIDs: CallIDKimi,
		Template: []string{"<|im_middle|>", "<|tool_calls_section_begin|>", "<think>"}},

	// gpt-oss: the harmony format; a tool call ends with <|call|>, a final answer with <|return|> (EOS).
	{Name: "gpt-oss", Models: "gpt-oss-20b, gpt-oss-120b", Parser: "gpt-oss", Reasoning: ReasoningHarmony,
		Stops: []string{"<|call|>"}, RewrittenEnd: "<|end|>",
		Kwargs:   []Kwarg{{"reasoning_effort", `"low", "medium" (default) or "high"`}, {"model_identity", "the system message's first line"}},
		Template: []string{"<|channel|>", "<|message|>", "<|call|>"}, Tokens: []string{"<|channel|>", "<|call|>"}},

	// Gemma 3: no tool format in the template.
	{Name: "gemma3", Models: "gemma-3-1b/4b/12b/27b-it", Reasoning: ReasoningNone,
		Unsupported: "the chat template has no tool-call format (tools are left to the prompt) and SGLang has no Gemma 3 parser",
		Template:    []string{"<start_of_turn>", "<end_of_turn>"}, Tokens: []string{"<start_of_turn>"}},

	// Mistral: [TOOL_CALLS] followed by a JSON list (Nemo), NAME[CALL_ID]ID[ARGS]{...} (Small 3.2) or NAME[ARGS]{...} (Devstral).
	{Name: "mistral-small-3.2", Models: "Mistral-Small-3.2-24B-Instruct-2506", Parser: "mistral", Reasoning: ReasoningNone, CallIDs: CallIDAlnum9,
		Template: []string{mistralCalls, "[CALL_ID]", "[SYSTEM_PROMPT]"}},
	{Name: "devstral-small", Models: "Devstral-Small-2507", Parser: "mistral", Reasoning: ReasoningNone,
		Template: []string{mistralCalls, "[ARGS]", "[SYSTEM_PROMPT]"}, NotTemplate: []string{"[CALL_ID]"}},
	{Name: "mistral-nemo", Models: "Mistral-Nemo-Instruct-2407", Parser: "mistral", Reasoning: ReasoningNone, CallIDs: CallIDAlnum9,
		Template: []string{mistralCalls, "[AVAILABLE_TOOLS]"}, NotTemplate: []string{"[SYSTEM_PROMPT]"}},

	// MiniMax-M2: <minimax:tool_call><invoke name=...><parameter name=...>.
	{Name: "minimax-m2", Models: "MiniMax-M2", Parser: "minimax-m2", Reasoning: ReasoningThink,
		Template: []string{"<minimax:tool_call>"}, Tokens: []string{"<minimax:tool_call>"}},

	// Seed-OSS: <seed:tool_call><function=...><parameter=...>; reasoning in <seed:think>. SGLang has no parser for
	// it; the name is vLLM's.
	{Name: "seed-oss", Models: "Seed-OSS-36B-Instruct", Parser: "seed_oss", Reasoning: ReasoningSeedThink,
		Kwargs:   []Kwarg{{"thinking_budget", "the reasoning token budget the prompt announces (-1: unlimited)"}},
		Template: []string{"<seed:tool_call>"}, Tokens: []string{"<seed:tool_call>"}},

	// Granite 3.3: <|tool_call|>[json list]; no parser here.
	{Name: "granite-3.3", Models: "granite-3.3-2b/8b-instruct", Reasoning: ReasoningThink, Kwargs: []Kwarg{thinkingFlag},
		Unsupported: "no built-in parser for Granite's <|tool_call|> JSON list (SGLang has none), and the chat template does not render assistant tool calls",
		Template:    []string{"<|start_of_role|>", "<|tool_call|>"}, Tokens: []string{"<|start_of_role|>"}},
}
