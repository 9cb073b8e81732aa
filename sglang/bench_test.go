package sglang_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// Benchmarks: go test -run '^$' -bench . -benchmem ./sglang/
//
// BenchmarkGenerate* measure whole client calls (encode, HTTP over loopback, decode) at 1 and 512 concurrent
// requests. The servers run in the same process, so allocs/op and CPU include the server side; the fake
// server's share is small (it writes a prebuilt body), the emulator's is not (it tokenizes and scores).

const (
	benchPromptLen = 2000
	benchOutputLen = 200
)

func benchRequest(i int64) *sglang.GenerateRequest {
	ids := make([]int32, benchPromptLen)
	for j := range ids {
		ids[j] = int32(100 + j%5000)
	}
	return &sglang.GenerateRequest{
		InputIDs:        ids,
		SamplingParams:  sglang.SamplingParams{MaxNewTokens: benchOutputLen, Temperature: new(1.0)},
		ReturnLogprob:   true,
		LogprobStartLen: benchPromptLen - 1,
		RID:             "bench-" + strconv.FormatInt(i, 10),
	}
}

// benchResponseBody is a realistic /generate answer: 200 output ids with logprobs, one input logprob.
func benchResponseBody() []byte {
	resp := sglang.GenerateResponse{Text: "x", OutputIDs: make([]int32, benchOutputLen)}
	m := &resp.MetaInfo
	m.ID = "bench"
	m.FinishReason = &sglang.FinishReason{Type: sglang.FinishStop, MatchedTokenID: 151645}
	m.PromptTokens, m.CompletionTokens, m.CachedTokens = benchPromptLen, benchOutputLen, benchPromptLen-1
	m.WeightVersion = "default"
	m.E2ELatency = 0.123
	m.InputTokenLogprobs = []sglang.LogprobEntry{{Null: true, TokenID: 100}}
	for i := range resp.OutputIDs {
		resp.OutputIDs[i] = int32(1000 + i)
		m.OutputTokenLogprobs = append(m.OutputTokenLogprobs, sglang.LogprobEntry{Logprob: -0.0001234567 * float64(i+1), TokenID: int32(1000 + i)})
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	return b
}

func fakeGenerateServer(b *testing.B) string {
	body := benchResponseBody()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func runGenerateBench(b *testing.B, url string, concurrency int, mkReq func(int64) *sglang.GenerateRequest) {
	cfg := sglang.DefaultConfig()
	cfg.Workers = []string{url}
	cfg.MaxInFlightPerWorker = concurrency
	c, err := sglang.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// warm the connection pool: one connection per concurrent request
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			if _, err := c.Generate(b.Context(), "", mkReq(int64(-1-i))); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	if concurrency == 1 {
		for i := 0; i < b.N; i++ {
			if _, err := c.Generate(b.Context(), "ep", mkReq(int64(i))); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism((concurrency + 1) / 2) // RunParallel starts parallelism × GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if _, err := c.Generate(b.Context(), "ep-"+strconv.FormatInt(i%997, 10), mkReq(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
}

// cpuTime is the process's user+system CPU time: on a shared machine, CPU per request is steadier than
// wall-clock throughput. It covers the in-process server too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkGenerateFake(b *testing.B) {
	url := fakeGenerateServer(b)
	for _, conc := range []int{1, 512} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) { runGenerateBench(b, url, conc, benchRequest) })
	}
}

func BenchmarkGenerateEmulator(b *testing.B) {
	tok := qwenTokenizer(b)
	_, url := startEmulator(b, func(c *emulator.Config) { c.Policy = emulator.PolicyAgentic })
	prompt := qwenPrompt(tok, "What is 12*7? Answer briefly.")
	mk := func(i int64) *sglang.GenerateRequest {
		return &sglang.GenerateRequest{
			InputIDs:        prompt,
			SamplingParams:  sglang.SamplingParams{MaxNewTokens: 64},
			ReturnLogprob:   true,
			LogprobStartLen: len(prompt) - 1,
			RID:             "bench-" + strconv.FormatInt(i, 10),
		}
	}
	for _, conc := range []int{1, 512} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) { runGenerateBench(b, url, conc, mk) })
	}
}

// BenchmarkEncodeRequest is the request encoding alone (2000 prompt ids).
func BenchmarkEncodeRequest(b *testing.B) {
	req := benchRequest(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdaptiveLimit compares fixed per-worker limits with the adaptive one (sglang.AdaptiveConfig) against an
// emulator whose KV pool (emulator.Config.KVTokens) holds about 18 requests: 256 callers, each request a ~200-token
// prompt and 256 generated tokens (ignore_eos). A limit too low leaves the pool idle; one too high overfills it,
// and the worker retracts requests (freed, queued, prefilled again). Run with -benchtime=400x (b.N = requests).
func BenchmarkAdaptiveLimit(b *testing.B) {
	tok := qwenTokenizer(b)
	prompt := qwenPrompt(tok, strings.Repeat("Sum the numbers 1 to 10 and explain each step. ", 16))
	const outTokens = 256
	kv := (len(prompt) + outTokens) * 18
	for _, v := range []struct {
		name     string
		limit    int
		adaptive bool
	}{{"fixed=4", 4, false}, {"fixed=16", 16, false}, {"fixed=64", 64, false}, {"fixed=256", 256, false}, {"adaptive", 256, true}} {
		b.Run(v.name, func(b *testing.B) {
			srv, url := startEmulator(b, func(c *emulator.Config) {
				c.KVTokens = kv
				c.Latency = emulator.Latency{Fixed: 2 * time.Millisecond, PerPromptToken: 20 * time.Microsecond, PerOutputToken: 200 * time.Microsecond}
			})
			cfg := sglang.DefaultConfig()
			cfg.Workers = []string{url}
			cfg.MaxInFlightPerWorker = v.limit
			cfg.Adaptive = sglang.AdaptiveConfig{Enabled: v.adaptive, Initial: 4, Interval: 20 * time.Millisecond}
			c, err := sglang.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var next atomic.Int64
			var wg sync.WaitGroup
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			start := time.Now()
			for range 256 {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						t0 := time.Now()
						_, err := c.Generate(b.Context(), "", &sglang.GenerateRequest{InputIDs: prompt, RID: "a-" + strconv.FormatInt(i, 10),
							SamplingParams: sglang.SamplingParams{MaxNewTokens: outTokens, IgnoreEOS: true}})
						if err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
			b.ReportMetric(float64(srv.Retractions())/float64(b.N), "retractions/op")
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(c.Stats().Workers[0].Limit), "final-limit")
		})
	}
}

// BenchmarkGenerateLongContext: one turn of a long conversation (C=1, the fake server): a request of ctx tokens,
// 60 more than the turn before, sent whole (whole) or with the conversation's IDsCache (cached), which encodes
// only the new ids after comparing the kept ones, or takes them uncompared (appendonly: IDsAppendOnly, the ids
// grow in one array as a trajectory's do). Every 200 turns the conversation starts again at ctx tokens, outside
// the timer (the cache's first request encodes all of it). Compare the modes at ctx=2k and ctx=118k in one run:
// with the cache a turn's cost should not grow with the context but for the bytes the kernel copies.
func BenchmarkGenerateLongContext(b *testing.B) {
	url := fakeGenerateServer(b)
	for _, ctxLen := range []int{2000, 118000} {
		ids := make([]int32, ctxLen+60*200)
		for j := range ids {
			ids[j] = int32(100 + 397*j%151000)
		}
		for _, mode := range []string{"whole", "cached", "appendonly"} {
			b.Run(fmt.Sprintf("ctx=%dk/%s", ctxLen/1000, mode), func(b *testing.B) {
				cfg := sglang.DefaultConfig()
				cfg.Workers = []string{url}
				c, err := sglang.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				var cache *sglang.IDsCache
				req := func(turn int) *sglang.GenerateRequest {
					n := ctxLen + 60*turn
					r := &sglang.GenerateRequest{
						InputIDs:        ids[:n:n],
						SamplingParams:  sglang.SamplingParams{MaxNewTokens: benchOutputLen, Temperature: new(1.0)},
						ReturnLogprob:   true,
						LogprobStartLen: n - 61,
						RID:             "long-" + strconv.Itoa(turn),
					}
					if mode != "whole" {
						r.IDsCache = cache
						r.IDsAppendOnly = mode == "appendonly"
					}
					return r
				}
				b.ReportAllocs()
				turn := 0
				var cpu time.Duration
				for b.Loop() {
					if turn%200 == 0 {
						b.StopTimer()
						cache = new(sglang.IDsCache)
						if _, err := c.Generate(b.Context(), "conv", req(0)); err != nil {
							b.Fatal(err)
						}
						turn = 1
						b.StartTimer()
					}
					cpu0 := cpuTime()
					if _, err := c.Generate(b.Context(), "conv", req(turn)); err != nil {
						b.Fatal(err)
					}
					cpu += cpuTime() - cpu0
					turn++
				}
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
			})
		}
	}
}
