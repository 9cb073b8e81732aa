package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchBody is a second-turn agent request (system + tools + task + a tool call + its result), as a TITO
// client sends it: input_ids, output logprobs, logprob_start_len = len-1.
func benchBody(b *testing.B, m *testModel, url string) (body []byte, promptTokens int) {
	b.Helper()
	ids := qwenIDs(m, "Compute 12*7, then (3+4)/2 and 100-58 for me.", calcToolJSON, weatherTool)
	g := generate(b, url, map[string]any{"input_ids": ids})
	ids = append(append(slices.Clone(ids), g.OutputIDs...), m.Tokenizer.Encode(qwenToolTurn("84", "3.5", "42"), false)...)
	body, _ = json.Marshal(map[string]any{"input_ids": ids, "return_logprob": true, "logprob_start_len": len(ids) - 1,
		"sampling_params": map[string]any{"max_new_tokens": 1024, "temperature": 1.0}})
	return body, len(ids)
}

// BenchmarkGenerateHandler is the emulator's own cost per /generate request, without the network.
func BenchmarkGenerateHandler(b *testing.B) {
	m := qwen(b)
	srv, url := start(b, testConfig(m), m.Tokenizer)
	body, promptTokens := benchBody(b, m, url)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "/generate", bytes.NewReader(body))
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-us/op")
	b.ReportMetric(float64(promptTokens), "prompt-tokens")
}

// BenchmarkGenerateHTTP is the emulator's capacity over loopback HTTP at zero latency, with a minimal load
// generator of c concurrent clients.
func BenchmarkGenerateHTTP(b *testing.B) {
	m := qwen(b)
	for _, c := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			_, url := start(b, testConfig(m), m.Tokenizer)
			body, promptTokens := benchBody(b, m, url)
			tr := &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, IdleConnTimeout: time.Minute}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.ReportAllocs()
			// RunParallel starts parallelism × GOMAXPROCS goroutines
			b.SetParallelism(max(1, c/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(url+"/generate", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			// client and server share the process: this is both sides' CPU per request
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-us/op")
			b.ReportMetric(float64(promptTokens), "prompt-tokens")
			b.ReportMetric(float64(promptTokens), "prompt-tokens")
		})
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds: on a shared, loaded machine it measures cost
// better than wall time.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkConcurrentLatency: 5,000 requests in flight at once against a ~1 s-per-request latency model: what
// the emulator costs in CPU and memory to hold them. (Client and server share the process, so each request
// takes two file descriptors; 5,000 keeps under the box's 20,000-descriptor limit.)
func BenchmarkConcurrentLatency(b *testing.B) {
	m := qwen(b)
	const inflight = 5000
	cfg := testConfig(m)
	cfg.Latency = Latency{Fixed: 500 * time.Millisecond, PerOutputToken: 10 * time.Millisecond}
	_, url := start(b, cfg, m.Tokenizer)
	body, promptTokens := benchBody(b, m, url)
	tr := &http.Transport{MaxIdleConns: inflight, MaxIdleConnsPerHost: inflight, MaxConnsPerHost: inflight}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.ResetTimer()
	cpu0 := cpuTime()
	var peak uint64
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		errs := make(chan error, inflight)
		for j := 0; j < inflight; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(url+"/generate", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.Sys)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*inflight)/1e3, "cpu-us/req")
	b.ReportMetric(float64(peak)/(1<<20), "sys-MiB")
	b.ReportMetric(float64(promptTokens), "prompt-tokens")
}
