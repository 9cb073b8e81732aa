package fastjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

var seeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+10`, `"a\u00e9\ud83d\ude00\n"`, `{"a":1,"b":[1,2,{"c":null}]}`,
	` { "k" : "v" } `, `{"a":1,}`, `[1,]`, `01`, `1.`, `"\x"`, `"unterminated`, `{"a" 1}`, `tru`, `"\ud800"`,
	`{"name":"get_weather","arguments":{"city":"Paris","days":3}}`, "\"tab\there\"", `[[[[[]]]]]`, `1e`, `-`, `"é"`,
	`"0123456789abcdef\"0123456789abcdef\\0123456789"`, "\"0123456789abcdef\x1f01234567\"", `"Grüße aus Köln, 東京 and more text"`,
	"\"01234567\x7f\x80\xff0123456789\"", `"0123456789abcde"x`,
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		if got, want := fastjson.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := fastjson.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

func FuzzQuoteRoundTrip(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add("\u2028<>&\x00\x1f\xff")
	f.Fuzz(func(t *testing.T, s string) {
		q := fastjson.AppendQuote(nil, s)
		var back string
		if err := json.Unmarshal(q, &back); err != nil {
			t.Fatalf("AppendQuote(%q) = %s: not valid JSON: %v", s, q, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if utf8.ValidString(s) && back != s || back != want && !utf8.ValidString(s) && back != string([]rune(s)) {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
		got, err := fastjson.Unquote(q)
		if err != nil || got != back {
			t.Fatalf("Unquote(%s) = %q, %v; encoding/json says %q", q, got, err, back)
		}
	})
}

func FuzzUnquote(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) == 0 || b[0] != '"' || !json.Valid(b) {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Skip()
		}
		got, err := fastjson.String(b)
		if err != nil || got != want {
			t.Fatalf("Unquote(%s) = %q, %v; encoding/json says %q", s, got, err, want)
		}
	})
}

func TestGet(t *testing.T) {
	obj := []byte(`{"id":"c1", "name" : "calc", "arguments":{"expression":"1+2"}, "n": 3, "f": 1.5, "b": true, "z": null, "k\u0065y": "esc", "name": "last"}`)
	tests := []struct {
		key, want string
		wantErr   error
	}{
		{"id", `"c1"`, nil},
		{"name", `"last"`, nil},
		{"arguments", `{"expression":"1+2"}`, nil},
		{"key", `"esc"`, nil},
		{"missing", "", fastjson.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := fastjson.Get(obj, tt.key)
		if !errors.Is(err, tt.wantErr) || string(got) != tt.want {
			t.Errorf("Get(%q) = %s, %v; want %s, %v", tt.key, got, err, tt.want, tt.wantErr)
		}
	}
	n, _ := fastjson.Get(obj, "n")
	if v, err := fastjson.Int(n); err != nil || v != 3 {
		t.Errorf("Int = %d, %v", v, err)
	}
	f, _ := fastjson.Get(obj, "f")
	if v, err := fastjson.Float(f); err != nil || v != 1.5 {
		t.Errorf("Float = %v, %v", v, err)
	}
	if v, err := fastjson.Int(f); err == nil {
		t.Errorf("Int(1.5) = %d, want an error", v)
	}
	b, _ := fastjson.Get(obj, "b")
	if v, err := fastjson.Bool(b); err != nil || !v {
		t.Errorf("Bool = %v, %v", v, err)
	}
	z, _ := fastjson.Get(obj, "z")
	if !fastjson.IsNull(z) {
		t.Errorf("IsNull(%s) = false", z)
	}
	if _, err := fastjson.Get([]byte(`{"a":}`), "a"); err == nil {
		t.Error("Get on invalid JSON: no error")
	}
	if _, err := fastjson.Get([]byte(`[1]`), "a"); err == nil {
		t.Error("Get on an array: no error")
	}
}

func TestEachElem(t *testing.T) {
	var got [][]byte
	err := fastjson.EachElem([]byte(` [1, "two", {"three":3}, [4]] `), func(v []byte) bool {
		got = append(got, v)
		return true
	})
	want := [][]byte{[]byte(`1`), []byte(`"two"`), []byte(`{"three":3}`), []byte(`[4]`)}
	if err != nil || len(got) != len(want) {
		t.Fatalf("EachElem = %q, %v", got, err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("elem %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestCheckNamesOffset(t *testing.T) {
	err := fastjson.Check([]byte(`{"a": [1, 2,, 3]}`))
	var se *fastjson.SyntaxError
	if !errors.As(err, &se) || se.Offset != 12 {
		t.Fatalf("Check = %v, want a SyntaxError at offset 12", err)
	}
	if err := fastjson.Check([]byte(`{} x`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	deep := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	if fastjson.Valid([]byte(deep)) {
		t.Fatal("2000-deep nesting accepted; want the depth limit")
	}
}

func BenchmarkAppendQuote2KB(b *testing.B) {
	s := strings.Repeat("Let me call the tool.\n<tool_call>\n{\"name\": \"x\"}\n</tool_call>\n", 40)[:2048]
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = fastjson.AppendQuote(buf[:0], s)
	}
}

func BenchmarkSkipString2KB(b *testing.B) {
	s := fastjson.AppendQuote(nil, strings.Repeat("Let me call the tool.\n<tool_call>\n{\"name\": \"x\"}\n</tool_call>\n", 40)[:2048])
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if !fastjson.Valid(s) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValid(b *testing.B) {
	v := []byte(`{"name":"get_weather","arguments":{"city":"Paris","days":3,"units":["c","f"],"deep":{"a":[1,2,3]}}}`)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		fastjson.Valid(v)
	}
}

func FuzzInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "12", "-12", "007", "123456789012345678", "1234567890123456789", "-9223372036854775808", "1e3", "1.0", "1.5", " 42 ", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := fastjson.Int([]byte(s))
		var f64 float64
		jerr := json.Unmarshal([]byte(s), &f64)
		if jerr != nil {
			if err == nil {
				t.Fatalf("Int(%q) = %d; encoding/json rejects it: %v", s, got, jerr)
			}
			return
		}
		var i64 int64
		if json.Unmarshal([]byte(s), &i64) == nil && (err != nil || got != i64) {
			t.Fatalf("Int(%q) = %d, %v; encoding/json says %d", s, got, err, i64)
		}
	})
}
