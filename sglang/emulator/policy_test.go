package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A tool call as a client's parser sees it.
type parsedCall struct {
	Name string
	Args map[string]any
}

var (
	hermesRe = regexp.MustCompile(`(?s)<tool_call>\n(.*?)\n</tool_call>`)
	coderRe  = regexp.MustCompile(`(?s)<tool_call>\n<function=([^>\n]+)>\n(.*?)</function>\n</tool_call>`)
	paramRe  = regexp.MustCompile(`(?s)<parameter=([^>\n]+)>\n(.*?)\n</parameter>`)
)

// parseCalls parses a completion the way SGLang's detectors do for the three formats (strict: a malformed
// call gives an error).
func parseCalls(format, text string) ([]parsedCall, error) {
	if _, after, ok := strings.Cut(text, "</think>"); ok {
		text = after
	}
	var out []parsedCall
	switch format {
	case FormatHermes:
		if strings.Count(text, "<tool_call>") != len(hermesRe.FindAllString(text, -1)) {
			return nil, fmt.Errorf("unclosed <tool_call> in %q", text)
		}
		for _, m := range hermesRe.FindAllStringSubmatch(text, -1) {
			var c struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(m[1]), &c); err != nil {
				return nil, fmt.Errorf("bad JSON %q: %w", m[1], err)
			}
			out = append(out, parsedCall{c.Name, c.Arguments})
		}
	case FormatQwen3Coder:
		if strings.Count(text, "<tool_call>") != len(coderRe.FindAllString(text, -1)) {
			return nil, fmt.Errorf("malformed <tool_call> in %q", text)
		}
		for _, m := range coderRe.FindAllStringSubmatch(text, -1) {
			c := parsedCall{Name: m[1], Args: map[string]any{}}
			for _, p := range paramRe.FindAllStringSubmatch(m[2], -1) {
				c.Args[p[1]] = p[2]
			}
			out = append(out, c)
		}
	case FormatSeedOSS, FormatMiniMaxM2, FormatKimiK2, FormatGLM45, FormatGLM47, FormatDeepSeekV3, FormatDeepSeekV31, FormatMistral, FormatMistralV11,
		FormatMistralNemo, FormatGPTOSS, FormatPythonic:
		return parseWithParser(format, text)
	case FormatLlama3:
		t := strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>")
		if !strings.HasPrefix(t, "{") {
			return nil, nil
		}
		for _, part := range strings.Split(t, "; ") {
			var c struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			}
			if err := json.Unmarshal([]byte(part), &c); err != nil {
				return nil, fmt.Errorf("bad JSON %q: %w", part, err)
			}
			out = append(out, parsedCall{c.Name, c.Parameters})
		}
	}
	return out, nil
}

// eval evaluates + - * / and parentheses: the test's calculator tool.
func eval(s string) (float64, error) {
	p := &exprParser{s: strings.ReplaceAll(s, " ", "")}
	v, err := p.sum()
	if err == nil && p.i != len(p.s) {
		err = fmt.Errorf("trailing %q", p.s[p.i:])
	}
	return v, err
}

type exprParser struct {
	s string
	i int
}

func (p *exprParser) sum() (float64, error) {
	v, err := p.product()
	for err == nil && p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
		op := p.s[p.i]
		p.i++
		var w float64
		if w, err = p.product(); op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (p *exprParser) product() (float64, error) {
	v, err := p.atom()
	for err == nil && p.i < len(p.s) && (p.s[p.i] == '*' || p.s[p.i] == '/') {
		op := p.s[p.i]
		p.i++
		var w float64
		if w, err = p.atom(); op == '*' {
			v *= w
		} else {
			v /= w
		}
	}
	return v, err
}

func (p *exprParser) atom() (float64, error) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		v, err := p.sum()
		if err != nil || p.i >= len(p.s) || p.s[p.i] != ')' {
			return 0, fmt.Errorf("unbalanced parentheses in %q", p.s)
		}
		p.i++
		return v, nil
	}
	j := p.i
	if j < len(p.s) && p.s[j] == '-' {
		j++
	}
	for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '.') {
		j++
	}
	v, err := strconv.ParseFloat(p.s[p.i:j], 64)
	p.i = j
	return v, err
}

type episode struct {
	turns      int
	callsPer   []int
	final      string
	exprs      []string
	results    []string
	requests   [][]int32
	lastOutput []int32
}

// runEpisode drives a tool-using episode against the emulator the way a TITO client does: append output_ids
// verbatim, then the template glue and the tool results. A non-empty episodeID is sent as rid
// "<episodeID>.<turn>", the way agentrt names its requests.
func runEpisode(t *testing.T, url string, m *testModel, format, task, episodeID string) episode {
	t.Helper()
	var ids []int32
	if format == FormatLlama3 {
		ids = m.Tokenizer.Encode(llamaPrompt(task, calcToolJSON), false)
	} else {
		ids = qwenIDs(m, task, calcToolJSON)
	}
	var ep episode
	for turn := 0; turn < 8; turn++ {
		ep.requests = append(ep.requests, ids)
		body := map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 1024}}
		if episodeID != "" {
			body["rid"] = fmt.Sprintf("%s.%d", episodeID, turn)
		}
		g := generate(t, url, body)
		if last := g.OutputIDs[len(g.OutputIDs)-1]; last != m.StopIDs[0] {
			t.Fatalf("turn %d: output ends with %d, want %d", turn, last, m.StopIDs[0])
		}
		ep.lastOutput = g.OutputIDs
		calls, err := parseCalls(format, g.Text)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		ep.turns++
		if len(calls) == 0 {
			ep.final = g.Text
			return ep
		}
		ep.callsPer = append(ep.callsPer, len(calls))
		var results []string
		for _, c := range calls {
			if c.Name != "calculator" {
				t.Fatalf("turn %d: call to %q", turn, c.Name)
			}
			e, _ := c.Args["expression"].(string)
			v, err := eval(e)
			if err != nil {
				t.Fatalf("turn %d: expression %q: %v", turn, e, err)
			}
			r := strconv.FormatFloat(v, 'g', -1, 64)
			ep.exprs = append(ep.exprs, e)
			ep.results = append(ep.results, r)
			results = append(results, r)
		}
		ids = append(slices.Clone(ids), g.OutputIDs...)
		if format == FormatLlama3 {
			ids = append(ids, m.Tokenizer.Encode(llamaToolTurn(results[0]), false)...)
		} else {
			ids = append(ids, m.Tokenizer.Encode(qwenToolTurn(results...), false)...)
		}
	}
	t.Fatal("no final answer after 8 turns")
	return ep
}

func TestAgenticFormats(t *testing.T) {
	task := "Compute 12*7, then (3+4)/2 and 100-58 for me."
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatLlama3, FormatSeedOSS, FormatMiniMaxM2, FormatKimiK2, FormatGLM45, FormatGLM47,
		FormatDeepSeekV3, FormatDeepSeekV31, FormatMistral, FormatMistralV11, FormatMistralNemo, FormatGPTOSS, FormatPythonic} {
		t.Run(format, func(t *testing.T) {
			m := qwen(t)
			if format == FormatLlama3 {
				m = llama(t)
			}
			parallel, sequential := false, false
			for seed := uint64(0); seed < 12; seed++ {
				cfg := testConfig(m)
				cfg.ToolFormat = format
				cfg.Seed = seed
				_, url := start(t, cfg, m.Tokenizer)
				ep := runEpisode(t, url, m, format, task, "")
				if !slices.Equal(ep.exprs, []string{"12*7", "(3+4)/2", "100-58"}) {
					t.Fatalf("seed %d: called with %v", seed, ep.exprs)
				}
				for i, e := range ep.exprs {
					if want := e + " = " + ep.results[i]; !strings.Contains(ep.final, want) {
						t.Errorf("seed %d: final answer %q lacks %q", seed, ep.final, want)
					}
				}
				if !strings.Contains(ep.final, "The answer is 42.") {
					t.Errorf("seed %d: final answer %q", seed, ep.final)
				}
				parallel = parallel || slices.Max(ep.callsPer) > 1
				sequential = sequential || len(ep.callsPer) > 1
			}
			oneCall := format == FormatLlama3 || format == FormatGPTOSS
			if oneCall && parallel {
				t.Errorf("%s: more than one call in a turn (the template allows one)", format)
			}
			if !oneCall && !parallel {
				t.Error("no seed made parallel calls")
			}
			if !sequential {
				t.Error("no seed spread the calls over several turns")
			}
		})
	}
}

func TestAgenticOtherToolsAndPlain(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	ids := qwenIDs(m, "What is the weather in Paris?", weatherTool)
	g := generate(t, url, map[string]any{"input_ids": ids})
	calls, err := parseCalls(FormatHermes, g.Text)
	if err != nil || len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] == nil {
		t.Fatalf("weather call: %q %v", g.Text, err)
	}
	ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn(`{"result": "sunny, 21C"}`), false)...)
	g = generate(t, url, map[string]any{"input_ids": ids})
	if !strings.Contains(g.Text, "sunny, 21C") {
		t.Errorf("final answer %q does not use the tool result", g.Text)
	}
	g = generate(t, url, map[string]any{"input_ids": qwenIDs(m, "Say hello.")})
	if calls, _ := parseCalls(FormatHermes, g.Text); len(calls) != 0 || g.Text == "" {
		t.Errorf("no tools: %q", g.Text)
	}
}

func TestAgenticThink(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.ThinkRate = 1
	_, url := start(t, cfg, m.Tokenizer)
	g := generate(t, url, map[string]any{"input_ids": qwenIDs(m, "What is 6*7?", calcToolJSON)})
	if !strings.HasPrefix(g.Text, "<think>\n") || !strings.Contains(g.Text, "\n</think>\n\n<tool_call>") {
		t.Errorf("think: %q", g.Text)
	}
	if calls, err := parseCalls(FormatHermes, g.Text); err != nil || len(calls) != 1 {
		t.Errorf("think then call: %v %v", calls, err)
	}
	// think_words pads the block
	cfg.ThinkWords = 500
	_, url2 := start(t, cfg, m.Tokenizer)
	long := generate(t, url2, map[string]any{"input_ids": qwenIDs(m, "What is 6*7?", calcToolJSON), "sampling_params": map[string]any{"max_new_tokens": 4096}})
	if len(long.OutputIDs) < 500 || !strings.HasPrefix(long.Text, "<think>\n") {
		t.Errorf("think_words 500: %d ids", len(long.OutputIDs))
	}
	// a generation prompt that already closed the think block (enable_thinking=false) gets none
	p := strings.TrimSuffix(qwenPrompt("x", "What is 6*7?", calcToolJSON), "") + "<think>\n\n</think>\n\n"
	g = generate(t, url, map[string]any{"input_ids": m.Tokenizer.Encode(p, false)})
	if strings.Contains(g.Text, "<think>") {
		t.Errorf("think after a closed think block: %q", g.Text)
	}
	// one the generation prompt opened (QwQ) is reasoned in and closed, not opened a second time
	p = qwenPrompt("x", "What is 6*7?", calcToolJSON) + "<think>\n"
	g = generate(t, url, map[string]any{"input_ids": m.Tokenizer.Encode(p, false)})
	if strings.Contains(g.Text, "<think>") || !strings.Contains(g.Text, "\n</think>\n\n<tool_call>") {
		t.Errorf("think after an opened think block: %q", g.Text)
	}
	// DeepSeek prompts (R1 with SGLang's V3 tool template) reason too
	cfg.ThinkWords, cfg.ToolFormat = 0, FormatDeepSeekV3
	s := &Server{cfg: cfg}
	ds := "<｜begin▁of▁sentence｜>Be careful.\n\n## Tools\n\n### Function\n\nYou have the following functions available:\n\n- `calculator`:\n```json\n" +
		calcToolJSON + "\n```<｜User｜>What is 6*7?<｜Assistant｜>"
	if got := s.agentic(parseConversation(ds, nil), rand.New(rand.NewPCG(1, 2))); !strings.HasPrefix(got, "<think>\n") ||
		!strings.Contains(got, "\n</think>\n\n<｜tool▁calls▁begin｜>") {
		t.Errorf("think on a DeepSeek prompt: %q", got)
	}
}

func TestAgenticMalformed(t *testing.T) {
	m := qwen(t)
	for _, format := range []string{FormatHermes, FormatQwen3Coder} {
		kinds := map[string]bool{}
		for seed := uint64(0); seed < 24; seed++ {
			cfg := testConfig(m)
			cfg.ToolFormat, cfg.Seed, cfg.MalformedRate = format, seed, 1
			_, url := start(t, cfg, m.Tokenizer)
			g := generate(t, url, map[string]any{"input_ids": qwenIDs(m, "What is 6*7?", calcToolJSON)})
			calls, err := parseCalls(format, g.Text)
			switch {
			case err != nil && strings.Contains(err.Error(), "bad JSON"):
				kinds["json"] = true
			case err != nil:
				kinds["tag"] = true
			case len(calls) == 1 && calls[0].Name == UnknownToolName:
				kinds["unknown"] = true
			case len(calls) == 1 && len(calls[0].Args) == 0:
				kinds["no arguments"] = true
			default:
				t.Errorf("%s seed %d: a well-formed call at malformed rate 1: %q", format, seed, g.Text)
			}
		}
		if len(kinds) < 3 || !kinds["unknown"] || !kinds["no arguments"] {
			t.Errorf("%s: malformed kinds seen: %v", format, kinds)
		}
	}
}

// TestAgenticErrorResult: an error result (a malformed call's parse error quotes the call) is reported as a
// failure, never quoted: an answer holding a tool-call tag would be parsed as another call.
func TestAgenticErrorResult(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	errResult := "Error: the tool call could not be parsed (unclosed_tag): <tool_call> is never closed by </tool_call>\nThe call was: <tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}"
	for _, tc := range []struct{ task, tool, want string }{
		{"What is 6*7?", calcToolJSON, "6*7 could not be computed.\nI could not get a result from the calculator."},
		{"What is the weather in Paris?", weatherTool, "The tool failed, so I cannot answer."},
	} {
		ids := qwenIDs(m, tc.task, tc.tool)
		g := generate(t, url, map[string]any{"input_ids": ids})
		if calls, err := parseCalls(FormatHermes, g.Text); err != nil || len(calls) != 1 {
			t.Fatalf("%q: first turn %q: %v", tc.task, g.Text, err)
		}
		ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn(errResult), false)...)
		g = generate(t, url, map[string]any{"input_ids": ids})
		if g.Text != tc.want {
			t.Errorf("%q: answer after an error result %q, want %q", tc.task, g.Text, tc.want)
		}
	}
}

func TestScripted(t *testing.T) {
	m := qwen(t)
	task := "Plain task without a marker."
	script := fmt.Sprintf(`# comment
{"key": "demo", "replies": ["<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+1\"}}\n</tool_call>", "It is 2."]}
{"key": %q, "replies": ["keyed by hash"]}
{"key": "*", "replies": ["fallback"]}
`, ScriptKey(task))
	sc, err := ParseScript(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(m)
	cfg.Policy = PolicyScripted
	_, url := start(t, cfg, m.Tokenizer, WithScript(sc))

	ids := qwenIDs(m, "[script:demo] add one and one", calcToolJSON)
	g := generate(t, url, map[string]any{"input_ids": ids})
	if calls, _ := parseCalls(FormatHermes, g.Text); len(calls) != 1 || calls[0].Args["expression"] != "1+1" {
		t.Errorf("turn 0: %q", g.Text)
	}
	ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn("2"), false)...)
	if g := generate(t, url, map[string]any{"input_ids": ids}); g.Text != "It is 2." {
		t.Errorf("turn 1: %q", g.Text)
	}
	ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode("\n<|im_start|>user\nmore?<|im_end|>\n<|im_start|>assistant\n", false)...)
	if g := generate(t, url, map[string]any{"input_ids": ids}); g.Text != NoScriptReply {
		t.Errorf("turn 2 (past the script): %q", g.Text)
	}
	if g := generate(t, url, map[string]any{"input_ids": qwenIDs(m, task)}); g.Text != "keyed by hash" {
		t.Errorf("hash key: %q", g.Text)
	}
	if g := generate(t, url, map[string]any{"input_ids": qwenIDs(m, "anything else")}); g.Text != "fallback" {
		t.Errorf("fallback: %q", g.Text)
	}
	for _, bad := range []string{`{"key": "a"}`, `not json`, `{"key": "a", "replies": ["x"]}` + "\n" + `{"key": "a", "replies": ["y"]}`, `{"key": "a", "replies": ["x"], "extra": 1}`} {
		if _, err := ParseScript(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("ParseScript(%q): %v", bad, err)
		}
	}
}

// TestScriptedTurnMarker: a conversation whose older turns were dropped (an agent's compaction) goes on after the
// last [turn:N] marker of its assistant messages, not at its count of assistant messages.
func TestScriptedTurnMarker(t *testing.T) {
	m := qwen(t)
	replies := make([]string, 8)
	for i := range replies {
		replies[i] = fmt.Sprintf("[turn:%d] reply %d", i, i)
	}
	line, _ := json.Marshal(map[string]any{"key": "long", "replies": replies})
	sc, err := ParseScript(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(m)
	cfg.Policy = PolicyScripted
	_, url := start(t, cfg, m.Tokenizer, WithScript(sc))
	base := qwenPrompt("You are a helpful assistant.", "[script:long] go on")
	tests := []struct {
		name, history, want string
	}{
		{"no history", "", "[turn:0] reply 0"},
		{"whole history", "[turn:0] reply 0<|im_end|>" + qwenToolTurn("a") + "[turn:1] reply 1<|im_end|>" + qwenToolTurn("b"), "[turn:2] reply 2"},
		{"turns 0-4 dropped", "[turn:5] reply 5<|im_end|>" + qwenToolTurn("a"), "[turn:6] reply 6"},
		{"an unmarked turn after the marker", "[turn:3] reply 3<|im_end|>" + qwenToolTurn("a") + "no marker<|im_end|>" + qwenToolTurn("b"), "[turn:5] reply 5"},
		{"past the script", "[turn:7] reply 7<|im_end|>" + qwenToolTurn("a"), NoScriptReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := m.Tokenizer.Encode(base+tt.history, false)
			if g := generate(t, url, map[string]any{"input_ids": ids}); g.Text != tt.want {
				t.Errorf("reply %q, want %q", g.Text, tt.want)
			}
		})
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// TestLogPrefixInvariant checks, from the server's log alone, that each turn's input_ids extend the previous
// turn's input_ids + output_ids, and that arrival/completion times are ordered.
func TestLogPrefixInvariant(t *testing.T) {
	m := qwen(t)
	var buf syncBuffer
	cfg := testConfig(m)
	cfg.Seed = 3
	srv, url := start(t, cfg, m.Tokenizer, WithLog(&buf))
	ep := runEpisode(t, url, m, FormatHermes, "Compute 12*7, then (3+4)/2 and 100-58 for me.", "")
	spaced := `{"input_ids": [1, 2], "stream": true, "sampling_params": {"max_new_tokens": 3}}` // the log compacts it
	post(t, url, "/generate", spaced)
	get(t, url, "/health")
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var recs []LogRecord
	sc := bufio.NewScanner(&buf.b)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r LogRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line: %v: %s", err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	if len(recs) != ep.turns+2 {
		t.Fatalf("%d log records, want %d", len(recs), ep.turns+2)
	}
	var prev []int32
	for i, r := range recs[:ep.turns] {
		var req struct {
			InputIDs []int32 `json:"input_ids"`
		}
		var resp struct {
			OutputIDs []int32 `json:"output_ids"`
		}
		if r.Path != "/generate" || r.Status != 200 || r.Seq != uint64(i+1) || json.Unmarshal(r.Request, &req) != nil || json.Unmarshal(r.Response, &resp) != nil {
			t.Fatalf("record %d: %+v", i, r)
		}
		if r.RequestBytes < len(r.Request) {
			t.Errorf("record %d: request_bytes %d is less than the compacted body (%d bytes)", i, r.RequestBytes, len(r.Request))
		}
		if !slices.Equal(req.InputIDs, ep.requests[i]) {
			t.Errorf("record %d: input_ids differ from what the client sent", i)
		}
		if prev != nil && !slices.Equal(req.InputIDs[:len(prev)], prev) {
			t.Errorf("turn %d: the prefix invariant does not hold", i)
		}
		prev = append(slices.Clone(req.InputIDs), resp.OutputIDs...)
		if r.SentNS < r.RecvNS || (i > 0 && r.RecvNS < recs[i-1].SentNS) {
			t.Errorf("record %d: times recv %d sent %d (previous sent %d)", i, r.RecvNS, r.SentNS, recs[i-1].SentNS)
		}
	}
	if !slices.Equal(prev, append(slices.Clone(ep.requests[len(ep.requests)-1]), ep.lastOutput...)) {
		t.Error("the final trajectory is not the last input_ids + output_ids")
	}
	st := recs[ep.turns]
	if st.RequestBytes != len(spaced) {
		t.Errorf("stream record: request_bytes %d, the client sent %d", st.RequestBytes, len(spaced))
	}
	var last map[string]any
	if json.Unmarshal(st.Response, &last) != nil || last["meta_info"].(map[string]any)["finish_reason"] == nil {
		t.Errorf("stream record: the response is not the final event: %s", st.Response)
	}
	if recs[ep.turns+1].Path != "/health" {
		t.Errorf("last record %+v", recs[ep.turns+1])
	}
}

// TestAgenticPythonTool: with a Python tool and no calculator, one call whose code prints each expression,
// then an answer with the last printed value boxed (the path runtime/python_e2e_test.go relies on).
func TestAgenticPythonTool(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	pyTool := `{"type": "function", "function": {"name": "execute_python_code", "description": "Run Python", "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}`
	ids := qwenIDs(m, "Compute 12*7 and (3+4)/2.", pyTool)
	g := generate(t, url, map[string]any{"input_ids": ids})
	calls, err := parseCalls(FormatHermes, g.Text)
	if err != nil || len(calls) != 1 || calls[0].Name != "execute_python_code" || calls[0].Args["code"] != "print(12*7)\nprint((3+4)/2)\n" {
		t.Fatalf("python call: %q %v", g.Text, err)
	}
	next := append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn("84\n3.5"), false)...)
	if g := generate(t, url, map[string]any{"input_ids": next}); g.Text != "12*7 = 84\n(3+4)/2 = 3.5\nThe answer is \\boxed{3.5}." {
		t.Errorf("python answer: %q", g.Text)
	}
	next = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn("Error: NameError"), false)...)
	if g := generate(t, url, map[string]any{"input_ids": next}); strings.Contains(g.Text, "boxed") {
		t.Errorf("failed run: %q", g.Text)
	}
}

// Tools of the agentic policy's tool-choice tests.
const (
	countWordsTool = `{"type": "function", "function": {"name": "count_words", "description": "Count the words of a text.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}`
	forecastTool   = `{"type": "function", "function": {"name": "forecast", "description": "Weather forecast for a city.", "parameters": {"type": "object", "properties": {` +
		`"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "hourly": {"type": "boolean"}}, "required": ["city", "days", "unit"]}}}`
)

// TestAgenticChoosesTool: without arithmetic, the agentic policy calls the tool whose name and description match
// the task (not the first listed), with arguments filled from its schema (required ones, enum values and numbers
// the task names, bounds, a name from the task for a string, the task itself for a text); a task that matches no
// tool is answered without one. The same seed writes the same call.
func TestAgenticChoosesTool(t *testing.T) {
	m := qwen(t)
	tools := []string{forecastTool, countWordsTool, weatherTool}
	tests := []struct {
		task     string
		wantName string
		wantArgs map[string]any // nil: no call
	}{
		{`Count the words in "the quick brown fox"`, "count_words", map[string]any{"text": "the quick brown fox"}},
		{"How many words are in this sentence, please?", "count_words", map[string]any{"text": "How many words are in this sentence, please?"}},
		{"Give me the forecast for Lyon over 3 days in fahrenheit.", "forecast", map[string]any{"city": "Lyon", "days": 3.0, "unit": "fahrenheit"}},
		{"What will the forecast be in Oslo for the next 30 days, in celsius?", "forecast", map[string]any{"city": "Oslo", "days": 7.0, "unit": "celsius"}}, // 30 clamped to maximum 7
		{"What is the weather in Paris?", "get_weather", map[string]any{"city": "Paris"}},
		{"What is 12 * 7?", "", nil}, // no calculator, and no tool about it: answered without a tool
	}
	for _, tt := range tests {
		t.Run(tt.task, func(t *testing.T) {
			cfg := testConfig(m)
			_, url := start(t, cfg, m.Tokenizer)
			body := map[string]any{"input_ids": qwenIDs(m, tt.task, tools...), "sampling_params": map[string]any{"sampling_seed": 7}}
			g := generate(t, url, body)
			calls, err := parseCalls(FormatHermes, g.Text)
			if err != nil {
				t.Fatalf("%q: %v", g.Text, err)
			}
			if tt.wantArgs == nil {
				if len(calls) != 0 {
					t.Fatalf("%q: calls %+v, want an answer without a tool", g.Text, calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].Name != tt.wantName || !reflect.DeepEqual(calls[0].Args, tt.wantArgs) {
				t.Fatalf("%q: calls %+v, want %s(%v)", g.Text, calls, tt.wantName, tt.wantArgs)
			}
			if again := generate(t, url, body); again.Text != g.Text {
				t.Errorf("the same request with the same seed replied %q, then %q", g.Text, again.Text)
			}
		})
	}
}

// TestFillArgs: the values drawn (an enum the task does not name, a boolean) come from the seed's draws; every
// type of the schema gets a value of that type.
func TestFillArgs(t *testing.T) {
	ts := scanTools(forecastTool + `{"type": "function", "function": {"name": "all_types", "parameters": {"type": "object", "properties": {` +
		`"n": {"type": "number", "exclusiveMinimum": 0}, "flags": {"type": "array", "items": {"type": "integer"}}, "opts": {"type": "object"}, "b": {"type": "boolean"}}}}}`)
	if len(ts) != 2 {
		t.Fatalf("tools %+v", ts)
	}
	draws := map[string]bool{}
	for seed := uint64(0); seed < 16; seed++ {
		a := fillArgs(ts[0], "Forecast for Rome", rand.New(rand.NewPCG(seed, 1)))
		b := fillArgs(ts[0], "Forecast for Rome", rand.New(rand.NewPCG(seed, 1)))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		if len(a) != 3 || a[0] != (kv{"city", "Rome"}) || a[1] != (kv{"days", 1}) {
			t.Fatalf("seed %d: %v, want city Rome, days at the minimum 1, a unit", seed, a)
		}
		draws[a[2].v.(string)] = true
	}
	if !draws["celsius"] || !draws["fahrenheit"] {
		t.Errorf("enum values drawn over 16 seeds: %v, want both", draws)
	}
	got := fillArgs(ts[1], "anything with 2.5 in it", rand.New(rand.NewPCG(1, 1)))
	if len(got) != 4 || got[0].k != "n" || got[0].v != 2.5 || !reflect.DeepEqual(got[1].v, []any{1}) || !reflect.DeepEqual(got[2].v, map[string]any{}) {
		t.Errorf("all types: %+v", got)
	}
	if _, ok := got[3].v.(bool); !ok {
		t.Errorf("boolean parameter filled with %v", got[3].v)
	}
}
