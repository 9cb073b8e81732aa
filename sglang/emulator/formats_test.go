package emulator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
)

// TestRenderCallsRoundTrip: what the emulator writes in each tool-call format parses with the built-in parser of
// that name, calls intact; each malformed variant becomes an error result, never a call.
func TestRenderCallsRoundTrip(t *testing.T) {
	cs := []call{
		{name: "calculator", args: []kv{{"expression", "(3+4)/2"}}},
		{name: "search", args: []kv{{"query", "weather in Paris"}, {"topn", 3}, {"exact", true}}},
	}
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatSeedOSS, FormatMiniMaxM2, FormatKimiK2, FormatGLM45, FormatGLM47,
		FormatDeepSeekV3, FormatDeepSeekV31, FormatMistral, FormatMistralV11, FormatMistralNemo, FormatGPTOSS, FormatPythonic} {
		t.Run(format, func(t *testing.T) {
			p, err := parsers.New(formatParser(format))
			if err != nil {
				t.Fatal(err)
			}
			n := len(cs)
			if format == FormatGPTOSS {
				n = 1 // the model stops on the call's <|call|>: one call per turn
			}
			cs := cs[:n]
			text := renderCalls(format, cs, -1)
			r := p.Parse(text, nil)
			if len(r.Errors) != 0 || len(r.Calls) != len(cs) {
				t.Fatalf("%q parsed to %d calls, errors %+v", text, len(r.Calls), r.Errors)
			}
			for i, c := range cs {
				got := r.Calls[i]
				var args map[string]any
				if err := json.Unmarshal(got.Arguments, &args); err != nil {
					t.Fatalf("call %d arguments %s: %v", i, got.Arguments, err)
				}
				if got.Name != c.name || len(args) != len(c.args) {
					t.Fatalf("call %d = %s%s, want %s with %d arguments", i, got.Name, got.Arguments, c.name, len(c.args))
				}
				for _, a := range c.args {
					// With no tool specs the XML formats keep values as text; the text must be the value's.
					v := args[a.k]
					gotJSON, _ := json.Marshal(v)
					wantJSON, _ := json.Marshal(a.v)
					if string(gotJSON) != string(wantJSON) && v != valueText(a.v, false) {
						t.Errorf("call %d %s = %#v, want %#v", i, a.k, v, a.v)
					}
				}
			}
			for malformed := 0; malformed < 2; malformed++ {
				text := renderCalls(format, cs[:1], malformed)
				r := p.Parse(text, nil)
				if len(r.Calls) != 0 || len(r.Errors) != 1 {
					t.Errorf("malformed %d: %q gave calls %d, errors %+v; want one error", malformed, text, len(r.Calls), r.Errors)
				}
			}
		})
	}
}

// formatParser is the name of the built-in parser that reads a tool-call format: the format's own name, but for
// mistral_nemo and mistral_v11 (SGLang's mistral parser reads every Mistral layout).
func formatParser(format string) string {
	if format == FormatMistralNemo || format == FormatMistralV11 {
		return FormatMistral
	}
	return format
}

// parseWithParser reads a reply's calls with the built-in parser of the format (the formats parseCalls has no
// regexp for); a malformed call is an error.
func parseWithParser(format, text string) ([]parsedCall, error) {
	p, err := parsers.New(formatParser(format))
	if err != nil {
		return nil, err
	}
	r := p.Parse(text, nil)
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("%s: %s in %q", r.Errors[0].Reason, r.Errors[0].Message, text)
	}
	var out []parsedCall
	for _, c := range r.Calls {
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, err
		}
		out = append(out, parsedCall{c.Name, args})
	}
	return out, nil
}

// TestMistralNemoEpisode: with Nemo's own vocabulary and a prompt as its template renders it, the agentic policy
// calls the calculator from the [AVAILABLE_TOOLS] list in Nemo's list form, each call with a 9-character id that
// the mistral parser keeps, reads the [TOOL_RESULTS] that answer them and then answers; the control tokens are
// single ids of the reply, which ends with </s>.
func TestMistralNemoEpisode(t *testing.T) {
	m := nemo(t)
	const toolsCallsID, toolResults = 9, "[TOOL_RESULTS]"
	p, err := parsers.New(FormatMistral)
	if err != nil {
		t.Fatal(err)
	}
	alnum9 := regexp.MustCompile(`^[A-Za-z0-9]{9}$`)
	tools := `[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "calculator", "description": "Evaluate "2 + 3" and the like.", ` +
		`"parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}][/AVAILABLE_TOOLS]`
	for seed := uint64(0); seed < 6; seed++ {
		cfg := testConfig(m)
		cfg.ToolFormat, cfg.Seed = FormatMistralNemo, seed
		_, url := start(t, cfg, m.Tokenizer)
		ids := m.Tokenizer.Encode("<s>"+tools+"[INST]You are careful.\n\n"+threeExprTask+"[/INST]", false)
		var called []string
		seen := map[string]bool{}
		final := ""
		for turn := 0; turn < 6 && final == ""; turn++ {
			g := generate(t, url, map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 1024, "skip_special_tokens": false}})
			g.Text = strings.TrimSuffix(g.Text, "</s>") // with skip_special_tokens false the text keeps the stop token
			if last := g.OutputIDs[len(g.OutputIDs)-1]; last != 2 {
				t.Fatalf("seed %d turn %d: output ends with %d, want </s> (2)", seed, turn, last)
			}
			r := p.Parse(g.Text, nil)
			if len(r.Errors) > 0 {
				t.Fatalf("seed %d turn %d: %q: %+v", seed, turn, g.Text, r.Errors)
			}
			if len(r.Calls) == 0 {
				final = g.Text
				break
			}
			if g.OutputIDs[0] != toolsCallsID || !strings.HasPrefix(g.Text, "[TOOL_CALLS][{") {
				t.Fatalf("seed %d turn %d: %q (ids %v) is not Nemo's list form", seed, turn, g.Text, g.OutputIDs[:3])
			}
			var results strings.Builder
			for _, c := range r.Calls {
				var args struct{ Expression string }
				if err := json.Unmarshal(c.Arguments, &args); err != nil || c.Name != "calculator" {
					t.Fatalf("seed %d turn %d: call %s%s", seed, turn, c.Name, c.Arguments)
				}
				if !alnum9.MatchString(c.ID) || seen[c.ID] {
					t.Fatalf("seed %d turn %d: call id %q (ids so far %v)", seed, turn, c.ID, seen)
				}
				seen[c.ID] = true
				v, err := eval(args.Expression)
				if err != nil {
					t.Fatal(err)
				}
				called = append(called, args.Expression)
				fmt.Fprintf(&results, `%s{"content": %v, "call_id": "%s"}[/TOOL_RESULTS]`, toolResults, v, c.ID)
			}
			ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(results.String(), false)...)
		}
		if !slices.Equal(called, []string{"12*7", "(3+4)/2", "100-58"}) || !strings.Contains(final, "12*7 = 84") ||
			!strings.HasSuffix(final, "The answer is 42.") {
			t.Errorf("seed %d: called %v, final answer %q", seed, called, final)
		}
	}
}

// TestKimiK2Calls: kimi_k2 calls are written as Kimi K2's chat template writes them (SGLang's KimiK2Detector
// reads the same): one section, each call's id functions.NAME:N with N counting on from the conversation's earlier
// calls, the arguments as json.dumps writes them.
func TestKimiK2Calls(t *testing.T) {
	cs := []call{{name: "calculator", args: []kv{{"expression", "12*7"}}, prior: 2}, {name: "calculator", args: []kv{{"expression", "1+1"}}, prior: 2}}
	want := `<|tool_calls_section_begin|><|tool_call_begin|>functions.calculator:2<|tool_call_argument_begin|>{"expression": "12*7"}<|tool_call_end|>` +
		`<|tool_call_begin|>functions.calculator:3<|tool_call_argument_begin|>{"expression": "1+1"}<|tool_call_end|><|tool_calls_section_end|>`
	if got := renderCalls(FormatKimiK2, cs, -1); got != want {
		t.Errorf("kimi_k2 calls:\n got %s\nwant %s", got, want)
	}
	// the agentic policy counts the calls of earlier turns
	s := &Server{cfg: Config{ToolFormat: FormatKimiK2}}
	prompt := familyLayouts[0].first("What is 12*7 and 1+1?") + "<|tool_calls_section_begin|><|tool_call_begin|>functions.calculator:0" +
		`<|tool_call_argument_begin|>{"expression": "12*7"}<|tool_call_end|><|tool_calls_section_end|>` + familyLayouts[0].after([]string{"84"})
	if got := s.agentic(parseConversation(prompt, nil), rand.New(rand.NewPCG(1, 2))); !strings.Contains(got, "functions.calculator:1<|tool_call_argument_begin|>") {
		t.Errorf("second turn's call %q, want id functions.calculator:1", got)
	}
	cfg := DefaultConfig()
	cfg.ToolFormat = FormatKimiK2
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	cfg.ToolFormat = "kimi-k2"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `"kimi_k2"`) {
		t.Errorf("tool_format kimi-k2: %v, want an error listing \"kimi_k2\"", err)
	}
}

// TestGLMAndMistralV11Calls: glm45, glm47 and mistral_v11 calls are written as the GLM-4.6, GLM-4.7 and Mistral
// Small 3.2 chat templates render them (string values raw, others as JSON; Small 3.2 with each call's id), and a
// reply to a GLM prompt starts as GLM-4.5/4.6 do (a newline) and ends on the stop that begins the next message.
func TestGLMAndMistralV11Calls(t *testing.T) {
	cs := []call{{name: "calculator", args: []kv{{"expression", "2 + 3"}}, id: "Abc123Def"},
		{name: "calculator", args: []kv{{"expression", "4*4"}, {"n", 3}}, id: "Xbc123Def"}}
	for _, tc := range []struct{ format, want string }{
		{FormatGLM45, "\n<tool_call>calculator\n<arg_key>expression</arg_key>\n<arg_value>2 + 3</arg_value>\n</tool_call>" +
			"\n<tool_call>calculator\n<arg_key>expression</arg_key>\n<arg_value>4*4</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"},
		{FormatGLM47, "<tool_call>calculator<arg_key>expression</arg_key><arg_value>2 + 3</arg_value></tool_call>" +
			"<tool_call>calculator<arg_key>expression</arg_key><arg_value>4*4</arg_value><arg_key>n</arg_key><arg_value>3</arg_value></tool_call>"},
		{FormatMistralV11, `[TOOL_CALLS]calculator[CALL_ID]Abc123Def[ARGS]{"expression": "2 + 3"}[TOOL_CALLS]calculator[CALL_ID]Xbc123Def[ARGS]{"expression": "4*4", "n": 3}`},
	} {
		if got := renderCalls(tc.format, cs, -1); got != tc.want {
			t.Errorf("%s calls:\n got %q\nwant %q", tc.format, got, tc.want)
		}
	}
	for _, tc := range []struct {
		format   string
		calling  bool
		in, want string
	}{
		{FormatGLM45, true, "\n<tool_call>f\n</tool_call>", "\n<tool_call>f\n</tool_call><|observation|>"},
		{FormatGLM45, false, "It is 5.", "\nIt is 5.<|user|>"},
		{FormatGLM47, false, "It is 5.", "It is 5.<|user|>"},
		{FormatGLM45, false, "<think>Easy.</think>It is 5.", "\n<think>Easy.</think>\nIt is 5.<|user|>"},
		{FormatGLM45, true, "<think>Easy.</think>\n<tool_call>f\n</tool_call>", "\n<think>Easy.</think>\n<tool_call>f\n</tool_call><|observation|>"},
	} {
		if got := glmTurn(tc.in, tc.format, tc.calling); got != tc.want {
			t.Errorf("glmTurn(%q, %s, %v) = %q, want %q", tc.in, tc.format, tc.calling, got, tc.want)
		}
	}
}

// The layouts below are written as the families' reference chat templates render a system prompt, the
// calculator and a task (tito/testdata/families; TestFamilyEpisodes in runtime runs them on the real templates),
// and what the agent loop appends after a turn: the turn's end, the tool results and the generation prompt.
var familyLayouts = []struct {
	name, format, layout string
	first                func(task string) string
	after                func(results []string) string
	// ends are the texts a reply ends with after calls and after an answer (GLM's stops that begin the next
	// message, which the agent keeps); "" for the families whose stop is the EOS the emulator appends.
	ends [2]string
}{
	{"kimi-k2", FormatKimiK2, chatKimi,
		func(task string) string {
			return "<|im_system|>tool_declare<|im_middle|>[" + calcToolJSON + "]<|im_end|><|im_system|>system<|im_middle|>Be careful.<|im_end|>" +
				"<|im_user|>user<|im_middle|>" + task + "<|im_end|><|im_assistant|>assistant<|im_middle|>"
		},
		func(results []string) string {
			s := "<|im_end|>"
			for i, r := range results {
				s += fmt.Sprintf(`<|im_system|>tool<|im_middle|>## Return of call_%04d\n%s<|im_end|>`, i, r) // `\n`: two characters, as the template writes it
			}
			return s + "<|im_assistant|>assistant<|im_middle|>"
		}, [2]string{}},
	{"minimax-m2", FormatMiniMaxM2, chatMiniMax,
		func(task string) string {
			var fn struct{ Function json.RawMessage }
			_ = json.Unmarshal([]byte(calcToolJSON), &fn)
			return "]~!b[]~b]system\nBe careful.\n\n# Tools\nYou may call one or more tools to assist with the user query.\nHere are the tools available in JSONSchema format:\n" +
				"\n<tools>\n<tool>" + string(fn.Function) + "</tool>\n</tools>\n\nWhen making tool calls, use XML format to invoke tools and pass parameters:\n" +
				"\n<minimax:tool_call>\n<invoke name=\"tool-name-1\">\n<parameter name=\"param-key-1\">param-value-1</parameter>\n...\n</invoke>\n</minimax:tool_call>[e~[\n" +
				"]~b]user\n" + task + "[e~[\n]~b]ai\n<think>\n"
		},
		func(results []string) string {
			s := "[e~[\n]~b]tool"
			for _, r := range results {
				s += "\n<response>" + r + "</response>"
			}
			return s + "[e~[\n]~b]ai\n<think>\n"
		}, [2]string{}},
	{"seed-oss", FormatSeedOSS, chatSeed,
		func(task string) string {
			return "<seed:bos>system\nBe careful.\n\nFunction:\ndef calculator(expression: str):\n    \"\"\"\n    Evaluate an arithmetic expression\n\n    Args:\n" +
				"    - expression (str) [必填]: e.g. 2 + 2\n\n    \"\"\"\n工具调用请遵循如下格式:\n<seed:tool_call>\n<function=example_function_name>\n" +
				"<parameter=example_parameter_1>value_1</parameter>\n</function>\n</seed:tool_call>\n<seed:eos><seed:bos>user\n" + task + "<seed:eos><seed:bos>assistant\n"
		},
		func(results []string) string {
			s := "<seed:eos>"
			for _, r := range results {
				s += "<seed:bos>tool\n" + r + "<seed:eos>"
			}
			return s + "<seed:bos>assistant\n"
		}, [2]string{}},
	{"glm-4.6", FormatGLM45, chatGLM,
		func(task string) string {
			return "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
				"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + calcToolJSON + "\n</tools>\n\n" +
				"For each function call, output the function name and arguments within the following XML format:\n<tool_call>{function-name}\n" +
				"<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n...\n</tool_call><|system|>\nBe careful.<|user|>\n" + task +
				"/nothink<|assistant|>\n<think></think>"
		},
		func(results []string) string {
			s := "" // the reply ended on <|observation|>, the tool message's start
			for _, r := range results {
				s += "\n<tool_response>\n" + r + "\n</tool_response>"
			}
			return s + "<|assistant|>\n<think></think>"
		}, [2]string{"<|observation|>", "<|user|>"}},
	{"glm-4.7-flash", FormatGLM47, chatGLM, // thinking on: the generation prompt opens <think>
		func(task string) string {
			return "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
				"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + calcToolJSON + "\n</tools>\n\n" +
				"For each function call, output the function name and arguments within the following XML format:\n<tool_call>{function-name}" +
				"<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value>...</tool_call><|system|>Be careful.<|user|>" + task + "<|assistant|><think>"
		},
		func(results []string) string {
			s := ""
			for _, r := range results {
				s += "<tool_response>" + r + "</tool_response>"
			}
			return s + "<|assistant|><think>"
		}, [2]string{"<|observation|>", "<|user|>"}},
	{"mistral-small-3.2", FormatMistralV11, chatMistral,
		func(task string) string {
			return "<s>[SYSTEM_PROMPT]Be careful.[/SYSTEM_PROMPT][AVAILABLE_TOOLS][" + calcToolJSON + "][/AVAILABLE_TOOLS][INST]" + task + "[/INST]"
		},
		func(results []string) string {
			s := "</s>"
			for _, r := range results {
				s += "[TOOL_RESULTS]abcDEF123[TOOL_CONTENT]" + r + "[/TOOL_RESULTS]"
			}
			return s
		}, [2]string{}},
	{"devstral-small", FormatMistral, chatMistral,
		func(task string) string {
			return "<s>[SYSTEM_PROMPT]Be careful.[/SYSTEM_PROMPT][AVAILABLE_TOOLS][" + calcToolJSON + "][/AVAILABLE_TOOLS][INST]" + task + "[/INST]"
		},
		func(results []string) string {
			s := "</s>"
			for _, r := range results {
				s += "[TOOL_RESULTS]" + r + "[/TOOL_RESULTS]"
			}
			return s
		}, [2]string{}},
}

// TestAgenticFamilyLayouts: on prompts in Kimi K2's, MiniMax-M2's, Seed-OSS's, GLM's and Mistral Small 3.2's and
// Devstral's layouts the agentic policy finds the calculator, calls it in the family's format (read back by the
// family's parser) for each expression, reads the results the loop appends and answers with them. MiniMax-M2's
// and GLM-4.7's (thinking) generation prompts open <think>: every reply reasons, then closes it. A GLM reply ends
// on <|observation|> after calls and on <|user|> after an answer.
func TestAgenticFamilyLayouts(t *testing.T) {
	for _, fl := range familyLayouts {
		t.Run(fl.name, func(t *testing.T) {
			parallel := false
			for seed := uint64(0); seed < 8; seed++ {
				cfg := DefaultConfig()
				cfg.ToolFormat, cfg.Seed = fl.format, seed
				s := &Server{cfg: cfg}
				prompt := fl.first(threeExprTask)
				var called []string
				final := ""
				for turn := 0; turn < 6 && final == ""; turn++ {
					c := parseConversation(prompt, nil)
					if c.format != fl.layout || c.task() != threeExprTask || len(c.tools) != 1 || c.tools[0].Name != "calculator" {
						t.Fatalf("seed %d turn %d: layout %s, task %q, tools %+v", seed, turn, c.format, c.task(), c.tools)
					}
					reply := s.agentic(c, rand.New(rand.NewPCG(seed, uint64(turn))))
					if strings.HasSuffix(c.open.content, "<think>\n") || strings.HasSuffix(c.open.content, "<think>") {
						if !strings.Contains(reply, ".\n</think>\n\n") && !strings.Contains(reply, ".</think>") { // GLM's: as its template writes it back
							t.Fatalf("seed %d turn %d: %q does not close the think block the prompt opened", seed, turn, reply)
						}
					}
					calls, err := parseWithParser(fl.format, reply)
					if err != nil {
						t.Fatalf("seed %d turn %d: %v", seed, turn, err)
					}
					end := fl.ends[1] // after an answer
					if len(calls) > 0 {
						end = fl.ends[0]
					}
					if !strings.HasSuffix(reply, end) {
						t.Fatalf("seed %d turn %d: %q does not end with %q", seed, turn, reply, end)
					}
					if len(calls) == 0 {
						final = strings.TrimSuffix(reply, end)
						break
					}
					parallel = parallel || len(calls) > 1
					var results []string
					for _, cl := range calls {
						e, _ := cl.Args["expression"].(string)
						v, err := eval(e)
						if cl.Name != "calculator" || err != nil {
							t.Fatalf("seed %d turn %d: call %+v: %v", seed, turn, cl, err)
						}
						called = append(called, e)
						results = append(results, strconv.FormatFloat(v, 'g', -1, 64))
					}
					prompt += reply + fl.after(results)
				}
				if !slices.Equal(called, []string{"12*7", "(3+4)/2", "100-58"}) || !strings.Contains(final, "(3+4)/2 = 3.5") ||
					!strings.HasSuffix(final, "The answer is 42.") {
					t.Errorf("seed %d: called %v, final answer %q", seed, called, final)
				}
			}
			if !parallel {
				t.Error("no seed made parallel calls")
			}
		})
	}
}
