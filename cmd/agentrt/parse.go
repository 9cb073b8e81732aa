package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// runParse reads a completion on stdin and prints what a built-in parser makes of it:
// {"calls":[{"id","name","arguments"}],"normal_text":...,"errors":[{"reason","message","raw"}]}.
// It runs the embedded Wasm parsers module through the plugin host, exactly as the runtime does.
func runParse(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt parse", "parse", io, "usage: agentrt parse --parser NAME [--tools FILE] [--spans] < completion.txt\n")
	name := fs.String("parser", "", "the tool-call format: "+strings.Join(parsers.Names(), ", "))
	toolsFile := fs.String("tools", "", "a JSON file with the tool specs (OpenAI tools list); without it tool names are not checked")
	spans := fs.Bool("spans", false, "also print each call's and error's byte span in the input")
	cacheDir := fs.String("cache-dir", defaultWasmCacheDir(), "wazero compilation cache directory (\"\" for none: every run compiles the module, ~1 s)")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fs.fail(exitUsage, "unexpected argument %q (the completion is read from stdin)", fs.Arg(0))
	}
	if *name == "" {
		return fs.fail(exitUsage, "--parser is required (one of %s)", strings.Join(parsers.Names(), ", "))
	}
	cfg, err := parsers.WasmConfig(*name)
	if err != nil {
		return fs.fail(exitUsage, "%v", err)
	}
	var specs []abi.ToolSpec
	if *toolsFile != "" {
		if specs, err = readToolSpecs(*toolsFile); err != nil {
			return fs.fail(exitFailure, "--tools %v", err)
		}
	}
	text, err := readAll(ctx, io.in)
	if err != nil {
		return fs.fail(exitFailure, "reading stdin: %v", err)
	}
	host, err := plugin.NewHost(ctx, plugin.Config{CacheDir: *cacheDir})
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	defer host.Close(context.WithoutCancel(ctx))
	mod, err := host.Load(ctx, plugin.Spec{
		Name: "builtin:parsers", Wasm: parsers.Wasm(), Trusted: true, Config: cfg, Tools: specs, PoolSize: 1,
	})
	if err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitStartup
	}
	p, err := mod.Parser()
	if err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitStartup
	}
	r, err := p.Parse(ctx, text)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitFailure
	}
	if err := writeParseResult(io.out, &r, *spans); err != nil {
		fmt.Fprintf(io.err, "agentrt parse: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// defaultWasmCacheDir is where CLI runs keep wazero's compilation cache, so that only the first run compiles.
func defaultWasmCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "agentrt", "wazero")
}

// readToolSpecs reads an OpenAI tools list (or a list of bare function objects), validated by the parsers'
// own reader so that errors name the element.
func readToolSpecs(file string) ([]abi.ToolSpec, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if _, err := parsers.ParseTools(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var list []struct {
		abi.ToolSpec
		Function *abi.ToolSpec `json:"function"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	specs := make([]abi.ToolSpec, len(list))
	for i, t := range list {
		specs[i] = t.ToolSpec
		if t.Function != nil {
			specs[i] = *t.Function
		}
	}
	return specs, nil
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
	Span      *abi.Span       `json:"span,omitempty"`
}

type parseError struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Raw     string    `json:"raw"`
	Span    *abi.Span `json:"span,omitempty"`
}

type parseOutput struct {
	Calls      []parseCall  `json:"calls"`
	NormalText string       `json:"normal_text"`
	Errors     []parseError `json:"errors"`
}

// writeParseResult prints r as one line of JSON (markup such as <tool_call> is not HTML-escaped).
func writeParseResult(w io.Writer, r *plugin.ParseResult, spans bool) error {
	out := parseOutput{Calls: []parseCall{}, NormalText: r.NormalText, Errors: []parseError{}}
	for _, c := range r.Calls {
		pc := parseCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)}
		if spans {
			pc.Span = &c.Span
		}
		out.Calls = append(out.Calls, pc)
	}
	for _, e := range r.Errors {
		pe := parseError{Reason: e.Reason, Message: e.Message, Raw: e.Raw}
		if spans {
			pe.Span = &e.Span
		}
		out.Errors = append(out.Errors, pe)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
