package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

var updateParse = flag.Bool("update", false, "rewrite the expected output of testdata/parse/*.txt golden files")

const goldenSep = "\n----------\n"

// TestParseGolden runs `agentrt parse` on each testdata/parse/*.txt file: the flags, a separator line, the
// completion on stdin, a separator line, the expected stdout. -update rewrites the expected stdout.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/parse/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	cache := parseTestCache(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.SplitN(string(raw), goldenSep, 3)
			if len(parts) != 3 {
				t.Fatalf("%s: want flags, stdin and stdout separated by %q lines", file, strings.TrimSpace(goldenSep))
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"parse", "--cache-dir", cache}, strings.Fields(parts[0])...)
			code := run(context.Background(), args, stdio{strings.NewReader(parts[1]), &stdout, &stderr})
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr.String())
			}
			if *updateParse {
				if err := os.WriteFile(file, []byte(parts[0]+goldenSep+parts[1]+goldenSep+stdout.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if stdout.String() != parts[2] {
				t.Errorf("stdout\n%s\nwant\n%s", stdout.String(), parts[2])
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		wantErr string
	}{
		{"no parser", nil, "", exitUsage, "--parser is required"},
		{"unknown parser", []string{"--parser", "step3"}, "", exitUsage, `unknown parser "step3" (known: deepseekv3`},
		{"extra argument", []string{"--parser", "hermes", "file.txt"}, "", exitUsage, "unexpected argument"},
		{"missing tools file", []string{"--parser", "hermes", "--tools", "testdata/parse/nope.json"}, "", exitFailure, "--tools open testdata/parse/nope.json"},
		{"bad tools file", []string{"--parser", "hermes", "--tools", "testdata/parse/bad_tools.json"}, "", exitFailure, "tools[0]: missing \"name\""},
		{"help", []string{"-h"}, "", exitOK, "usage: agentrt parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"parse", "--cache-dir", ""}, tt.args...), stdio{strings.NewReader(tt.stdin), &stdout, &stderr})
			if code != tt.code || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.wantErr)
			}
		})
	}
}

// parseTestCache is the wazero compilation cache of these tests: the CLI's default (the user cache directory), so
// that only the first run ever compiles the 3 MB module (~1 s, ~10 s under -race); wazero keys entries on the
// module bytes, its version and the CPU, so a stale entry is never used.
func parseTestCache(t *testing.T) string {
	t.Helper()
	if d := defaultWasmCacheDir(); d != "" {
		return d
	}
	return t.TempDir()
}

// parseHost loads the embedded parsers module through the plugin host, as the runtime does.
func parseHost(tb testing.TB, cacheDir, name string, tools []abi.ToolSpec) *plugin.Parser {
	tb.Helper()
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: cacheDir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(ctx) })
	cfg, err := parsers.WasmConfig(name)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := h.Load(ctx, plugin.Spec{Name: "builtin:parsers", Wasm: parsers.Wasm(), Trusted: true, Config: cfg, Tools: tools, PoolSize: 1})
	if err != nil {
		tb.Fatal(err)
	}
	if m.Manifest().Name != parsers.WasmName || m.Kind() != abi.KindParser {
		tb.Fatalf("manifest %+v", m.Manifest())
	}
	p, err := m.Parser()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func benchTools(tb testing.TB) []abi.ToolSpec {
	specs, err := readToolSpecs("testdata/parse/tools.json")
	if err != nil {
		tb.Fatal(err)
	}
	return specs
}

// TestParseWasmMatchesNative: the embedded Wasm module, run through the plugin host, gives exactly what the
// native parsers package gives (calls with ids, spans and arguments; normal text; errors with reason, message,
// raw text and span), for every format and every golden input.
func TestParseWasmMatchesNative(t *testing.T) {
	files, _ := filepath.Glob("testdata/parse/*.txt")
	completion, err := os.ReadFile("../../parsers/testdata/bench_hermes_2k.txt")
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		inputs = append(inputs, strings.SplitN(string(raw), goldenSep, 3)[1])
	}
	inputs = append(inputs, string(completion), "", "no calls", "\xff\xfe<tool_call>{\"name\":\"search\",\"arguments\":{\"query\":\"\xff\"}}</tool_call>")
	specs := benchTools(t)
	toolsJSON, _ := os.ReadFile("testdata/parse/tools.json")
	tools, err := parsers.ParseTools(toolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	cache := parseTestCache(t)
	for _, name := range parsers.Names() {
		wp := parseHost(t, cache, name, specs)
		np, _ := parsers.New(name)
		for i, in := range inputs {
			got, err := wp.Parse(context.Background(), in)
			if err != nil {
				t.Fatalf("%s input %d: %v", name, i, err)
			}
			want := np.Parse(in, tools)
			// Compare as decoded JSON: through the ABI (JSON) invalid UTF-8 becomes U+FFFD, as encoding/json
			// does for the native side.
			g, w := mustMarshal(t, got), mustMarshal(t, toABI(&want))
			var gv, wv any
			if json.Unmarshal(g, &gv) != nil || json.Unmarshal(w, &wv) != nil || !reflect.DeepEqual(gv, wv) {
				t.Errorf("%s input %d:\nwasm   %s\nnative %s", name, i, g, w)
			}
		}
	}
}

func toABI(r *parsers.Result) *plugin.ParseResult {
	out := &plugin.ParseResult{NormalText: r.NormalText}
	for _, c := range r.Calls {
		out.Calls = append(out.Calls, abi.ParsedCall{ID: c.ID, Name: c.Name, Arguments: abi.RawJSON(c.Arguments), Span: c.Span})
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, abi.ParseError{Reason: string(e.Reason), Name: e.Name, Message: e.Message, Raw: e.Raw, Span: e.Span})
	}
	return out
}

func mustMarshal(tb testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParseHost measures one parser call through the plugin host (copy in, guest parse, envelope out,
// host-side decode) for a 2 KB Qwen3 completion with two tool calls, and reports p50/p99 per call.
func BenchmarkParseHost(b *testing.B) {
	raw, err := os.ReadFile("../../parsers/testdata/bench_hermes_2k.txt")
	if err != nil {
		b.Fatal(err)
	}
	// The same completion (reasoning, text, the same two calls) in each format.
	for _, format := range []string{"hermes", "qwen3_coder", "seed_oss", "minimax-m2", "deepseekv3", "deepseekv31", "gpt-oss", "pythonic"} {
		b.Run(format, func(b *testing.B) { benchParseHost(b, format, benchText(b, string(raw), format)) })
	}
}

// benchText rewrites the hermes completion's calls in format, as that family's chat template writes them.
func benchText(b *testing.B, hermes, format string) string {
	if format == "hermes" {
		return hermes
	}
	hp, _ := parsers.New("hermes")
	r := hp.Parse(hermes, nil)
	var out strings.Builder
	at := 0
	for i, c := range r.Calls {
		out.WriteString(hermes[at:c.Span[0]])
		at = c.Span[1]
		var args map[string]json.RawMessage
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			b.Fatal(err)
		}
		keys := slices.Sorted(maps.Keys(args))
		value := func(k string) string {
			var s string
			if json.Unmarshal(args[k], &s) == nil {
				return s
			}
			return string(args[k])
		}
		switch format {
		case "qwen3_coder", "seed_oss":
			open, closeTag, nl := "<tool_call>", "</tool_call>", "\n"
			if format == "seed_oss" {
				open, closeTag, nl = "<seed:tool_call>", "</seed:tool_call>", ""
			}
			out.WriteString(open + "\n<function=" + c.Name + ">\n")
			for _, k := range keys {
				out.WriteString("<parameter=" + k + ">" + nl + value(k) + nl + "</parameter>\n")
			}
			out.WriteString("</function>\n" + closeTag)
		case "minimax-m2":
			out.WriteString("<minimax:tool_call>\n<invoke name=\"" + c.Name + "\">")
			for _, k := range keys {
				out.WriteString("<parameter name=\"" + k + "\">" + value(k) + "</parameter>\n")
			}
			out.WriteString("</invoke>\n</minimax:tool_call>")
		case "pythonic": // one list holding both calls; JSON strings and numbers are Python literals too
			if i == 0 {
				out.WriteString("[")
			} else {
				out.WriteString(", ")
			}
			out.WriteString(c.Name + "(")
			for j, k := range keys {
				if j > 0 {
					out.WriteString(", ")
				}
				v := string(args[k])
				if py, ok := map[string]string{"true": "True", "false": "False", "null": "None"}[v]; ok {
					v = py
				}
				out.WriteString(k + "=" + v)
			}
			out.WriteString(")")
			if i == len(r.Calls)-1 {
				out.WriteString("]")
			}
		case "gpt-oss": // the reasoning stays as text: only the calls are harmony messages
			out.WriteString("<|start|>assistant<|channel|>commentary to=functions." + c.Name + " <|constrain|>json<|message|>" + string(c.Arguments) + "<|call|>")
		case "deepseekv3", "deepseekv31":
			if i == 0 {
				out.WriteString("<｜tool▁calls▁begin｜>")
			}
			if format == "deepseekv3" {
				out.WriteString("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + c.Name + "\n```json\n" + string(c.Arguments) + "\n```<｜tool▁call▁end｜>")
			} else {
				out.WriteString("<｜tool▁call▁begin｜>" + c.Name + "<｜tool▁sep｜>" + string(c.Arguments) + "<｜tool▁call▁end｜>")
			}
			if i == len(r.Calls)-1 {
				out.WriteString("<｜tool▁calls▁end｜>")
			}
		}
	}
	out.WriteString(hermes[at:])
	return out.String()
}

func benchParseHost(b *testing.B, format, text string) {
	p := parseHost(b, "", format, benchTools(b))
	ctx := context.Background()
	if r, err := p.Parse(ctx, text); err != nil || len(r.Calls) != 2 || len(r.Errors) != 0 {
		b.Fatalf("%s: %+v %v", format, r, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var lat, cpu []time.Duration
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0, c0 := time.Now(), threadCPU()
		if _, err := p.Parse(ctx, text); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, threadCPU()-c0)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(cpu)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(float64(cpu[len(cpu)/2].Nanoseconds())/1e3, "p50-cpu-us")
}

// TestParseWasmBadConfig: the module refuses a config that names no known parser, and the host reports why.
func TestParseWasmBadConfig(t *testing.T) {
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: parseTestCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, cfg := range []string{`{"parser": "step3"}`, `{}`, `null`} {
		_, err := h.Load(ctx, plugin.Spec{Name: "builtin:parsers", Wasm: parsers.Wasm(), Trusted: true, Config: []byte(cfg), PoolSize: 1})
		if err == nil || !strings.Contains(err.Error(), "hermes") {
			t.Errorf("config %s: load error %v, want one listing the parser names", cfg, err)
		}
	}
}
