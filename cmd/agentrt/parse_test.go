package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			args := append([]string{"parse"}, strings.Fields(parts[0])...)
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
		{"unknown parser", []string{"--parser", "mistral"}, "", exitUsage, `unknown parser "mistral" (known: glm45`},
		{"extra argument", []string{"--parser", "hermes", "file.txt"}, "", exitUsage, "unexpected argument"},
		{"missing tools file", []string{"--parser", "hermes", "--tools", "testdata/parse/nope.json"}, "", exitFailure, "--tools: open testdata/parse/nope.json"},
		{"bad tools file", []string{"--parser", "hermes", "--tools", "testdata/parse/bad_tools.json"}, "", exitFailure, "tools[0]: missing \"name\""},
		{"help", []string{"-h"}, "", exitOK, "usage: agentrt parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"parse"}, tt.args...), stdio{strings.NewReader(tt.stdin), &stdout, &stderr})
			if code != tt.code || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.wantErr)
			}
		})
	}
}
