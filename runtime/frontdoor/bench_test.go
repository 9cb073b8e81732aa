package frontdoor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/frontdoor"
	"github.com/agentrt/agentrt/sglang"
)

// BenchmarkCallOverhead compares one front-door chat completions call (HTTP in, match, template delta,
// tokenize, /generate, parse, HTTP out) with a plain /generate round trip of the same prompt through the same
// SGLang client, at 1 and 256 concurrent sessions, the emulator at zero latency. Each session runs 4-call
// conversations (each call extends the last), then ends (its trajectory is finished and serialized). Reported:
// p50/p99 per call in microseconds; the front door's overhead is the difference. Results: bench/results/frontdoor.md.
func BenchmarkCallOverhead(b *testing.B) {
	for _, conc := range []int{1, 256} {
		b.Run(fmt.Sprintf("generate/sessions=%d", conc), func(b *testing.B) { benchCalls(b, conc, false) })
		b.Run(fmt.Sprintf("frontdoor/sessions=%d", conc), func(b *testing.B) { benchCalls(b, conc, true) })
	}
}

func benchCalls(b *testing.B, conc int, viaFrontdoor bool) {
	h := newHarness(b, defaultConfig(frontdoor.DriftReject), map[string]any{"enable_thinking": false})
	scfg := sglang.DefaultConfig()
	scfg.Workers = []string{h.emuURL}
	scfg.MaxInFlightPerWorker = 4096
	client, err := sglang.New(scfg)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	prompt := qwen3.Tokenizer.Encode("<|im_start|>user\n[script:chat] Hi.<|im_end|>\n<|im_start|>assistant\n", false)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc * 2}}
	var mu sync.Mutex
	var lat []time.Duration
	per := (b.N + conc - 1) / conc
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := range conc {
		wg.Go(func() {
			local := make([]time.Duration, 0, per)
			msgs := []any{}
			for i := range per {
				t0 := time.Now()
				if viaFrontdoor {
					if i%4 == 0 {
						if i > 0 {
							post(b, httpc, fmt.Sprintf("%s/s/b%d-%d/end", h.srv.URL, g, i/4-1), nil)
							t0 = time.Now()
						}
						msgs = []any{map[string]any{"role": "user", "content": "[script:chat] Hi."}}
					}
					resp := post(b, httpc, fmt.Sprintf("%s/s/b%d-%d/v1/chat/completions", h.srv.URL, g, i/4),
						map[string]any{"model": "qwen3", "messages": msgs, "max_tokens": 16})
					choices, _ := resp["choices"].([]any)
					if len(choices) != 1 {
						b.Errorf("call answered %v", resp)
						return
					}
					msgs = append(msgs, choices[0].(map[string]any)["message"], map[string]any{"role": "user", "content": "And then?"})
				} else {
					_, err := client.Generate(context.Background(), fmt.Sprint(g), &sglang.GenerateRequest{InputIDs: prompt,
						SamplingParams: sglang.SamplingParams{MaxNewTokens: 16}, ReturnLogprob: true})
					if err != nil {
						b.Error(err)
						return
					}
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99_us")
	}
}

func post(b *testing.B, c *http.Client, url string, body any) map[string]any {
	raw, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		b.Error(err)
		return nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(out, &m)
	return m
}
