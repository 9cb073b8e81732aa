package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentrt/agentrt/sglang/emulator"
)

// byteTokenizer is a toy tokenizer for the example: one id per byte, and ids 1000+ for ChatML's special
// tokens. Real callers inject *tito.Tokenizer.
type byteTokenizer struct{}

var specials = []string{"<|im_start|>", "<|im_end|>"}

func (byteTokenizer) Encode(text string, _ bool) []int32 {
	var ids []int32
	for len(text) > 0 {
		matched := false
		for i, s := range specials {
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

func (byteTokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id >= 1000 && !skipSpecial:
			b.WriteString(specials[id-1000])
		case id < 256:
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

// Example starts the emulator in-process, asks for a completion of a tool-using prompt and checks a logprob
// the way a client can: from the token ids alone.
func Example() {
	cfg := emulator.DefaultConfig()
	cfg.StopIDs = []int32{1001} // <|im_end|>
	cfg.VocabSize = 1002
	srv, err := emulator.New(cfg, byteTokenizer{})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close(context.Background())

	prompt := "<|im_start|>system\nYou can use tools.\n<tools>\n" +
		`{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}` +
		"\n</tools><|im_end|>\n<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
	ids := byteTokenizer{}.Encode(prompt, false)
	body, _ := json.Marshal(map[string]any{"input_ids": ids, "return_logprob": true, "sampling_params": map[string]any{"max_new_tokens": 256}})
	resp, err := http.Post(ts.URL+"/generate", "application/json", strings.NewReader(string(body)))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Text      string  `json:"text"`
		OutputIDs []int32 `json:"output_ids"`
		MetaInfo  struct {
			FinishReason        map[string]any `json:"finish_reason"`
			OutputTokenLogprobs [][3]any       `json:"output_token_logprobs"`
		} `json:"meta_info"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	fmt.Println("finish:", out.MetaInfo.FinishReason["type"], out.MetaInfo.FinishReason["matched"])
	traj := append(ids, out.OutputIDs...)
	p := len(ids) // the first output token
	fmt.Println("logprob recomputed:", out.MetaInfo.OutputTokenLogprobs[0][0] == emulator.Logprob(traj[p-3:p], traj[p]))
	// Output:
	// <tool_call>
	// {"name": "calculator", "arguments": {"expression": "6*7"}}
	// </tool_call>
	// finish: stop 1001
	// logprob recomputed: true
}
