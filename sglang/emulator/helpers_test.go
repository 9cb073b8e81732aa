package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daulet/tokenizers"

	"github.com/agentrt/agentrt/internal/testutil"
)

// refDir holds SGLang's wire fixtures, kept in the repository with their source (sglang/testdata/README.md).
const refDir = "../testdata/fixtures"

// hfTokenizer adapts the Hugging Face tokenizers library (the one tito wraps) to Tokenizer. The tests use it
// directly so that they do not depend on the rest of tito.
type hfTokenizer struct {
	tk *tokenizers.Tokenizer
}

func (h *hfTokenizer) Encode(text string, addSpecialTokens bool) []int32 {
	ids, _ := h.tk.Encode(text, addSpecialTokens)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

func (h *hfTokenizer) Decode(ids []int32, skipSpecialTokens bool) string {
	u := make([]uint32, len(ids))
	for i, id := range ids {
		u[i] = uint32(id)
	}
	return h.tk.Decode(u, skipSpecialTokens)
}

// testModel is a real model folder's tokenizer and stop ids.
type testModel struct {
	Tokenizer *hfTokenizer
	StopIDs   []int32
	vocab     int
}

var (
	modelsMu sync.Mutex
	models   = map[string]*testModel{}
)

// loadModel loads the tokenizer of a real model folder named by an environment variable (once per test binary).
func loadModel(t testing.TB, env string, stop []int32) *testModel {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s is not set: run `source ~/.cache/agentrt/env.sh` (make setup downloads the model folders)", env)
	}
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m, ok := models[dir]; ok {
		return m
	}
	tk, err := tokenizers.FromFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	m := &testModel{Tokenizer: &hfTokenizer{tk}, StopIDs: stop, vocab: int(tk.VocabSize())}
	models[dir] = m
	return m
}

// qwen is Qwen3's tokenizer; <|im_end|> and <|endoftext|> end a turn.
func qwen(t testing.TB) *testModel {
	return loadModel(t, "AGENTRT_QWEN3_MODEL", []int32{151645, 151643})
}

// llama is Llama 3.1's tokenizer; <|eot_id|>, <|eom_id|> and <|end_of_text|> end a turn.
func llama(t testing.TB) *testModel {
	return loadModel(t, "AGENTRT_LLAMA31_MODEL", []int32{128009, 128008, 128001})
}

// nemo is Mistral Nemo's tokenizer (tekken: [INST], [AVAILABLE_TOOLS], [TOOL_CALLS], [TOOL_RESULTS] are single
// tokens); </s> ends a turn.
func nemo(t testing.TB) *testModel {
	return loadModel(t, "AGENTRT_MISTRAL_NEMO_MODEL", []int32{2})
}

func testConfig(m *testModel) Config {
	c := DefaultConfig()
	c.StopIDs = m.StopIDs
	c.VocabSize = m.vocab
	return c
}

// start serves a new emulator on a loopback port.
func start(t testing.TB, cfg Config, tok Tokenizer, opts ...Option) (*Server, string) {
	t.Helper()
	srv, err := New(cfg, tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		ts.Close()
	})
	return srv, ts.URL
}

func readRef(name string) ([]byte, error) { return os.ReadFile(filepath.Join(refDir, name)) }

// refFixture reads a JSON fixture from sglang/testdata/fixtures.
func refFixture(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := readRef(name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return v
}

// refSSE reads the data events of an SSE fixture ('#' lines are comments).
func refSSE(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refDir, name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	var evs []string
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			evs = append(evs, d)
		}
	}
	return evs
}

type httpResult struct {
	status int
	ctype  string
	body   []byte
}

func post(t testing.TB, url, path string, body any) httpResult {
	t.Helper()
	return postCtx(t, context.Background(), url, path, body)
}

func postCtx(t testing.TB, ctx context.Context, url, path string, body any) httpResult {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	return httpResult{resp.StatusCode, resp.Header.Get("Content-Type"), rb}
}

func get(t testing.TB, url, path string) httpResult {
	t.Helper()
	resp, err := http.Get(url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, resp.Header.Get("Content-Type"), rb}
}

// gen is a decoded /generate response.
type gen struct {
	Text      string          `json:"text"`
	OutputIDs []int32         `json:"output_ids"`
	MetaInfo  map[string]any  `json:"meta_info"`
	Raw       json.RawMessage `json:"-"`
}

func generate(t testing.TB, url string, body map[string]any) gen {
	t.Helper()
	r := post(t, url, "/generate", body)
	if r.status != http.StatusOK {
		t.Fatalf("/generate: status %d: %s", r.status, r.body)
	}
	var g gen
	if err := json.Unmarshal(r.body, &g); err != nil {
		t.Fatalf("/generate: %v: %s", err, r.body)
	}
	g.Raw = r.body
	return g
}

func (g gen) finish() map[string]any {
	f, _ := g.MetaInfo["finish_reason"].(map[string]any)
	return f
}

func (g gen) num(key string) int {
	f, _ := g.MetaInfo[key].(float64)
	return int(f)
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var evs []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			evs = append(evs, d)
		}
	}
	return evs
}

// Prompt builders for the chat formats (the layouts the real templates produce; see reference/sglang).

const calcToolJSON = `{"type": "function", "function": {"name": "calculator", "description": "Evaluate an arithmetic expression", "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "e.g. 2 + 2"}}, "required": ["expression"]}}}`

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}`

// qwenPrompt renders a Qwen3-style system prompt with tools, a user task and the generation prompt.
func qwenPrompt(system, task string, tools ...string) string {
	var b strings.Builder
	b.WriteString("<|im_start|>system\n" + system)
	if len(tools) > 0 {
		b.WriteString("\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, t := range tools {
			b.WriteString("\n" + t)
		}
		b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
	}
	b.WriteString("<|im_end|>\n<|im_start|>user\n" + task + "<|im_end|>\n<|im_start|>assistant\n")
	return b.String()
}

// qwenToolTurn is the template glue and tool-response turn that follows an assistant reply.
func qwenToolTurn(results ...string) string {
	var b strings.Builder
	b.WriteString("\n<|im_start|>user")
	for _, r := range results {
		b.WriteString("\n<tool_response>\n" + r + "\n</tool_response>")
	}
	b.WriteString("<|im_end|>\n<|im_start|>assistant\n")
	return b.String()
}

// llamaPrompt renders the Llama 3.1 layout with tools in the first user message.
func llamaPrompt(task string, tools ...string) string {
	var b strings.Builder
	b.WriteString("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>")
	b.WriteString("<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n")
	for _, t := range tools {
		b.WriteString(t + "\n\n")
	}
	b.WriteString(task + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
	return b.String()
}

func llamaToolTurn(result string) string {
	q, _ := json.Marshal(result)
	return "<|start_header_id|>ipython<|end_header_id|>\n\n" + string(q) + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
}

// waitFor polls cond until it holds (a state, not a timing: the deadline only stops a hung test, which then
// fails naming what and with a goroutine dump).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, what, cond)
}
