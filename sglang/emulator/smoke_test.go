package emulator

import "testing"

func TestSmoke(t *testing.T) {
	m := qwen(t)
	_, url := start(t, testConfig(m), m.Tokenizer)
	ids := m.Tokenizer.Encode(qwenPrompt("You are helpful.", "What is 12*7 and (3+4)/2?", calcToolJSON), false)
	g := generate(t, url, map[string]any{"input_ids": ids, "return_logprob": true, "logprob_start_len": len(ids) - 1, "sampling_params": map[string]any{"max_new_tokens": 256}})
	t.Logf("%s", g.Raw)
	t.Logf("%q", g.Text)
}
