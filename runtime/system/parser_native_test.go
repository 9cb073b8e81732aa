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

// parserCorpus is SGLang's tool-call corpus (every format's texts) with the tools of all its cases, plus texts near
// the markers and, for each corpus text, cut and spliced copies: malformed calls, unclosed tags, stray markup.
func parserCorpus(t testing.TB) (texts []string, specs []abi.ToolSpec, byFormat map[string][][]abi.ToolSpec) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "sglang", "testdata", "fixtures", "tool_calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts = []string{"", " \n ", "The answer is 42.\n", "<think>\nthink <tool_call> here\n</think>\n\nDone.",
		"</tool_call> stray", "<tool_call", "\u00a0x\u00a0", "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1+1\"}}\n</tool_call>",
		"<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": \"calculator\", \"arguments\": [1]}\n</tool_call>",
		"<minimax:tool_call>\n<invoke name=\"calculator\">\n</invoke>\n</minimax:tool_call>",
		"<seed:tool_call>\n<function=calculator>\n</function>\n</seed:tool_call>"}
	seen := map[string]bool{"calculator": true}
	byFormat = map[string][][]abi.ToolSpec{}
	specs = []abi.ToolSpec{{Name: "calculator", Parameters: abi.RawJSON(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c struct {
			Format string
			Text   string
			Tools  []struct {
				Function struct {
					Name       string
					Parameters json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		r := []rune(c.Text) // cut on characters: the loop's texts are the tokenizer's decode, valid UTF-8
		n := len(r)
		cut := func(i, j int) string { return string(r[i:j]) }
		texts = append(texts, c.Text, cut(0, n/2), cut(0, n*3/4), cut(n/3, n), c.Text+cut(0, n/2), "<think>"+c.Text, c.Text[:len(c.Text)-1])
		var own []abi.ToolSpec
		for _, tool := range c.Tools {
			fn := tool.Function
			own = append(own, abi.ToolSpec{Name: fn.Name, Parameters: abi.RawJSON(fn.Parameters)})
			if fn.Name != "" && !seen[fn.Name] {
				seen[fn.Name] = true
				specs = append(specs, own[len(own)-1])
			}
		}
		if len(own) > 0 {
			byFormat[c.Format] = append(byFormat[c.Format], own)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return texts, specs, byFormat
}

// parserPair loads the built-in parser name with specs through h and in process: the agent loop's adapter (in
// process, the Wasm module for texts that are not UTF-8) and one that always calls the Wasm module. close frees the
// module.
func parserPair(tb testing.TB, h *plugin.Host, name string, specs []abi.ToolSpec) (inProcess, wasm parserAdapter, close func()) {
	tb.Helper()
	ctx := context.Background()
	mod, err := loadParser(ctx, h, name, specs, 1)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := mod.Parser()
	if err != nil {
		tb.Fatal(err)
	}
	native, tools, err := nativeParser(name, specs)
	if err != nil {
		tb.Fatal(err)
	}
	return parserAdapter{p: p, native: native, tools: tools, name: name}, parserAdapter{p: p, name: name}, func() { mod.Close(ctx) }
}

// newParserHost is a plugin host with its own compilation cache, closed with the test.
func newParserHost(tb testing.TB) *plugin.Host {
	tb.Helper()
	h, err := plugin.NewHost(context.Background(), plugin.Config{CacheDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// TestNativeParsersMatchWasm runs every built-in parser in process and through the plugin host (parsers.wasm and its
// glue, as a .wasm parser would run), with no tools, all the corpus's tools, and each tool set of the corpus's cases
// of its format, over every text of the corpus: the results are the same (calls with their ids, arguments and
// spans; errors; normal text). The corpus must reach calls, errors and plain text in each parser.
func TestNativeParsersMatchWasm(t *testing.T) {
	ctx := context.Background()
	h := newParserHost(t)
	texts, corpusSpecs, byFormat := parserCorpus(t)
	for _, name := range parsers.Names() {
		var calls, errs, plain int
		for _, specs := range append([][]abi.ToolSpec{nil, corpusSpecs}, byFormat[name]...) {
			inProcess, wasm, closeModule := parserPair(t, h, name, specs)
			for _, text := range texts {
				got, gerr := inProcess.Parse(ctx, text)
				want, werr := wasm.Parse(ctx, text)
				if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s (%d tools), text %q:\nin process %+v (%v)\nWasm       %+v (%v)", name, len(specs), text, got, gerr, want, werr)
				}
				calls += len(got.Calls)
				errs += len(got.Errors)
				if len(got.Calls)+len(got.Errors) == 0 {
					plain++
				}
			}
			closeModule()
		}
		if calls == 0 || errs == 0 || plain == 0 {
			t.Fatalf("%s: the corpus gave %d calls, %d errors, %d plain texts: every kind must be compared", name, calls, errs, plain)
		}
	}

	// A cancelled call fails in process as through the host.
	native, tools, err := nativeParser("hermes", nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (parserAdapter{native: native, tools: tools, name: "hermes"}).Parse(cctx, "plain text"); err == nil {
		t.Fatal("a cancelled context: the in-process parser answered")
	}
}

// BenchmarkParserCall is one parse of a reply with one call (Qwen3/hermes, the agent loop's common turn) in process
// and through the plugin host. Run back to back, the Wasm call is hot; in an agent loop its guest's memory is cold
// (bench/results/long-horizon.md, Phase 6).
func BenchmarkParserCall(b *testing.B) {
	ctx := context.Background()
	specs := []abi.ToolSpec{{Name: "calculator", Parameters: abi.RawJSON(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)}}
	inProcess, wasm, _ := parserPair(b, newParserHost(b), "hermes", specs)
	text := "<think>\nI need 3*5+7 first.\n</think>\n\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"3*5+7\"}}\n</tool_call>"
	for _, bc := range []struct {
		name string
		a    parserAdapter
	}{{"in-process", inProcess}, {"wasm", wasm}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r, err := bc.a.Parse(ctx, text); err != nil || len(r.Calls) != 1 {
					b.Fatal(r, err)
				}
			}
		})
	}
}
