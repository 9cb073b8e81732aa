package parsers

import (
	"os"
	"slices"
	"testing"
	"time"
)

// benchCompletion is a 2 KB Qwen3 completion (reasoning, a sentence, two tool calls, the stop token): the
// workload of the design target "parser call p50 <= 20 us for a 2 KB completion with two calls".
func benchCompletion(b *testing.B) string {
	text, err := os.ReadFile("testdata/bench_hermes_2k.txt")
	if err != nil {
		b.Fatal(err)
	}
	return string(text)
}

// BenchmarkParse measures one native Parse of the 2 KB completion and reports p50/p99 per call.
func BenchmarkParse(b *testing.B) {
	text := benchCompletion(b)
	tools := mustTools(b, testTools)
	p, _ := New("hermes")
	if r := p.Parse(text, tools); len(r.Calls) != 2 || len(r.Errors) != 0 {
		b.Fatalf("bench completion parses to %d calls, %d errors", len(r.Calls), len(r.Errors))
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r := p.Parse(text, tools)
		lat = append(lat, time.Since(t0))
		_ = r
	}
	reportPercentiles(b, lat)
}

// BenchmarkParseJSON adds the output encoding (what the Wasm guest does per call besides parsing).
func BenchmarkParseJSON(b *testing.B) {
	text := benchCompletion(b)
	tools := mustTools(b, testTools)
	p, _ := New("hermes")
	var buf []byte
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r := p.Parse(text, tools)
		buf = r.AppendJSON(buf[:0])
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
}

// BenchmarkParseInto is Parse reusing one Result (what the Wasm guest does).
func BenchmarkParseInto(b *testing.B) {
	text := benchCompletion(b)
	tools := mustTools(b, testTools)
	p, _ := New("hermes")
	var r Result
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		p.ParseInto(&r, text, tools)
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}
