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

	"github.com/agentrt/agentrt/tito"
)

// setFlags collects repeated --set key=value flags; values are JSON when they parse as JSON, else strings.
type setFlags map[string]any

func (s setFlags) String() string { return "" }

func (s setFlags) Set(v string) error {
	key, val, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	var raw json.RawMessage
	if json.Unmarshal([]byte(val), &raw) == nil {
		s[key] = raw
	} else {
		s[key] = val
	}
	return nil
}

func runTemplate(_ context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("agentrt template", flag.ContinueOnError)
	fs.SetOutput(io.err)
	model := fs.String("model", "", "Hugging Face model folder (tokenizer.json, tokenizer_config.json, chat template)")
	messages := fs.String("messages", "", "JSON file with the messages array (- for stdin)")
	tools := fs.String("tools", "", "JSON file with the tools array (optional)")
	genPrompt := fs.Bool("add-generation-prompt", false, "append the assistant header")
	delta := fs.Bool("delta", false, "print what the agent loop appends after the conversation's last assistant turn: the messages after it, rendered as a delta")
	kwargs := setFlags{}
	fs.Var(kwargs, "set", "template variable key=value (repeatable); the value is JSON when it parses (enable_thinking=false), else a string")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: agentrt template --model DIR --messages FILE [--tools FILE] [--add-generation-prompt] [--set key=value ...] [--delta]")
		fmt.Fprintln(io.err, "\nPrints the chat template's render of the conversation, byte-exact, with nothing added.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *model == "" || *messages == "" || fs.NArg() > 0 {
		fmt.Fprintln(io.err, "agentrt template: --model and --messages are required, and no positional arguments")
		fs.Usage()
		return exitUsage
	}
	data, err := readInput(*messages, io.in)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt template: --messages: %v\n", err)
		return exitFailure
	}
	msgs, err := tito.DecodeMessages(data)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt template: %s: %v\n", *messages, err)
		return exitFailure
	}
	opts := tito.RenderOptions{AddGenerationPrompt: *genPrompt}
	if len(kwargs) > 0 {
		opts.Kwargs = kwargs
	}
	if *tools != "" {
		data, err := readInput(*tools, io.in)
		if err != nil {
			fmt.Fprintf(io.err, "agentrt template: --tools: %v\n", err)
			return exitFailure
		}
		if opts.Tools, err = tito.DecodeTools(data); err != nil {
			fmt.Fprintf(io.err, "agentrt template: %s: %v\n", *tools, err)
			return exitFailure
		}
	}
	m, err := tito.LoadModel(*model)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt template: %v\n", err)
		return exitStartup
	}
	defer m.Close()
	tpl, err := m.ChatTemplate()
	if err != nil {
		fmt.Fprintf(io.err, "agentrt template: %v\n", err)
		return exitStartup
	}
	var text string
	if *delta {
		last := -1
		for i, m := range msgs {
			if m.Role == tito.RoleAssistant {
				last = i
			}
		}
		if last < 0 || last == len(msgs)-1 {
			fmt.Fprintf(io.err, "agentrt template: --delta: %s needs an assistant message followed by the new messages\n", *messages)
			return exitFailure
		}
		text, err = tpl.RenderDelta(msgs[:last+1], msgs[last+1:], opts)
	} else {
		text, err = tpl.Render(msgs, opts)
	}
	if err != nil {
		fmt.Fprintf(io.err, "agentrt template: %v\n", err)
		return exitFailure
	}
	if _, err := io.out.Write([]byte(text)); err != nil {
		fmt.Fprintf(io.err, "agentrt template: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// readInput reads a file, or r for "-".
func readInput(path string, r io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(r)
	}
	return os.ReadFile(path)
}
