package jsonw_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/jsonw"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

// TestAppendStringPolicy pins each rule of the package doc's string policy.
func TestAppendStringPolicy(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain text, 0123456789", `"plain text, 0123456789"`},
		{`"quoted" \ back`, `"\"quoted\" \\ back"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"<a href=x>&amp;</a>", `"<a href=x>&amp;</a>"`},
		{"line\u2028para\u2029end", "\"line\u2028para\u2029end\""},
		{"é 東京 😀", `"é 東京 😀"`},
		{"bad \xff\xfe and cut \xe2\x82", `"bad \ufffd\ufffd and cut \ufffd\ufffd"`},
		{"a long run of plain ASCII that the word-at-a-time path takes 8 bytes at a time\n", `"a long run of plain ASCII that the word-at-a-time path takes 8 bytes at a time\n"`},
	} {
		if got := string(jsonw.AppendString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := string(jsonw.AppendString([]byte(`{"k":`), "v")); got != `{"k":"v"` {
		t.Errorf("AppendString after a prefix = %s", got)
	}
	// A byte that needs attention at every offset of an 8-byte word, after and before plain runs (the word-at-a-time
	// scan jumps to the first one).
	for k := 0; k < 24; k++ {
		for _, c := range []string{`"`, `\`, "\n", "\x00", "\x1f", "é", "\xff"} {
			s := strings.Repeat("p", k) + c + strings.Repeat("q", 24-k) + c
			if got, want := jsonw.AppendString(nil, s), wantString(t, s); !bytes.Equal(got, want) {
				t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
			}
		}
	}
}

// TestAppendFloatPolicy pins the float policy: encoding/json's forms, -0.0, null for what JSON cannot carry.
func TestAppendFloatPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1"}, {-0.5, "-0.5"}, {100, "100"}, {0.1, "0.1"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {-1.5e-9, "-1.5e-9"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"},
		{123456789.125, "123456789.125"}, {math.MaxFloat64, "1.7976931348623157e+308"}, {5e-324, "5e-324"},
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
	} {
		if got := string(jsonw.AppendFloat(nil, tc.in)); got != tc.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestAppendInts: the extremes of each width, empty and nil lists, after a prefix, and across the slice growing.
func TestAppendInts(t *testing.T) {
	if got := string(jsonw.AppendInts([]byte("x"), []int32{0, 7, -7, 10, 151645, math.MaxInt32, math.MinInt32})); got != "x[0,7,-7,10,151645,2147483647,-2147483648]" {
		t.Errorf("int32s: %s", got)
	}
	if got := string(jsonw.AppendInts(nil, []int64{math.MaxInt64, math.MinInt64, -1})); got != "[9223372036854775807,-9223372036854775808,-1]" {
		t.Errorf("int64s: %s", got)
	}
	if got := string(jsonw.AppendInts(nil, []uint8{0, 1, 255})); got != "[0,1,255]" {
		t.Errorf("uint8s: %s", got)
	}
	if got := string(jsonw.AppendInts(nil, []int32{})) + string(jsonw.AppendInts(nil, []int(nil))); got != "[][]" {
		t.Errorf("empty and nil: %s", got)
	}
	long := make([]int64, 3000)
	for i := range long {
		long[i] = int64(i*i*i) * int64(1-2*(i%2)) * 1e6
	}
	want, _ := json.Marshal(long)
	if got := jsonw.AppendInts(make([]byte, 0, 3), long); !bytes.Equal(got, want) {
		t.Errorf("3000 int64s differ from encoding/json's")
	}
}

// TestIntList: an IntList's array is AppendInts' whatever the lists given, kept where a list extends the last one
// (only the new integers written), written anew where it does not (shorter, or an integer changed), and the bytes
// it returned before never change.
func TestIntList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l jsonw.IntList[int32]
	var xs []int32
	type given struct{ open, want []byte }
	var earlier []given
	for step := range 2000 {
		wantReused := len(xs)
		switch op := rng.IntN(10); {
		case op < 6: // extend (the common case: a conversation's next turn)
			for range rng.IntN(50) {
				xs = append(xs, int32(rng.IntN(300000))-1000)
			}
		case op == 6: // the same list again (a retry)
		case op == 7 && len(xs) > 0: // shorter
			xs = slices.Clone(xs[:rng.IntN(len(xs))])
			wantReused = 0
		case op == 8 && len(xs) > 0: // one integer changed in place, then extended
			xs[rng.IntN(len(xs))] ^= 1
			xs = append(xs, 7)
			wantReused = 0
		case op == 9: // empty
			xs = xs[:0]
			wantReused = 0
		}
		open, reused := l.Open(xs)
		want := jsonw.AppendInts(nil, xs)
		if got := append(slices.Clone(open), ']'); !bytes.Equal(got, want) {
			t.Fatalf("step %d: Open(%d ints) = %.80s..., AppendInts writes %.80s...", step, len(xs), got, want)
		}
		if reused != wantReused {
			t.Fatalf("step %d: reused %d of %d ints, want %d", step, reused, len(xs), wantReused)
		}
		earlier = append(earlier, given{open, want[:len(want)-1]})
		for i, g := range earlier {
			if !bytes.Equal(g.open, g.want) {
				t.Fatalf("step %d: the bytes Open returned at step %d changed", step, i)
			}
		}
		if len(earlier) > 20 {
			earlier = earlier[1:]
		}
	}
}

// TestIntListExtend: Extend, given append-only lists (elements never changed once given), writes AppendInts' array
// and keeps it where a list extends the last one: at the same address without comparing (a list grown in place),
// elsewhere when equal (the caller's array moved); anew when shorter or different; the bytes it returned before
// never change. It trusts its contract: a list changed in place at the same address keeps the old array, which is
// why only append-only callers may use it. Mixed with Open, each starts its own array.
func TestIntListExtend(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var l jsonw.IntList[int32]
	var xs, prev []int32 // xs grows by append only; a shorter or changed list is a new slice (as tito.Trajectory does)
	// extends is what a compared list reuses: all of prev's integers when xs begins with them
	extends := func(xs, prev []int32) int {
		if len(prev) > 0 && len(prev) <= len(xs) && slices.Equal(prev, xs[:len(prev)]) {
			return len(prev)
		}
		return 0
	}
	type given struct{ open, want []byte }
	var earlier []given
	for step := range 3000 {
		wantReused := len(xs)
		switch op := rng.IntN(12); {
		case op < 6: // extend, in place while the capacity lasts, then moved (append's growth)
			for range rng.IntN(80) {
				xs = append(xs, int32(rng.IntN(300000)))
			}
		case op == 6: // the same list again (a retry)
		case op == 7: // moved, same integers, then extended
			xs = append(slices.Clone(xs), 5)
		case op == 8 && len(xs) > 0: // shorter, capacity clipped (DropPending), then extended: a new array
			k := rng.IntN(len(xs))
			xs = append(xs[:k:k], -1)
			wantReused = extends(xs, prev)
		case op == 9 && len(xs) > 0: // a changed copy (another conversation)
			xs = slices.Clone(xs)
			xs[rng.IntN(len(xs))] ^= 1
			wantReused = extends(xs, prev)
		case op == 10: // Open in between: both start anew
			l.Open([]int32{1, 2, 3})
			wantReused = 0
		case op == 11: // empty
			xs = nil
			wantReused = 0
		}
		open, reused := l.Extend(xs)
		prev = slices.Clone(xs)
		want := jsonw.AppendInts(nil, xs)
		if got := append(slices.Clone(open), ']'); !bytes.Equal(got, want) {
			t.Fatalf("step %d: Extend(%d ints) = %.80s..., AppendInts writes %.80s...", step, len(xs), got, want)
		}
		if reused != wantReused {
			t.Fatalf("step %d: reused %d of %d ints, want %d", step, reused, len(xs), wantReused)
		}
		earlier = append(earlier, given{open, want[:len(want)-1]})
		for i, g := range earlier {
			if !bytes.Equal(g.open, g.want) {
				t.Fatalf("step %d: the bytes Extend returned at step %d changed", step, i)
			}
		}
		if len(earlier) > 20 {
			earlier = earlier[1:]
		}
	}

	// The contract is trusted at the same address: a list changed in place (forbidden) is not compared.
	ys := make([]int32, 3, 10)
	ys[0], ys[1], ys[2] = 1, 2, 3
	var m jsonw.IntList[int32]
	m.Extend(ys)
	ys[0] = 7
	if open, reused := m.Extend(append(ys, 4)); string(open) != "[1,2,3,4" || reused != 3 {
		t.Errorf("changed in place at the same address: Extend = %s, %d; want the kept [1,2,3,4 (not compared), 3", open, reused)
	}
	// Elsewhere it compares: the same change in a moved list starts anew.
	zs := slices.Clone(ys[:4])
	zs[1] = 8
	if open, reused := m.Extend(zs); string(open) != "[7,8,3,4" || reused != 0 {
		t.Errorf("changed in a moved list: Extend = %s, %d; want [7,8,3,4, 0", open, reused)
	}
}

// seeds are strings that exercise every branch of AppendString, and the fuzz corpus's start.
var seeds = []string{
	"", "a", `"\`, "\x00\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "\xff\xfe", "\xe2\x80", "\xed\xa0\x80", "é😀",
	"<>&", "0123456789abcdef\"0123456789abcdef\\01234567", "01234567\x80", "Grüße aus Köln, 東京 and more text",
	"\\u2028 is not U+2028",
}

// TestMatchesPluginSDK holds the Go plugin SDK's copy (fastjson.AppendQuote, guest code that cannot import an
// internal package) to AppendString byte for byte; FuzzAppend does the same on random strings.
func TestMatchesPluginSDK(t *testing.T) {
	for _, s := range seeds {
		if got, want := fastjson.AppendQuote(nil, s), jsonw.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("fastjson.AppendQuote(%q) = %s, jsonw.AppendString %s", s, got, want)
		}
	}
}

// encodingJSON is encoding/json's encoding of v with HTML escaping off.
func encodingJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// wantString is what the policy writes for s: encoding/json's output (HTML escaping off) with U+2028 and U+2029
// left as they are. s is split at them (a valid 3-byte sequence is decoded as one wherever the split falls, so
// the pieces decode as the whole did) and each piece encoded by encoding/json.
func wantString(t *testing.T, s string) []byte {
	out := []byte{'"'}
	for {
		i := strings.IndexFunc(s, func(r rune) bool { return r == '\u2028' || r == '\u2029' })
		piece := s
		if i >= 0 {
			piece = s[:i]
		}
		q := encodingJSON(t, piece)
		out = append(out, q[1:len(q)-1]...)
		if i < 0 {
			return append(out, '"')
		}
		out = append(out, s[i:i+3]...)
		s = s[i+3:]
	}
}

// FuzzAppend holds jsonw to encoding/json on random input: a string is written byte for byte as encoding/json
// writes it under the policy (and as the plugin SDK's copy writes it), and decodes to what encoding/json decodes
// its own output to; the same string is a number for NumberEnd exactly when it is one for encoding/json; a float
// decodes to the same bits (and is encoding/json's text but for -0.0 and null); a list of integers, read from the
// bytes as int32s, int64s and uint8s, is encoding/json's text.
func FuzzAppend(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, float64(i)*-0.37e-5, []byte(s))
	}
	f.Add("x", math.Copysign(0, -1), []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0x80})
	f.Add("y", math.Inf(-1), []byte{})
	for _, n := range []string{"-0.5e+10", "01", "1.", "1e", "-", "12345678901234567890", "1.5E-3 "} {
		f.Add(n, 0.0, []byte(nil))
	}
	f.Fuzz(func(t *testing.T, s string, x float64, raw []byte) {
		checkString(t, s)
		checkNumber(t, s)
		checkFloat(t, x)
		checkInts(t, raw)
	})
}

func checkString(t *testing.T, s string) {
	got := jsonw.AppendString([]byte("prefix"), s)
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("AppendString(%q) lost the prefix: %s", s, got)
	}
	got = got[len("prefix"):]
	if want := wantString(t, s); !bytes.Equal(got, want) {
		t.Fatalf("AppendString(%q) = %s, want %s (encoding/json's but for U+2028/U+2029)", s, got, want)
	}
	if sdk := fastjson.AppendQuote(nil, s); !bytes.Equal(sdk, got) {
		t.Fatalf("fastjson.AppendQuote(%q) = %s, jsonw.AppendString %s", s, sdk, got)
	}
	var back, own string
	if err := json.Unmarshal(got, &back); err != nil || !utf8.Valid(got) {
		t.Fatalf("AppendString(%q) = %s is not valid JSON: %v", s, got, err)
	}
	if err := json.Unmarshal(encodingJSON(t, s), &own); err != nil || back != own {
		t.Fatalf("AppendString(%q) decodes to %q, encoding/json's own output to %q", s, back, own)
	}
}

func checkFloat(t *testing.T, x float64) {
	fb := jsonw.AppendFloat(nil, x)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		if string(fb) != "null" {
			t.Fatalf("AppendFloat(%v) = %s, want null", x, fb)
		}
	} else {
		var y float64
		if err := json.Unmarshal(fb, &y); err != nil || math.Float64bits(y) != math.Float64bits(x) {
			t.Fatalf("AppendFloat(%v) = %s decodes to %v (%v)", x, fb, y, err)
		}
		if want := encodingJSON(t, x); x != 0 && !bytes.Equal(fb, want) {
			t.Fatalf("AppendFloat(%v) = %s, encoding/json writes %s", x, fb, want)
		}
	}
}

func checkInts(t *testing.T, raw []byte) {
	i32 := make([]int32, len(raw)/4)
	i64 := make([]int64, len(raw)/8)
	for i := range i32 {
		i32[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	for i := range i64 {
		i64[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	u8 := make([]int, len(raw))
	for i, c := range raw {
		u8[i] = int(c)
	}
	for _, tc := range []struct {
		got []byte
		v   any
	}{{jsonw.AppendInts(nil, i32), i32}, {jsonw.AppendInts(nil, i64), i64}, {jsonw.AppendInts(nil, raw), u8}} {
		if want := encodingJSON(t, tc.v); !bytes.Equal(tc.got, want) {
			t.Fatalf("AppendInts(%v) = %s, encoding/json writes %s", tc.v, tc.got, want)
		}
	}
}

// Benchmarks of the primitives at the sizes of their hot callers (a 2k-token prompt, a 2 KB completion).
func BenchmarkAppendInts2k(b *testing.B) {
	ids := make([]int32, 2000)
	for i := range ids {
		ids[i] = int32(100 + 397*i%151000)
	}
	buf := jsonw.AppendInts(nil, ids)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = jsonw.AppendInts(buf[:0], ids)
	}
}

func BenchmarkAppendString2KB(b *testing.B) {
	s := strings.Repeat("Let me call the tool.\n<tool_call>\n{\"name\": \"x\"}\n</tool_call>\n", 40)[:2048]
	buf := jsonw.AppendString(nil, s)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = jsonw.AppendString(buf[:0], s)
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		buf = jsonw.AppendFloat(buf[:0], -0.0123456789)
	}
}

// checkNumber holds NumberEnd to encoding/json's grammar (and the plugin SDK's copy, through fastjson.Valid): s
// is one whole number exactly when encoding/json takes it as a JSON text that starts with '-' or a digit and has
// no surrounding space; a number NumberEnd finds at the start of s is valid JSON on its own.
func checkNumber(t *testing.T, s string) {
	end, integer, ok := jsonw.NumberEnd(s, 0)
	whole := ok && end == len(s)
	numberLike := len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && s == strings.TrimSpace(s)
	want, sdk := numberLike && json.Valid([]byte(s)), numberLike && fastjson.Valid([]byte(s))
	if whole != want || sdk != want {
		t.Fatalf("NumberEnd(%q) = %d, %v, %v; encoding/json says whole number %v, fastjson %v", s, end, integer, ok, want, sdk)
	}
	if whole && integer == strings.ContainsAny(s, ".eE") {
		t.Fatalf("NumberEnd(%q): integer %v", s, integer)
	}
	if ok && !json.Valid([]byte(s[:end])) || !ok && end > len(s) {
		t.Fatalf("NumberEnd(%q) = %d, %v, %v: not a number's end", s, end, integer, ok)
	}
	if b, _, bok := jsonw.NumberEnd([]byte(s), 0); b != end || bok != ok {
		t.Fatalf("NumberEnd([]byte(%q)) = %d, %v; on the string %d, %v", s, b, bok, end, ok)
	}
}

func TestNumberEnd(t *testing.T) {
	for _, tc := range []struct {
		in      string
		end     int
		integer bool
		ok      bool
	}{
		{"0", 1, true, true}, {"-12,", 3, true, true}, {"1.5]", 3, false, true}, {"-0.0e+10}", 8, false, true},
		{"1E3", 3, false, true}, {"01", 1, true, true}, {"", 0, false, false}, {"-", 1, false, false},
		{"-x", 1, false, false}, {"1.", 2, false, false}, {"1.e5", 2, false, false}, {"1e", 2, false, false},
		{"1e+", 3, false, false}, {"1e+x", 3, false, false}, {".5", 0, false, false}, {"+1", 0, false, false},
	} {
		end, integer, ok := jsonw.NumberEnd(tc.in, 0)
		if end != tc.end || integer != tc.integer || ok != tc.ok {
			t.Errorf("NumberEnd(%q) = %d, %v, %v; want %d, %v, %v", tc.in, end, integer, ok, tc.end, tc.integer, tc.ok)
		}
		checkNumber(t, tc.in)
	}
}

// FuzzUnquote holds Unquote to encoding/json: a literal that encoding/json decodes, Unquote reads whole to the same
// value, and one that Unquote reads whole, encoding/json decodes.
func FuzzUnquote(f *testing.F) {
	for _, s := range append(seeds, `\"\\\/\b\f\n\r\t`, `\u00e9\ud83d\ude00`, `\ud800`, `\ud800\u0041`, `\udc00\ud800`, `\ud800\ude0`, `\x`, "\x01", `\u12`) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lit := []byte(`"` + body + `"`)
		var want string
		werr := json.Unmarshal(lit, &want)
		got, end, ok := jsonw.Unquote(lit)
		whole := ok && end == len(lit)
		if werr == nil && (!whole || got != want) {
			t.Fatalf("Unquote(%q) = %q, %d, %v; encoding/json: %q", lit, got, end, ok, want)
		}
		if whole && werr != nil {
			t.Fatalf("Unquote(%q) = %q, but encoding/json refuses it: %v", lit, got, werr)
		}
	})
}

// BenchmarkIntListTurn: one turn of a 118k-id conversation's kept array (60 ids more than the last turn): Open
// compares the kept ids with the list (memory-speed, ~470 KB each side), Extend takes them uncompared where the
// list grew in place. The difference is what IDsAppendOnly saves a turn; it grows with the context, the rest not.
func BenchmarkIntListTurn(b *testing.B) {
	const ctx, turns = 118000, 200
	ids := make([]int32, ctx+60*turns)
	for i := range ids {
		ids[i] = int32(100 + 397*i%151000)
	}
	for _, mode := range []string{"open", "extend"} {
		b.Run(mode, func(b *testing.B) {
			var l jsonw.IntList[int32]
			turn := 0
			for b.Loop() {
				if turn%turns == 0 {
					b.StopTimer()
					l = jsonw.IntList[int32]{}
					if mode == "open" { // the conversation's first request (all of it written), outside the timer
						l.Open(ids[:ctx:ctx])
					} else {
						l.Extend(ids[:ctx:ctx])
					}
					turn = 1
					b.StartTimer()
				}
				n := ctx + 60*turn
				if mode == "open" {
					l.Open(ids[:n:n])
				} else {
					l.Extend(ids[:n:n])
				}
				turn++
			}
		})
	}
}
