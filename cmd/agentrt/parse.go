package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrt/agentrt/parsers"
)

// runParse reads a completion on stdin and prints what a built-in parser makes of it:
// {"calls":[{"id","name","arguments"}],"normal_text":...,"errors":[{"reason","message","raw"}]}.
func runParse(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(io.err)
	name := fs.String("parser", "", "the tool-call format: "+strings.Join(parsers.Names(), ", "))
	toolsFile := fs.String("tools", "", "a JSON file with the tool specs (OpenAI tools list); without it tool names are not checked")
	spans := fs.Bool("spans", false, "also print each call's and error's byte span in the input")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: agentrt parse --parser NAME [--tools FILE] [--spans] < completion.txt")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(io.err, "agentrt parse: unexpected argument %q (the completion is read from stdin)\n", fs.Arg(0))
		return exitUsage
	}
	if *name == "" {
		fmt.Fprintf(io.err, "agentrt parse: --parser is required (one of %s)\n", strings.Join(parsers.Names(), ", "))
		return exitUsage
	}
	p, err := parsers.New(*name)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitUsage
	}
	var tools *parsers.Tools
	if *toolsFile != "" {
		spec, err := os.ReadFile(*toolsFile)
		if err != nil {
			fmt.Fprintf(io.err, "agentrt parse: --tools: %v\n", err)
			return exitFailure
		}
		if tools, err = parsers.ParseTools(spec); err != nil {
			fmt.Fprintf(io.err, "agentrt parse: --tools %s: %v\n", *toolsFile, err)
			return exitFailure
		}
	}
	text, err := readAll(ctx, io.in)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt parse: reading stdin: %v\n", err)
		return exitFailure
	}
	r := p.Parse(text, tools)
	if err := writeParseResult(io.out, &r, *spans); err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func readAll(ctx context.Context, r io.Reader) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	return string(b), err
}

type parseCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Span      *[2]int         `json:"span,omitempty"`
}

type parseError struct {
	Reason  string  `json:"reason"`
	Message string  `json:"message"`
	Raw     string  `json:"raw"`
	Span    *[2]int `json:"span,omitempty"`
}

type parseOutput struct {
	Calls      []parseCall  `json:"calls"`
	NormalText string       `json:"normal_text"`
	Errors     []parseError `json:"errors"`
}

// writeParseResult prints r as one line of JSON (markup such as <tool_call> is not HTML-escaped).
func writeParseResult(w io.Writer, r *parsers.Result, spans bool) error {
	out := parseOutput{Calls: []parseCall{}, NormalText: r.NormalText, Errors: []parseError{}}
	for _, c := range r.Calls {
		pc := parseCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		if spans {
			pc.Span = &c.Span
		}
		out.Calls = append(out.Calls, pc)
	}
	for _, e := range r.Errors {
		pe := parseError{Reason: string(e.Reason), Message: e.Message, Raw: e.Raw}
		if spans {
			pe.Span = &e.Span
		}
		out.Errors = append(out.Errors, pe)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
