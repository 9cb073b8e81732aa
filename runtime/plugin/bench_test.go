package plugin_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/plugins/builtin"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// measure runs fn b.N times and reports the p50 and p99 of single calls besides Go's mean.
func measure(b *testing.B, fn func() error) {
	b.Helper()
	b.ReportAllocs()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-us")
}

// completion2KB is a ~2 KB Hermes-style completion with two tool calls and thinking text around them.
func completion2KB() string {
	var sb strings.Builder
	sb.WriteString("<think>\nThe user wants the weather in Paris and the local time. ")
	for sb.Len() < 1500 {
		sb.WriteString("I should call get_weather with the city, then get_time with the time zone, and combine both answers. ")
	}
	sb.WriteString("\n</think>\n\nI'll look both up.\n")
	sb.WriteString("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": 3}}\n</tool_call>\n")
	sb.WriteString("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}\n</tool_call>")
	for sb.Len() < 2048 {
		sb.WriteString(" ")
	}
	return sb.String()
}

func BenchmarkParse2KB(b *testing.B) {
	text := completion2KB()
	ctx := context.Background()
	for _, trusted := range []bool{true, false} {
		b.Run("go-xmltag/trusted="+strconv.FormatBool(trusted), func(b *testing.B) {
			h := newHost(b)
			m := load(b, h, plugin.Spec{Name: "xmltag", Wasm: repoFile(b, "plugins/examples/go-xmltag/xmltag.wasm"), Trusted: trusted, PoolSize: 1, Tools: weatherTools})
			p, _ := m.Parser()
			res, err := p.Parse(ctx, text)
			if err != nil || len(res.Calls) != 2 {
				b.Fatalf("%+v %v", res, err)
			}
			b.SetBytes(int64(len(text)))
			measure(b, func() error { _, err := p.Parse(ctx, text); return err })
		})
	}
	b.Run("wat-fixed/host-only", func(b *testing.B) {
		h := newHost(b)
		m := load(b, h, plugin.Spec{Name: "fixed", Wasm: wasm(b, "wat/fixedparser.wasm"), Trusted: true, PoolSize: 1})
		p, _ := m.Parser()
		b.SetBytes(int64(len(text)))
		measure(b, func() error { _, err := p.Parse(ctx, text); return err })
	})
}

func BenchmarkToolCallNoop(b *testing.B) {
	ctx := context.Background()
	cases := []struct {
		name    string
		file    string
		trusted bool
	}{
		{"wat/trusted", "wat/noop.wasm", true},
		{"wat/sandboxed", "wat/noop.wasm", false},
		{"go/trusted", "go/probe/probe.wasm", true},
		{"go/sandboxed", "go/probe/probe.wasm", false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := newHost(b)
			m := load(b, h, plugin.Spec{Name: c.file, Wasm: wasm(b, c.file), Trusted: c.trusted, PoolSize: 1})
			tool, _ := m.Tool()
			args := []byte(`{}`)
			measure(b, func() error { _, err := tool.Call(ctx, "noop", args); return err })
		})
	}
}

func BenchmarkCalculator(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	m := load(b, h, plugin.Spec{Name: "calc", Wasm: builtin.Calculator, Trusted: true, PoolSize: 1})
	tool, _ := m.Tool()
	args := []byte(`{"expression":"(2 + 3) * 4.5 ** 2 - 7 % 3"}`)
	measure(b, func() error { _, err := tool.Call(ctx, "calculator", args); return err })
}

func BenchmarkLimiterHook(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	m := load(b, h, plugin.Spec{Name: "lim", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1, Config: []byte(`{"max_tool_iters":5,"max_messages":40}`)})
	hook, _ := m.Hook()
	ev := &abi.Event{Event: abi.EventMessageAdded, EpisodeID: "episode-000001", Turn: 3,
		Counts:  abi.Counts{Messages: 7, ModelCalls: 3, ToolIters: 3, ToolCalls: 4, PromptTokens: 812, ResponseTokens: 301},
		Message: &abi.Message{Role: abi.RoleTool, ToolCallID: "call_3", Name: "get_weather", Content: `{"temperature": 21, "sky": "clear"}`}}
	measure(b, func() error { _, err := hook.Handle(ctx, ev); return err })
}

// BenchmarkInstantiate measures creating one ready instance of a Go guest (instantiate, _initialize, ABI check,
// describe, init) with the module already compiled, and reports the memory each live instance holds.
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	spec := plugin.Spec{Name: "calc", Wasm: builtin.Calculator, Trusted: true, PoolSize: 1}
	first := load(b, h, spec) // compiles
	defer first.Close(ctx)
	measure(b, func() error {
		m, err := h.Load(ctx, spec)
		if err != nil {
			return err
		}
		return m.Close(ctx)
	})
	// Memory per live instance: hold n instances and compare RSS and Go heap.
	const n = 32
	runtime.GC()
	rss0, heap0 := rssBytes(), heapBytes()
	spec.PoolSize = n
	m, err := h.Load(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	tool, _ := m.Tool()
	for i := 0; i < n; i++ { // touch each instance once
		if _, err := tool.Call(ctx, "calculator", []byte(`{"expression":"1+1"}`)); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	b.ReportMetric(float64(rssBytes()-rss0)/n/(1<<20), "RSS-MiB/instance")
	b.ReportMetric(float64(heapBytes()-heap0)/n/(1<<20), "heap-MiB/instance")
	_ = m.Close(ctx)
}

// BenchmarkStartupWarmCache measures a new process's start: a new Host on a warm on-disk compilation cache, then
// Load of the built-in limiter (a 71 KB C guest; it was a 2.8 MB Go guest) with one instance.
func BenchmarkStartupWarmCache(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	warm, err := plugin.NewHost(ctx, plugin.Config{CacheDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if _, err := warm.Load(ctx, plugin.Spec{Name: "lim", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1}); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(t0)
	_ = warm.Close(ctx)
	measure(b, func() error {
		h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: dir})
		if err != nil {
			return err
		}
		if _, err := h.Load(ctx, plugin.Spec{Name: "lim", Wasm: builtin.Limiter, Trusted: true, PoolSize: 1}); err != nil {
			return err
		}
		return h.Close(ctx)
	})
	b.ReportMetric(float64(cold.Milliseconds()), "cold-start-ms")
}

func heapBytes() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
