package tito

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchText returns about n bytes of mixed text: the golden cases (unicode, CJK, Arabic, emoji, code,
// whitespace runs, special tokens) cycled, which is what prompts with tool output look like. The Python
// reference figure comes from the same text: scripts/golden/tokenizer_golden.py --bench.
func benchText(b *testing.B, n int) string {
	b.Helper()
	g := tkReadGolden(b, "qwen3")
	var sb strings.Builder
	for sb.Len() < n {
		for _, c := range g.Encode {
			sb.WriteString(c.Text)
			sb.WriteByte('\n')
		}
	}
	s := sb.String()[:n]
	for !utf8.ValidString(s) { // never end inside a rune
		s = s[:len(s)-1]
	}
	return s
}

func benchChunks(b *testing.B, total, size int) []string {
	text := benchText(b, total)
	var out []string
	for len(text) > 0 {
		k := min(size, len(text))
		for k < len(text) && !strings.HasPrefix(text[k:], "\n") { // cut at line ends, never inside a rune
			k++
		}
		out = append(out, text[:k])
		text = text[k:]
	}
	return out
}

func BenchmarkEncode100KB(b *testing.B) {
	for _, name := range []string{"qwen3", "llama3.1"} {
		b.Run(name, func(b *testing.B) {
			tk := tkModel(b, name).Tokenizer
			text := benchText(b, 100_000)
			n := len(tk.Encode(text, false))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tk.Encode(text, false)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkEncode2KB encodes the 100 KB text as ~2 KB chunks, one at a time (the size of a tool result).
func BenchmarkEncode2KB(b *testing.B) {
	tk := tkModel(b, "qwen3").Tokenizer
	chunks := benchChunks(b, 100_000, 2000)
	tokens := 0
	for _, c := range chunks {
		tokens += len(tk.Encode(c, false))
	}
	b.SetBytes(100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, c := range chunks {
			tk.Encode(c, false)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncodeBatch encodes the same ~2 KB chunks with EncodeBatch (GOMAXPROCS goroutines).
func BenchmarkEncodeBatch(b *testing.B) {
	tk := tkModel(b, "qwen3").Tokenizer
	chunks := benchChunks(b, 100_000, 2000)
	tokens := 0
	for _, ids := range tk.EncodeBatch(chunks, false) {
		tokens += len(ids)
	}
	b.SetBytes(100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tk.EncodeBatch(chunks, false)
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncodeSmall is one template delta: a short tool result between chat-template glue.
func BenchmarkEncodeSmall(b *testing.B) {
	tk := tkModel(b, "qwen3").Tokenizer
	text := "\n<|im_start|>user\n<tool_response>\n{\"temperature\": 21.5, \"unit\": \"celsius\", \"city\": \"Paris\"}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tk.Encode(text, false)
	}
}

func BenchmarkDecode(b *testing.B) {
	tk := tkModel(b, "qwen3").Tokenizer
	ids := tk.Encode(benchText(b, 100_000), false)
	b.ReportAllocs()
	for b.Loop() {
		tk.Decode(ids, false)
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkLoadTokenizer(b *testing.B) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		b.Skip("$AGENTRT_QWEN3_MODEL is not set")
	}
	b.ReportAllocs()
	for b.Loop() {
		tk, err := LoadTokenizer(filepath.Join(dir, FileTokenizer))
		if err != nil {
			b.Fatal(err)
		}
		tk.Close()
	}
}

// BenchmarkDecodeOneID is the decode of one special id (a stop token): the cost runtime/turn's stop-text cache
// saves per turn.
func BenchmarkDecodeOneID(b *testing.B) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		b.Skip("$AGENTRT_QWEN3_MODEL is not set")
	}
	tk, err := LoadTokenizer(filepath.Join(dir, FileTokenizer))
	if err != nil {
		b.Fatal(err)
	}
	defer tk.Close()
	id := tk.Encode("<|im_end|>", false)
	b.ReportAllocs()
	for b.Loop() {
		tk.Decode(id, false)
	}
}
