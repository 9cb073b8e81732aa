package emulator

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// stubTokenizer is one id per byte plus ids 1000+ for a few special tokens: enough for fuzzing without cgo.
type stubTokenizer struct{}

var stubSpecials = [...]string{"<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

func (stubTokenizer) Encode(text string, _ bool) []int32 {
	var ids []int32
	for len(text) > 0 {
		matched := false
		for i, s := range stubSpecials {
			if strings.HasPrefix(text, s) {
				ids, text, matched = append(ids, int32(1000+i)), text[len(s):], true
				break
			}
		}
		if !matched {
			ids, text = append(ids, int32(text[0])), text[1:]
		}
	}
	return ids
}

func (stubTokenizer) Decode(ids []int32, skip bool) string {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id >= 1000 && int(id-1000) < len(stubSpecials):
			if !skip {
				b.WriteString(stubSpecials[id-1000])
			}
		case id >= 0 && id < 256:
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

// FuzzGenerate: no /generate body makes the server panic or answer outside 200/4xx/5xx.
func FuzzGenerate(f *testing.F) {
	for _, s := range []string{
		`{"input_ids":[1,2,3]}`, `{"text":"hi","stream":true}`, `{"input_ids":[[1],[2]],"rid":["a","b"]}`,
		`{"input_ids":[1],"return_logprob":true,"logprob_start_len":0,"top_logprobs_num":2,"token_ids_logprob":[1]}`,
		`{"input_ids":[1],"sampling_params":{"n":2,"stop":["x"],"stop_token_ids":[5],"ignore_eos":true,"max_new_tokens":7}}`,
		`{"input_ids":[1],"sampling_params":[{"top_p":0}]}`, `{"text":["a","b"],"sampling_params":[{},{}],"logprob_start_len":[0,1],"return_logprob":[true,false]}`,
		`{`, `[]`, `null`, `{"input_ids":"x"}`,
	} {
		f.Add(s)
	}
	cfg := DefaultConfig()
	cfg.StopIDs = []int32{1001}
	cfg.VocabSize = 1010
	cfg.ContextLength = 256
	cfg.NonCanonicalRate, cfg.MalformedRate, cfg.ThinkRate = 0.5, 0.5, 0.5
	srv, err := New(cfg, stubTokenizer{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/generate", strings.NewReader(body)))
		if w.Code != 200 && (w.Code < 400 || w.Code > 599) {
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// FuzzAgentic: any prompt text decodes to a conversation and gets a reply, in every format.
func FuzzAgentic(f *testing.F) {
	f.Add(qwenPrompt("sys", "What is 1+2*(3-4)/5?", calcToolJSON, weatherTool) + "<tool_call>\n{}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n7\n</tool_response><|im_end|>\n<|im_start|>assistant\n")
	f.Add(llamaPrompt("What is 6*7?", calcToolJSON) + `{"name": "calculator"}<|eot_id|>` + llamaToolTurn("42"))
	f.Add("<|im_start|>system\n<tools>\n{\"name\": 5}\n{\"function\": {\"name\": \"\"}}\n</tools>")
	f.Add("((((1+2")
	f.Add(`<s>[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "calculator", "description": "a "b"", "parameters": {}}}][/AVAILABLE_TOOLS]` +
		`[INST]What is 6*7?[/INST][TOOL_CALLS][{"name": "calculator", "arguments": {}, "id": "abcDEF123"}]</s>[TOOL_RESULTS]{"content": 42, "call_id": "abcDEF123"}[/TOOL_RESULTS]`)
	srvs := map[string]*Server{}
	for _, format := range []string{FormatHermes, FormatQwen3Coder, FormatLlama3, FormatMistralNemo} {
		cfg := DefaultConfig()
		cfg.ToolFormat, cfg.MalformedRate, cfg.ThinkRate = format, 0.5, 0.5
		srv, err := New(cfg, stubTokenizer{})
		if err != nil {
			f.Fatal(err)
		}
		srvs[format] = srv
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := parseConversation(text, nil)
		for _, srv := range srvs {
			_ = srv.agentic(c, rand.New(rand.NewPCG(1, 2)))
		}
		_ = findExpressions(text)
	})
}
