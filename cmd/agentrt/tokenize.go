package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/tito"
)

const tokenizeUsage = `usage: agentrt tokenize --model DIR|ORG/NAME [--revision REV] [--special] < text
       agentrt tokenize --model DIR|ORG/NAME --decode [--skip-special] < ids.json

Encodes stdin exactly as read (a trailing newline is a token too: use printf, not echo) and prints
the ids as a JSON array; with --decode prints the text of a JSON id array, with nothing added.
`

func runTokenize(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt tokenize", "agentrt tokenize", io, tokenizeUsage)
	model := fs.String("model", "", "Hugging Face model folder (tokenizer.json, tokenizer_config.json), or a model id (Org/Name) fetched into the hub cache")
	revision := fs.String("revision", "", "branch, tag or commit of a Hugging Face model id (default main)")
	decode := fs.Bool("decode", false, "read a JSON array of token ids on stdin and print their text")
	special := fs.Bool("special", false, "encode: add the tokenizer's special tokens (e.g. Llama's <|begin_of_text|>)")
	skipSpecial := fs.Bool("skip-special", false, "decode: leave special tokens out of the text")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if *model == "" || fs.NArg() > 0 {
		fmt.Fprintln(io.err, "agentrt tokenize: --model is required, and no positional arguments (the input is stdin)")
		fs.Usage()
		return exitUsage
	}
	if *decode && *special {
		return fs.fail(exitUsage, "--special applies to encoding; with --decode use --skip-special")
	}
	if !*decode && *skipSpecial {
		return fs.fail(exitUsage, "--skip-special applies to --decode; to add special tokens when encoding use --special")
	}
	input, err := tokenizeReadStdin(io.in)
	if err != nil {
		return fs.fail(exitFailure, "reading stdin: %v", err)
	}
	var ids []int32
	if *decode {
		if ids, err = tokenizeParseIDs(input); err != nil {
			return fs.fail(exitFailure, "stdin: %v", err)
		}
	}
	dir, err := system.ModelFolder(ctx, *model, *revision, slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	m, err := tito.LoadModel(dir)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	defer m.Close()
	if *decode {
		if _, err := fmt.Fprint(io.out, m.Tokenizer.Decode(ids, *skipSpecial)); err != nil {
			return exitFailure
		}
		return exitOK
	}
	out, _ := json.Marshal(m.Tokenizer.Encode(string(input), *special))
	if _, err := fmt.Fprintf(io.out, "%s\n", out); err != nil {
		return exitFailure
	}
	return exitOK
}

func tokenizeReadStdin(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	return io.ReadAll(r)
}

// tokenizeParseIDs reads a JSON array of token ids, naming what is wrong and where.
func tokenizeParseIDs(data []byte) ([]int32, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty: want a JSON array of token ids, e.g. [9707, 1879]")
	}
	var raw []json.Number
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a JSON array of token ids (e.g. [9707, 1879]): %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON array at byte %d", dec.InputOffset())
	}
	ids := make([]int32, len(raw))
	for i, n := range raw {
		v, err := n.Int64()
		if err != nil || v < 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("element %d (%s) is not a token id (an integer in 0..%d)", i, n, math.MaxInt32)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}
