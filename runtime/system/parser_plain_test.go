package system

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// TestParserPlainSkip runs the built-in parsers that parsers.Plain knows (hermes, qwen3_coder, minimax-m2,
// seed_oss) through the plugin host with and without the skip, over SGLang's tool-call corpus and texts near the
// markers: every result is the same (calls, normal text, errors), and the skip is taken for some texts and not for
// others.
func TestParserPlainSkip(t *testing.T) {
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	specs := []abi.ToolSpec{{Name: "calculator", Description: "Evaluate.", Parameters: abi.RawJSON(`{"type":"object"}`)}}
	texts := []string{"", " \n ", "The answer is 42.\n", "<think>\nthink <tool_call> here\n</think>\n\nDone.",
		"</tool_call> stray", "<tool_call", "\u00a0x\u00a0", "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {}}\n</tool_call>"}
	f, err := os.Open(filepath.Join("..", "..", "sglang", "testdata", "fixtures", "tool_calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, c.Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	texts = append(texts, "<minimax:tool_call>\n<invoke name=\"calculator\">\n</invoke>\n</minimax:tool_call>",
		"<seed:tool_call>\n<function=calculator>\n</function>\n</seed:tool_call>")
	var skip parserAdapter
	for _, name := range []string{"hermes", "qwen3_coder", "minimax-m2", "seed_oss"} {
		mod, err := loadParser(ctx, h, name, specs, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := mod.Parser()
		if err != nil {
			t.Fatal(err)
		}
		skip = parserAdapter{p: p, name: name, builtin: name}
		wasm := parserAdapter{p: p, name: name}
		skipped := 0
		for _, text := range texts {
			if _, ok := parsers.Plain(name, text); ok {
				skipped++
			}
			got, gerr := skip.Parse(ctx, text)
			want, werr := wasm.Parse(ctx, text)
			if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, text %q: with the skip %+v (%v), the Wasm parser %+v (%v)", name, text, got, gerr, want, werr)
			}
		}
		if skipped == 0 || skipped == len(texts) {
			t.Fatalf("%s: the skip was taken for %d of %d texts: both sides must be exercised", name, skipped, len(texts))
		}
	}

	// A cancelled call is the parser's to answer, skip or not.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := skip.Parse(cctx, "plain text"); err == nil {
		t.Fatal("a cancelled context: the skip answered instead of the parser (no error)")
	}
}

// BenchmarkParserPlainSkip is the parser's cost for a final answer (no call) through the plugin host: the Wasm
// call, and the skip of parsers.Plain.
func BenchmarkParserPlainSkip(b *testing.B) {
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	specs := []abi.ToolSpec{{Name: "calculator", Description: "Evaluate.", Parameters: abi.RawJSON(`{"type":"object"}`)}}
	mod, err := loadParser(ctx, h, "hermes", specs, 1)
	if err != nil {
		b.Fatal(err)
	}
	p, err := mod.Parser()
	if err != nil {
		b.Fatal(err)
	}
	text := "<think>\nThe calculator said 68. So 3*5+7 = 22 and the rest follows.\n</think>\n\nThe answer is 68."
	for _, bc := range []struct {
		name string
		a    parserAdapter
	}{{"wasm", parserAdapter{p: p, name: "hermes"}}, {"skip", parserAdapter{p: p, name: "hermes", builtin: "hermes"}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.a.Parse(ctx, text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
