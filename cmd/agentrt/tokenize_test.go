package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizeGolden is the part of tito's golden tokenizer file (scripts/golden/tokenizer_golden.py, from the
// Hugging Face tokenizers library) that the CLI test needs.
type tokenizeGolden struct {
	Encode []struct {
		Name       string  `json:"name"`
		Text       string  `json:"text"`
		IDs        []int32 `json:"ids"`
		IDsSpecial []int32 `json:"ids_special"`
		Decoded    string  `json:"decoded"`
		DecodedSkp string  `json:"decoded_skip"`
	} `json:"encode"`
}

func runTokenizeCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"tokenize"}, args...), stdio{strings.NewReader(stdin), &out, &errb})
	return code, out.String(), errb.String()
}

// TestTokenizeCommandGolden runs `agentrt tokenize` on Hugging Face's golden cases: encode (with and without
// --special) and --decode (with and without --skip-special), id-for-id and byte-for-byte.
func TestTokenizeCommandGolden(t *testing.T) {
	// Each CLI run loads the model folder (seconds under -race): one case per model, with special tokens and
	// emoji; tito's own tests compare every golden case.
	for _, tc := range []struct{ golden, env, cse string }{{"qwen3", "AGENTRT_QWEN3_MODEL", "special_im"}, {"llama3.1", "AGENTRT_LLAMA31_MODEL", "special_llama"}} {
		t.Run(tc.golden, func(t *testing.T) {
			dir := os.Getenv(tc.env)
			if dir == "" {
				t.Skipf("$%s is not set: run make setup and source ~/.cache/agentrt/env.sh", tc.env)
			}
			data, err := os.ReadFile(filepath.Join("..", "..", "tito", "testdata", "tokenizer", tc.golden+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g tokenizeGolden
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			for _, c := range g.Encode {
				if c.Name != tc.cse {
					continue
				}
				t.Run(c.Name, func(t *testing.T) {
					for _, special := range []bool{false, true} {
						args := []string{"--model", dir}
						want := c.IDs
						if special {
							args, want = append(args, "--special"), c.IDsSpecial
						}
						code, out, errs := runTokenizeCLI(t, c.Text, args...)
						if code != exitOK {
							t.Fatalf("exit %d: %s", code, errs)
						}
						wantOut, _ := json.Marshal(want)
						if out != string(wantOut)+"\n" {
							t.Errorf("special=%v: stdout %q, want %q", special, out, string(wantOut)+"\n")
						}
					}
					in, _ := json.Marshal(c.IDsSpecial)
					for _, skip := range []bool{false, true} {
						args := []string{"--model", dir, "--decode"}
						want := c.Decoded
						if skip {
							args, want = append(args, "--skip-special"), c.DecodedSkp
						}
						code, out, errs := runTokenizeCLI(t, string(in), args...)
						if code != exitOK || out != want {
							t.Errorf("decode skip=%v: exit %d stdout %q, want %q (stderr %s)", skip, code, out, want, errs)
						}
					}
				})
			}
		})
	}
}

func TestTokenizeCommandErrors(t *testing.T) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		t.Skip("$AGENTRT_QWEN3_MODEL is not set")
	}
	missing := filepath.Join(t.TempDir(), "no-model")
	tests := []struct {
		name    string
		stdin   string
		args    []string
		code    int
		wantErr string
	}{
		{"no model", "hi", nil, exitUsage, "--model is required"},
		{"positional", "hi", []string{"--model", dir, "extra"}, exitUsage, "no positional arguments"},
		{"unknown flag", "hi", []string{"--model", dir, "--nope"}, exitUsage, "flag provided but not defined"},
		{"special with decode", "[1]", []string{"--model", dir, "--decode", "--special"}, exitUsage, "--special applies to encoding"},
		{"skip-special without decode", "hi", []string{"--model", dir, "--skip-special"}, exitUsage, "--skip-special applies to --decode"},
		{"missing model", "hi", []string{"--model", missing}, exitStartup, "model folder " + missing},
		{"decode invalid JSON", "[1, 2", []string{"--model", dir, "--decode"}, exitFailure, "not a JSON array of token ids"},
		{"decode not an array", `{"ids": [1]}`, []string{"--model", dir, "--decode"}, exitFailure, "not a JSON array of token ids"},
		{"decode empty", "  \n", []string{"--model", dir, "--decode"}, exitFailure, "empty: want a JSON array"},
		{"decode float", "[1, 2.5]", []string{"--model", dir, "--decode"}, exitFailure, "element 1 (2.5) is not a token id"},
		{"decode negative", "[-1]", []string{"--model", dir, "--decode"}, exitFailure, "element 0 (-1) is not a token id"},
		{"decode too large", "[4294967296]", []string{"--model", dir, "--decode"}, exitFailure, "element 0 (4294967296)"},
		{"decode trailing data", "[1] [2]", []string{"--model", dir, "--decode"}, exitFailure, "unexpected data after the JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runTokenizeCLI(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, tt.code, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q on error", out)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		code, _, errs := runTokenizeCLI(t, "", "-h")
		if code != exitOK || !strings.Contains(errs, "usage: agentrt tokenize") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("empty input", func(t *testing.T) {
		code, out, _ := runTokenizeCLI(t, "", "--model", dir)
		if code != exitOK || out != "[]\n" {
			t.Errorf("exit %d, stdout %q", code, out)
		}
	})
	t.Run("decode out of vocabulary", func(t *testing.T) {
		code, out, _ := runTokenizeCLI(t, "[9707, 2000000000]", "--model", dir, "--decode")
		if code != exitOK || out != "Hello" {
			t.Errorf("exit %d, stdout %q", code, out)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		_, ids, _ := runTokenizeCLI(t, "Hi <|im_end|>\n", "--model", dir)
		var got []int32
		if err := json.Unmarshal([]byte(ids), &got); err != nil || !slices.Contains(got, 151645) {
			t.Fatalf("ids %q: %v", ids, err)
		}
		_, text, _ := runTokenizeCLI(t, ids, "--model", dir, "--decode")
		if text != "Hi <|im_end|>\n" {
			t.Errorf("round trip = %q", text)
		}
	})
}
