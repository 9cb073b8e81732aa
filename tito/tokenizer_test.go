package tito

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tkModels caches the model folders the tokenizer tests load (loading one takes about half a second).
var tkModels struct {
	sync.Mutex
	m map[string]*Model
}

// tkModelEnv maps the golden file names to the env vars naming their model folders (set by env.sh).
var tkModelEnv = map[string]string{
	"qwen3":    "AGENTRT_QWEN3_MODEL",
	"llama3.1": "AGENTRT_LLAMA31_MODEL",
	"qwen2.5":  "AGENTRT_QWEN25_MODEL",
}

// tkModel returns the named real model folder's Model, skipping the test if its env var is unset (run
// `source ~/.cache/agentrt/env.sh` after `make setup`).
func tkModel(t testing.TB, name string) *Model {
	t.Helper()
	env := tkModelEnv[name]
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("$%s is not set: run `make setup` and `source ~/.cache/agentrt/env.sh`", env)
	}
	tkModels.Lock()
	defer tkModels.Unlock()
	if m := tkModels.m[name]; m != nil {
		return m
	}
	m, err := LoadModel(dir)
	if err != nil {
		t.Fatalf("LoadModel($%s): %v", env, err)
	}
	if tkModels.m == nil {
		tkModels.m = map[string]*Model{}
	}
	tkModels.m[name] = m
	return m
}

type tkGolden struct {
	GeneratedBy     string           `json:"generated_by"`
	Model           string           `json:"model"`
	TokenizerSHA256 string           `json:"tokenizer_sha256"`
	VocabSize       int              `json:"vocab_size"`
	TokenIDs        map[string]int32 `json:"token_ids"`
	Encode          []struct {
		Name        string  `json:"name"`
		Text        string  `json:"text"`
		IDs         []int32 `json:"ids"`
		IDsSpecial  []int32 `json:"ids_special"`
		Decoded     string  `json:"decoded"`
		DecodedSkip string  `json:"decoded_skip"`
	} `json:"encode"`
	Decode []struct {
		Name        string  `json:"name"`
		IDs         []int32 `json:"ids"`
		Decoded     string  `json:"decoded"`
		DecodedSkip string  `json:"decoded_skip"`
	} `json:"decode"`
}

func tkReadGolden(t testing.TB, name string) *tkGolden {
	t.Helper()
	path := filepath.Join("testdata", "tokenizer", name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate: $AGENTRT_GOLDEN_PYTHON scripts/golden/tokenizer_golden.py)", err)
	}
	var g tkGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &g
}

// TestTokenizerGolden compares Encode and Decode id-for-id and byte-for-byte with the Hugging Face Python
// libraries (tokenizers, cross-checked with transformers) on strings that stress tokenizers.
func TestTokenizerGolden(t *testing.T) {
	for _, name := range []string{"qwen3", "llama3.1"} {
		t.Run(name, func(t *testing.T) {
			g := tkReadGolden(t, name)
			m := tkModel(t, name)
			tk := m.Tokenizer
			if tk.SHA256() != g.TokenizerSHA256 {
				t.Fatalf("tokenizer.json sha256 %s, golden made from %s: rerun make setup or the golden script", tk.SHA256(), g.TokenizerSHA256)
			}
			if tk.VocabSize() != g.VocabSize {
				t.Errorf("VocabSize() = %d, want %d", tk.VocabSize(), g.VocabSize)
			}
			for tok, want := range g.TokenIDs {
				if got, ok := tk.TokenID(tok); !ok || got != want {
					t.Errorf("TokenID(%q) = %d, %v; want %d", tok, got, ok, want)
				}
				if got, ok := tk.Token(want); !ok || got != tok {
					t.Errorf("Token(%d) = %q, %v; want %q", want, got, ok, tok)
				}
			}
			if _, ok := tk.Token(int32(g.VocabSize) + 10); ok {
				t.Errorf("Token(%d) (past the vocabulary) reports a token", g.VocabSize+10)
			}
			if _, ok := tk.Token(-1); ok {
				t.Error("Token(-1) reports a token")
			}
			for _, a := range tk.AddedTokens() {
				if tk.IsSpecial(a.ID) != a.Special {
					t.Errorf("IsSpecial(%d) (%q) = %v, tokenizer.json says special %v", a.ID, a.Content, !a.Special, a.Special)
				}
			}
			if id, _ := tk.TokenID("hello"); tk.IsSpecial(id) {
				t.Errorf("IsSpecial(%d) (hello) = true", id)
			}
			for _, c := range g.Encode {
				t.Run("encode/"+c.Name, func(t *testing.T) {
					if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
						t.Errorf("Encode(%q, false)\n got %v\nwant %v", c.Text, got, c.IDs)
					}
					if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDsSpecial) {
						t.Errorf("Encode(%q, true)\n got %v\nwant %v", c.Text, got, c.IDsSpecial)
					}
					if got := tk.Decode(c.IDsSpecial, false); got != c.Decoded {
						t.Errorf("Decode(%v, false) = %q, want %q", c.IDsSpecial, got, c.Decoded)
					}
					if got := tk.Decode(c.IDsSpecial, true); got != c.DecodedSkip {
						t.Errorf("Decode(%v, true) = %q, want %q", c.IDsSpecial, got, c.DecodedSkip)
					}
				})
			}
			for _, c := range g.Decode {
				t.Run("decode/"+c.Name, func(t *testing.T) {
					in := slices.Clone(c.IDs)
					if got := tk.Decode(in, false); got != c.Decoded {
						t.Errorf("Decode(%v, false) = %q, want %q", c.IDs, got, c.Decoded)
					}
					if got := tk.Decode(in, true); got != c.DecodedSkip {
						t.Errorf("Decode(%v, true) = %q, want %q", c.IDs, got, c.DecodedSkip)
					}
					if !slices.Equal(in, c.IDs) {
						t.Errorf("Decode mutated its input")
					}
				})
			}
			t.Run("batch", func(t *testing.T) {
				texts := make([]string, len(g.Encode))
				for i, c := range g.Encode {
					texts[i] = c.Text
				}
				for _, add := range []bool{false, true} {
					got := tk.EncodeBatch(texts, add)
					if len(got) != len(texts) {
						t.Fatalf("EncodeBatch returned %d results for %d texts", len(got), len(texts))
					}
					for i, c := range g.Encode {
						want := c.IDs
						if add {
							want = c.IDsSpecial
						}
						if !slices.Equal(got[i], want) {
							t.Errorf("EncodeBatch[%d] (%s, add=%v)\n got %v\nwant %v", i, c.Name, add, got[i], want)
						}
					}
				}
			})
		})
	}
}

func TestTokenizerEdgeCases(t *testing.T) {
	tk := tkModel(t, "qwen3").Tokenizer
	tests := []struct {
		name string
		ids  []int32
		want string
	}{
		{"nil", nil, ""},
		{"empty", []int32{}, ""},
		{"negative", []int32{-1, -2147483648}, ""},
		{"too large", []int32{int32(tk.VocabSize()), 2147483647}, ""},
		{"mixed", []int32{9707, -7, 1000000, 1879}, "Hello world"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tk.Decode(tt.ids, false); got != tt.want {
				t.Errorf("Decode(%v) = %q, want %q", tt.ids, got, tt.want)
			}
		})
	}
	t.Run("invalid utf8 encodes as U+FFFD", func(t *testing.T) {
		got := tk.Encode("a\xffb", false)
		want := tk.Encode("a\uFFFDb", false)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(invalid utf8) = %v, want %v", got, want)
		}
	})
	t.Run("NUL when every stand-in is taken", func(t *testing.T) {
		var sb strings.Builder
		for b := 1; b < 0x20; b++ {
			sb.WriteByte(byte(b))
		}
		text := sb.String() + "a\x00b \x00\x00!"
		if got := tk.Decode(tk.Encode(text, false), false); got != text {
			t.Errorf("round trip = %q, want %q", got, text)
		}
		if n := len(tk.nulStandIns); n == 0 {
			t.Errorf("no NUL stand-ins found for Qwen3")
		}
	})
	t.Run("empty batch", func(t *testing.T) {
		if got := tk.EncodeBatch(nil, false); len(got) != 0 {
			t.Errorf("EncodeBatch(nil) = %v", got)
		}
	})
	t.Run("empty text is an empty non-nil slice", func(t *testing.T) {
		if got := tk.Encode("", false); got == nil || len(got) != 0 {
			t.Errorf("Encode(\"\") = %#v", got)
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		if id, ok := tk.TokenID("<|no such token|>"); ok {
			t.Errorf("TokenID(unknown) = %d, true", id)
		}
	})
}

func TestLossyUTF8MatchesPython(t *testing.T) {
	// Expected strings are what Python's bytes.decode("utf-8", "replace") returns (maximal subparts).
	tests := []struct {
		in   string
		want string
	}{
		{"abc", "abc"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82a", "\ufffda"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xf0\x9f\x98\x80", "😀"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"\xc0\xaf", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\x80\x80", "\ufffd\ufffd"},
		{"a\x00b", "a\x00b"},
	}
	for _, tt := range tests {
		if got := lossyUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTokenizerHammer runs Encode, Decode and EncodeBatch from many goroutines on one Tokenizer (run with
// -race): results must equal the sequential ones.
func TestTokenizerHammer(t *testing.T) {
	g := tkReadGolden(t, "qwen3")
	tk := tkModel(t, "qwen3").Tokenizer
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range 2 * len(g.Encode) {
				c := g.Encode[(i*7+w)%len(g.Encode)]
				if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDsSpecial) {
					errs <- fmt.Errorf("worker %d: Encode(%s) differs", w, c.Name)
					return
				}
				if got := tk.Decode(c.IDsSpecial, false); got != c.Decoded {
					errs <- fmt.Errorf("worker %d: Decode(%s) differs", w, c.Name)
					return
				}
				if i%25 == 0 {
					res := tk.EncodeBatch([]string{c.Text, c.Text}, false)
					if !slices.Equal(res[0], c.IDs) || !slices.Equal(res[1], c.IDs) {
						errs <- fmt.Errorf("worker %d: EncodeBatch(%s) differs", w, c.Name)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTokenizerClose(t *testing.T) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		t.Skip("$AGENTRT_QWEN3_MODEL is not set")
	}
	tk, err := LoadTokenizer(filepath.Join(dir, FileTokenizer))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Decode(tk.Encode("hi", false), false); got != "hi" {
		t.Fatalf("round trip = %q", got)
	}
	tk.Close()
	tk.Close() // idempotent
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "after Close") {
			t.Errorf("Encode after Close: recover() = %v, want a panic naming Close", r)
		}
	}()
	tk.Encode("hi", false)
}

func TestLoadTokenizerErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"missing", filepath.Join(dir, "nope.json"), "nope.json: open"},
		{"empty", write("empty.json", ""), "empty.json: empty file"},
		{"not json", write("bad.json", "{not json"), "bad.json: not a valid tokenizer.json"},
		{"no vocab", write("novocab.json", `{"model": {"type": "BPE"}}`), "novocab.json: model.vocab: missing"},
		{"empty vocab", write("emptyvocab.json", `{"model": {"type": "BPE", "vocab": { }, "merges": []}}`), "emptyvocab.json: model.vocab is empty"},
		{"empty unigram vocab", write("emptyuni.json", `{"model": {"type": "Unigram", "vocab": []}}`), "emptyuni.json: model.vocab is empty"},
		{"rejected by the library", write("rejected.json", `{"model": {"type": "Nonsense", "vocab": {"a": 0}}}`), "rejected.json: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, err := LoadTokenizer(tt.path)
			if err == nil {
				tk.Close()
				t.Fatal("LoadTokenizer succeeded")
			}
			if !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want ErrModelFile containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzTokenizerRoundTrip checks, for Llama 3.1 (byte-level BPE without a normalizer), that decoding the ids
// of any text gives the text back byte for byte (invalid UTF-8 as U+FFFD), with special tokens written in the
// text kept as special tokens (the decode oracle for the Go-side NUL path is the same property); and that Encode and EncodeBatch agree. Seeded from the golden strings.
func FuzzTokenizerRoundTrip(f *testing.F) {
	dir := os.Getenv("AGENTRT_LLAMA31_MODEL")
	if dir == "" {
		f.Skip("$AGENTRT_LLAMA31_MODEL is not set")
	}
	g := tkReadGolden(f, "llama3.1")
	for _, c := range g.Encode {
		f.Add(c.Text)
	}
	tk := tkModel(f, "llama3.1").Tokenizer
	f.Fuzz(func(t *testing.T, text string) {
		ids := tk.Encode(text, false)
		want := lossyUTF8([]byte(text))
		if got := tk.Decode(ids, false); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q", text, got)
		}
		if b := tk.EncodeBatch([]string{text, text}, false); !slices.Equal(b[0], ids) || !slices.Equal(b[1], ids) {
			t.Fatalf("EncodeBatch(%q) differs from Encode", text)
		}
	})
}

// TestDecodeByteLevelMatchesLibrary checks Decode's Go path (ByteLevel decoders, special tokens kept or skipped) against the
// Hugging Face library's decode through the C ABI: every id alone, ids out of range, and random sequences that
// mix added tokens with byte tokens (split UTF-8 sequences, lone continuation bytes). The tokenizers of every
// family the setup fetches that have a ByteLevel decoder.
func TestDecodeByteLevelMatchesLibrary(t *testing.T) {
	for _, env := range []string{"AGENTRT_QWEN3_MODEL", "AGENTRT_LLAMA31_MODEL", "AGENTRT_DEEPSEEK_V3_MODEL", "AGENTRT_GPTOSS_MODEL"} {
		t.Run(env, func(t *testing.T) {
			dir := os.Getenv(env)
			if dir == "" {
				t.Fatalf("%s is not set: source ~/.cache/agentrt/env.sh", env)
			}
			tok, err := LoadTokenizer(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer tok.Close()
			if tok.byteLevel == nil {
				t.Fatalf("%s: not a ByteLevel decoder", dir)
			}
			check := func(ids []int32) {
				t.Helper()
				for _, skip := range []bool{false, true} {
					want, ok := tok.decode(ids, skip)
					if !ok { // U+0000 in the text: the C ABI cannot return it
						continue
					}
					if got := tok.Decode(ids, skip); got != want {
						t.Fatalf("ids %v, skip special %v: Go %q, library %q", ids, skip, got, want)
					}
				}
			}
			n := int32(tok.VocabSize())
			for id := range n + 8 {
				check([]int32{id})
			}
			check([]int32{-1, 5, n + 100, 7})
			rng := rand.New(rand.NewPCG(1, 2))
			added := tok.AddedTokens()
			for range 5000 {
				ids := make([]int32, 1+rng.IntN(12))
				for i := range ids {
					switch rng.IntN(4) {
					case 0:
						ids[i] = added[rng.IntN(len(added))].ID
					case 1:
						ids[i] = int32(rng.IntN(300)) // single bytes, in most byte-level vocabularies
					default:
						ids[i] = int32(rng.IntN(int(n)))
					}
				}
				check(ids)
			}
		})
	}
}

// TestScanVocab holds scanVocab to encoding/json: the vocabularies of every model the setup fetches, and crafted
// objects (escapes, duplicates, whitespace, malformed ones, which it must refuse for encoding/json to report).
func TestScanVocab(t *testing.T) {
	var raws [][]byte
	for _, env := range []string{"AGENTRT_QWEN3_MODEL", "AGENTRT_QWEN25_MODEL", "AGENTRT_LLAMA31_MODEL", "AGENTRT_DEEPSEEK_V3_MODEL", "AGENTRT_GPTOSS_MODEL", "AGENTRT_MISTRAL_NEMO_MODEL"} {
		dir := os.Getenv(env)
		if dir == "" {
			t.Fatalf("%s is not set: source ~/.cache/agentrt/env.sh", env)
		}
		data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tf tokenizerFile
		if err := json.Unmarshal(data, &tf); err != nil {
			t.Fatal(err)
		}
		if len(tf.Model.Vocab) > 0 && tf.Model.Vocab[0] == '{' {
			raws = append(raws, tf.Model.Vocab)
		}
	}
	if len(raws) < 4 {
		t.Fatalf("only %d object vocabularies among the models", len(raws))
	}
	for _, s := range []string{`{}`, ` { } `, `{"a":1,"a":2}`, `{"\u0120x": 3, "\"q\\": 4, "\ud83d\ude00": 5, "\ud800": 6}`,
		"{\"a\" : 1 ,\n\t\"b\":2}", `{"a":1.0}`, `{"a":1e2}`, `{"a":-1}`, `{"a":2147483648}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`,
		`{"a":"1"}`, `[1]`, `{"a":1`, `{"\x01":1}`} {
		raws = append(raws, []byte(s))
	}
	for _, raw := range raws {
		var want map[string]int32
		werr := json.Unmarshal(raw, &want)
		got, ok := scanVocab(raw)
		if werr != nil {
			if ok {
				t.Fatalf("%.80s: scanVocab accepted what encoding/json refuses (%v)", raw, werr)
			}
			continue
		}
		if ok && !maps.Equal(got, want) {
			t.Fatalf("%.80s: scanVocab %d entries, encoding/json %d, or they differ", raw, len(got), len(want))
		}
		if !ok {
			t.Fatalf("%.80s: scanVocab refused what encoding/json reads", raw)
		}
	}
}
