package examples_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// The committed example modules (built by scripts/wasm.d/30-sdk-examples.sh).
const (
	stringTools = "c-string-tools/string_tools.wasm"
	wordCount   = "as-word-count/word_count.wasm"
	unitConvert = "rust-unit-convert/unit_convert.wasm"
	reward      = "rust-reward/reward.wasm"
)

// texts exercise the SDKs' JSON decoding and encoding: escapes, control characters, non-ASCII, astral characters
// (UTF-16 surrogate pairs in AssemblyScript), and a 100 KB input that outgrows every initial buffer.
var texts = []string{
	"",
	"hello",
	"The cat and the hat.\nThe END",
	"héllo wörld, Ünïcode",
	"emoji 😀 and 👍🏽 (astral)",
	`quotes "q" and back\slash \n not a newline`,
	"controls \x01\x02\t\r\n\x1f end\n",
	"line\u2028separator \u00a0nbsp",
	"你好 世界 你好",
	strings.Repeat("word Word WORD tail ", 5000),
}

// newHost is a plugin host with an on-disk compilation cache that persists across runs, like Go's build cache:
// compiling a 3 MB Go example costs seconds (ten times that under -race). wazero keys entries on the module bytes,
// its own version and the CPU, so a stale entry is never used.
func newHost(t testing.TB) *plugin.Host {
	t.Helper()
	ctx := context.Background()
	base := os.Getenv("AGENTRT_CACHE")
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		base = filepath.Join(d, "agentrt")
	}
	h, err := plugin.NewHost(ctx, plugin.Config{CacheDir: filepath.Join(base, "wazero-test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// load loads an example sandboxed, as the runtime loads any third-party plugin.
func load(t testing.TB, h *plugin.Host, file string, config string) *plugin.Module {
	t.Helper()
	wasm, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run `make wasm` to build the examples)", err)
	}
	spec := plugin.Spec{Name: file, Wasm: wasm, PoolSize: 2}
	if config != "" {
		spec.Config = []byte(config)
	}
	m, err := h.Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	sum := sha256.Sum256(wasm)
	if got := m.SHA256(); got != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256() = %s, want the file's sha256 %x", got, sum)
	}
	return m
}

func tool(t testing.TB, h *plugin.Host, file string) *plugin.Tool {
	t.Helper()
	tl, err := load(t, h, file, "").Tool()
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestManifests(t *testing.T) {
	h := newHost(t)
	tests := []struct {
		file, kind, name string
		tools, events    []string
	}{
		{stringTools, abi.KindTool, "string_tools", []string{"reverse", "upper"}, nil},
		{wordCount, abi.KindTool, "word_count", []string{"word_count"}, nil},
		{unitConvert, abi.KindTool, "unit_convert", []string{"convert"}, nil},
		{reward, abi.KindHook, "label_reward", nil, []string{abi.EventEpisodeEnd}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m := load(t, h, tt.file, "")
			man := m.Manifest()
			if man.ABIVersion != abi.Version || man.Kind != tt.kind || man.Name != tt.name || man.Version != "1.0.0" {
				t.Errorf("manifest = %d/%s/%s/%s, want %d/%s/%s/1.0.0", man.ABIVersion, man.Kind, man.Name, man.Version,
					abi.Version, tt.kind, tt.name)
			}
			if man.Description == "" {
				t.Error("manifest has no description")
			}
			var tools []string
			for _, s := range man.Tools {
				tools = append(tools, s.Name)
				var schema map[string]any
				if err := json.Unmarshal(s.Parameters, &schema); err != nil || schema["type"] != "object" {
					t.Errorf("tool %s: parameters %s are not an object schema (%v)", s.Name, s.Parameters, err)
				}
			}
			if !slices.Equal(tools, tt.tools) || !slices.Equal(man.Events, tt.events) {
				t.Errorf("tools %v events %v, want %v %v", tools, man.Events, tt.tools, tt.events)
			}
		})
	}
}

func args(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func call(t *testing.T, tl *plugin.Tool, name string, a json.RawMessage) plugin.ToolResult {
	t.Helper()
	r, err := tl.Call(context.Background(), name, a)
	if err != nil {
		t.Fatalf("%s(%.80s): %v", name, a, err)
	}
	return r
}

func wantJSON(t *testing.T, r plugin.ToolResult, want any) {
	t.Helper()
	if r.IsError || r.JSON == nil {
		t.Fatalf("result = %+v, want a JSON result", r)
	}
	got := reflect.New(reflect.TypeOf(want)).Interface()
	dec := json.NewDecoder(strings.NewReader(string(r.JSON)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(got); err != nil {
		t.Fatalf("result %.200s: %v", r.JSON, err)
	}
	if g := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(g, want) {
		t.Errorf("result = %+v, want %+v", g, want)
	}
}

func wantError(t *testing.T, r plugin.ToolResult, code, msg string) {
	t.Helper()
	if !r.IsError || r.ErrorCode != code || !strings.Contains(r.Text, msg) {
		t.Errorf("result = %+v, want an error result %s containing %q", r, code, msg)
	}
}

// TestCStringTools checks the C SDK example against Go's own rune reversal and ASCII upper-casing.
func TestCStringTools(t *testing.T) {
	tl := tool(t, newHost(t), stringTools)
	for i, text := range texts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			runes := []rune(text)
			slices.Reverse(runes)
			r := call(t, tl, "reverse", args(t, map[string]string{"text": text}))
			if r.IsError || r.Text != string(runes) {
				t.Errorf("reverse(%.40q) = %+v, want %.40q", text, r, string(runes))
			}
			changed := 0
			up := strings.Map(func(c rune) rune {
				if c >= 'a' && c <= 'z' {
					changed++
					return c - 'a' + 'A'
				}
				return c
			}, text)
			type upper struct {
				Text    string `json:"text"`
				Changed int    `json:"changed"`
			}
			wantJSON(t, call(t, tl, "upper", args(t, map[string]string{"text": text})), upper{up, changed})
		})
	}
	t.Run("errors", func(t *testing.T) {
		wantError(t, call(t, tl, "reverse", json.RawMessage(`{"text":5}`)), abi.CodeBadInput, `reverse: argument "text" must be a string`)
		wantError(t, call(t, tl, "upper", json.RawMessage(`{}`)), abi.CodeBadInput, `upper: argument "text" must be a string`)
		wantError(t, call(t, tl, "shout", json.RawMessage(`{"text":"x"}`)), abi.CodeUnknownTool, "unknown tool shout")
	})
}

type wordStat struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

type wordCountResult struct {
	Words int        `json:"words"`
	Lines int        `json:"lines"`
	Chars int        `json:"chars"`
	Top   []wordStat `json:"top"`
}

// refWordCount is the Go reference of the word_count tool: words split on space, tab, CR and LF, compared lower-
// cased; the most frequent first, ties in first-seen order; a final newline does not start a line.
func refWordCount(text string, top int) wordCountResult {
	words := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	counts := map[string]int{}
	var order []string
	for _, w := range words {
		w = strings.ToLower(w)
		if counts[w] == 0 {
			order = append(order, w)
		}
		counts[w]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return counts[b] - counts[a] })
	res := wordCountResult{Words: len(words), Chars: utf8.RuneCountInString(text), Top: []wordStat{}}
	if text != "" {
		res.Lines = strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	}
	for i := 0; i < len(order) && i < top; i++ {
		res.Top = append(res.Top, wordStat{order[i], counts[order[i]]})
	}
	return res
}

// TestASWordCount checks the AssemblyScript SDK example against a Go reference implementation.
func TestASWordCount(t *testing.T) {
	tl := tool(t, newHost(t), wordCount)
	for i, text := range texts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			wantJSON(t, call(t, tl, "word_count", args(t, map[string]any{"text": text})), refWordCount(text, 3))
			wantJSON(t, call(t, tl, "word_count", args(t, map[string]any{"text": text, "top": 1})), refWordCount(text, 1))
		})
	}
	t.Run("errors", func(t *testing.T) {
		wantError(t, call(t, tl, "word_count", json.RawMessage(`{"text":["a"]}`)), abi.CodeBadInput, `argument "text" must be a string`)
		wantError(t, call(t, tl, "word_count", json.RawMessage(`{"text":"a","top":-1}`)), abi.CodeBadInput, `argument "top" must be an integer >= 0`)
		wantError(t, call(t, tl, "word_count", json.RawMessage(`{"text":"a","top":1.5}`)), abi.CodeBadInput, `argument "top" must be an integer >= 0`)
		wantError(t, call(t, tl, "count", json.RawMessage(`{}`)), abi.CodeUnknownTool, `unknown tool "count"`)
	})
}

// TestRustUnitConvert checks the Rust SDK example against the conversion factors computed in Go.
func TestRustUnitConvert(t *testing.T) {
	tl := tool(t, newHost(t), unitConvert)
	type converted struct {
		Value float64 `json:"value"`
		Unit  string  `json:"unit"`
	}
	// mul runs at run time in float64, as the guest does (a Go constant expression would be exact).
	mul := func(v, from, to float64) float64 { return v * from / to }
	tests := []struct {
		value    float64
		from, to string
		want     float64
	}{
		{100, "C", "F", 212},
		{-40, "F", "C", -40},
		{0, "K", "C", -273.15},
		{3.5, "mi", "km", mul(3.5, 1609.344, 1000)},
		{12, "in", "ft", mul(12, 0.0254, 0.3048)},
		{1, "lb", "g", mul(1, 0.45359237, 0.001)},
		{16, "oz", "lb", mul(16, 0.028349523125, 0.45359237)},
		{1e-300, "mm", "km", mul(1e-300, 0.001, 1000)},
		{0.1, "m", "cm", mul(0.1, 1, 0.01)},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%v %s->%s", tt.value, tt.from, tt.to)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := call(t, tl, "convert", args(t, map[string]any{"value": tt.value, "from": tt.from, "to": tt.to}))
			wantJSON(t, r, converted{tt.want, tt.to})
		})
	}
	t.Run("errors", func(t *testing.T) {
		wantError(t, call(t, tl, "convert", json.RawMessage(`{"value":"1","from":"m","to":"km"}`)), abi.CodeBadInput, `convert: argument "value" must be a number`)
		wantError(t, call(t, tl, "convert", json.RawMessage(`{"value":1,"from":"kg","to":"km"}`)), abi.CodeBadInput, "cannot convert kg (mass) to km (length)")
		wantError(t, call(t, tl, "convert", json.RawMessage(`{"value":1,"from":"parsec","to":"km"}`)), abi.CodeBadInput, `unknown unit "parsec"; known units: m, km`)
		wantError(t, call(t, tl, "convert", json.RawMessage(`{"value":-300,"from":"C","to":"K"}`)), abi.CodeBadInput, "below absolute zero")
		wantError(t, call(t, tl, "convert", json.RawMessage(`{"value":1,"from":"m"}`)), abi.CodeBadInput, `argument "to" must be a string`)
	})
}

func f64(v float64) *float64 { return &v }

// TestMalformedInput sends each tool example raw inputs that the host never sends (agentrt_call takes any bytes):
// the SDKs must answer with a bad_input error envelope, not trap or hang, whatever the bytes.
func TestMalformedInput(t *testing.T) {
	h := newHost(t)
	inputs := []string{
		"",
		"not json",
		`{"name":"x"`,
		`[1,2]`,
		`{"name":"reverse","arguments":{"text":"unterminated}}`,
		`{"name":"reverse","arguments":{"text":"bad \q escape"}}`,
		`{"name":"reverse","arguments":{"text":"x"}} trailing`,
		strings.Repeat("[", 100000),
		`{"name":` + strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000) + "}",
	}
	for _, file := range []string{stringTools, wordCount, unitConvert, "c-repeat/repeat.wasm", "rust-repeat/repeat.wasm", "as-repeat/repeat.wasm"} {
		t.Run(file, func(t *testing.T) {
			m := load(t, h, file, "")
			for _, in := range inputs {
				out, err := m.CallRaw(context.Background(), []byte(in))
				if err != nil {
					t.Errorf("input %.40q: %v", in, err)
					continue
				}
				var env struct {
					Error *abi.Error `json:"error"`
				}
				if err := json.Unmarshal(out, &env); err != nil || env.Error == nil || env.Error.Code != abi.CodeBadInput || env.Error.Message == "" {
					t.Errorf("input %.40q: output %.200s, want a bad_input error envelope", in, out)
				}
			}
			if m.Replaced() != 0 {
				t.Errorf("%d instances were replaced, want 0", m.Replaced())
			}
		})
	}
}

// TestSDKHooks checks the hook side of every SDK with one test plugin each (testdata/hook*): subscriptions, the
// reward, metrics and state at episode_end, cancel_tool and stop at before_tool_call, an error envelope as a
// *GuestError, and a refused config failing the load.
func TestSDKHooks(t *testing.T) {
	h := newHost(t)
	idx := func(i int) *abi.Event {
		return &abi.Event{Event: abi.EventBeforeToolCall, EpisodeID: "ep", Turn: 1,
			ToolCall: &abi.ToolCall{Name: "search", Arguments: abi.RawJSON(`{}`), Index: &i}}
	}
	end := &abi.Event{Event: abi.EventEpisodeEnd, EpisodeID: "ep", Turn: 3, Status: abi.StatusCompleted,
		Counts: abi.Counts{ToolCalls: 4}}
	for _, file := range []string{"testdata/hook_c.wasm", "testdata/hook_rust.wasm", "testdata/hook_as.wasm"} {
		t.Run(file, func(t *testing.T) {
			ctx := context.Background()
			hk, err := load(t, h, file, `{"any":"table"}`).Hook()
			if err != nil {
				t.Fatal(err)
			}
			if got := hk.Events(); !slices.Equal(got, []string{abi.EventEpisodeEnd, abi.EventBeforeToolCall}) {
				t.Errorf("Events() = %v", got)
			}
			tests := []struct {
				name string
				ev   *abi.Event
				want abi.HookResponse
			}{
				{"episode_end", end, abi.HookResponse{Reward: f64(1), Metrics: map[string]float64{"turns": 3}, State: abi.RawJSON(`{"n":4}`)}},
				{"first call", idx(0), abi.HookResponse{}},
				{"second call", idx(1), abi.HookResponse{CancelTool: ptr("one call per turn")}},
				{"sixth call", idx(5), abi.HookResponse{CancelTool: ptr("one call per turn"), Stop: &abi.Stop{Reason: "too_many", Message: "stop now"}}},
				{"not subscribed", &abi.Event{Event: abi.EventMessageAdded}, abi.HookResponse{}},
			}
			for _, tt := range tests {
				got, err := hk.Handle(ctx, tt.ev)
				if err != nil {
					t.Errorf("%s: %v", tt.name, err)
					continue
				}
				if !reflect.DeepEqual(got, tt.want) {
					gs, _ := json.Marshal(got)
					ws, _ := json.Marshal(tt.want)
					t.Errorf("%s: response %s, want %s", tt.name, gs, ws)
				}
			}
			_, err = hk.Handle(ctx, idx(9))
			var ge *plugin.GuestError
			if !errors.As(err, &ge) || ge.Code != "too_far" || !strings.HasPrefix(ge.Message, "tool call index 9") {
				t.Errorf("index 9: error %v, want a *GuestError too_far", err)
			}
			wasm, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.Load(ctx, plugin.Spec{Name: file, Wasm: wasm, Config: []byte(`[1]`), PoolSize: 1})
			var le *plugin.LoadError
			if !errors.As(err, &le) || !errors.As(err, &ge) || ge.Code != abi.CodeBadConfig || ge.Message != "config must be a table" {
				t.Errorf("load with config [1]: error %v, want a *LoadError wrapping a bad_config *GuestError", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSDKFaults checks what each SDK does when the plugin crashes, and its log import: a crash is a *TrapError
// (Rust: the panic message from stderr; AssemblyScript: the abort message logged at error level), the instance is
// replaced and the next call works; agentrt_v1.log lands in the host's logger tagged with the plugin.
func TestSDKFaults(t *testing.T) {
	tests := []struct {
		file, lang string
		trapStderr string // in TrapError.Stderr
		trapLog    string // in the host log
	}{
		{"testdata/fault_c.wasm", "c", "", ""},
		{"testdata/fault_rust.wasm", "rust", "panicked at 'index out of bounds: the len is 0 but the index is 5'", ""},
		{"testdata/fault_as.wasm", "as", "", "abort: Index out of range at ~lib/array.ts"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			ctx := context.Background()
			var logs bytes.Buffer
			h, err := plugin.NewHost(ctx, plugin.DefaultConfig(), plugin.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(ctx)
			wasm, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			m, err := h.Load(ctx, plugin.Spec{Name: tt.file, Wasm: wasm, PoolSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := m.Tool()
			if err != nil {
				t.Fatal(err)
			}
			_, err = tl.Call(ctx, "fault", json.RawMessage(`{"mode":"trap"}`))
			var te *plugin.TrapError
			if !errors.As(err, &te) || te.Func != abi.FuncCall || !strings.Contains(te.Stderr, tt.trapStderr) {
				t.Fatalf("trap: error %v, want a *TrapError in %s with stderr containing %q", err, abi.FuncCall, tt.trapStderr)
			}
			if !strings.Contains(logs.String(), tt.trapLog) {
				t.Errorf("host log %q does not contain %q", logs.String(), tt.trapLog)
			}
			if r := call(t, tl, "fault", json.RawMessage(`{"mode":"log"}`)); r.IsError || r.Text != "logged" {
				t.Errorf("call after the trap = %+v, want text logged", r)
			}
			if m.Replaced() != 1 {
				t.Errorf("Replaced() = %d, want 1", m.Replaced())
			}
			want := "level=WARN msg=\"fault: log from " + tt.lang + "\" plugin=fault_" + map[string]string{"as": "as", "c": "c", "rust": "rust"}[tt.lang]
			if !strings.Contains(logs.String(), want) {
				t.Errorf("host log %q does not contain %q", logs.String(), want)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// benchCases are small, typical calls of each example tool.
var benchCases = []struct{ file, tool, args string }{
	{stringTools, "reverse", `{"text":"hello world"}`},
	{wordCount, "word_count", `{"text":"the quick brown fox jumps over the lazy dog"}`},
	{unitConvert, "convert", `{"value":3.5,"from":"mi","to":"km"}`},
	{"c-repeat/repeat.wasm", "repeat", `{"text":"hi","times":3}`},
	{"rust-repeat/repeat.wasm", "repeat", `{"text":"hi","times":3}`},
	{"as-repeat/repeat.wasm", "repeat", `{"text":"hi","times":3}`},
	{"go-repeat/repeat.wasm", "repeat", `{"text":"hi","times":3}`},
}

// BenchmarkToolCall measures one host->guest->host tool call of each example with a small input: the SDK's JSON
// decoding and encoding plus the host's envelope handling, sandboxed (how third-party plugins run: per-call
// deadline) and trusted (how built-ins run).
func BenchmarkToolCall(b *testing.B) {
	h := newHost(b)
	for _, bc := range benchCases {
		for _, trusted := range []bool{false, true} {
			mode := map[bool]string{false: "sandboxed", true: "trusted"}[trusted]
			b.Run(bc.file+"/"+mode, func(b *testing.B) {
				wasm, err := os.ReadFile(bc.file)
				if err != nil {
					b.Fatal(err)
				}
				m, err := h.Load(context.Background(), plugin.Spec{Name: bc.file, Wasm: wasm, Trusted: trusted, PoolSize: 1})
				if err != nil {
					b.Fatal(err)
				}
				tl, err := m.Tool()
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if r, err := tl.Call(ctx, bc.tool, json.RawMessage(bc.args)); err != nil || r.IsError {
						b.Fatal(r, err)
					}
				}
			})
		}
	}
}

// BenchmarkLoad measures loading each example into a fresh host with an in-memory cache: compile, check, one
// instance (_initialize, ABI version, manifest, init).
func BenchmarkLoad(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.file, func(b *testing.B) {
			wasm, err := os.ReadFile(bc.file)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				h, err := plugin.NewHost(ctx, plugin.DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Load(ctx, plugin.Spec{Name: bc.file, Wasm: wasm, PoolSize: 1}); err != nil {
					b.Fatal(err)
				}
				_ = h.Close(ctx)
			}
		})
	}
}
