package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/runtime/turn"
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

// kwargs is the --set values, nil when none.
func (s setFlags) kwargs() map[string]any {
	if len(s) == 0 {
		return nil
	}
	return s
}

const templateUsage = `usage: agentrt template --model DIR|ORG/NAME [--revision REV] --messages FILE [--tools FILE] [--add-generation-prompt] [--set key=value ...] [--delta] [--family NAME]

Prints the chat template's render of the conversation, byte-exact, with nothing added. With --delta it prints
what the agent loop appends after the conversation's last assistant turn, by the loop's own code: the family
profile's end-of-turn tokens (detected from the folder, or --family) and the same delta. For a family whose
stop token begins the next message (GLM-4.6/4.7: <|observation|>, <|user|>) the delta begins with that token;
the loop's trajectory holds it already, as the model's last generated token, and appends the rest.
`

func runTemplate(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt template", "agentrt template", io, templateUsage)
	model := fs.String("model", "", "Hugging Face model folder (tokenizer_config.json or a chat template file; tokenizer.json is not needed), or a model id (Org/Name) fetched into the hub cache")
	revision := fs.String("revision", "", "branch, tag or commit of a Hugging Face model id (default main)")
	messages := fs.String("messages", "", "JSON file with the messages array (- for stdin)")
	tools := fs.String("tools", "", "JSON file with the tools array (optional)")
	genPrompt := fs.Bool("add-generation-prompt", false, "append the assistant header")
	delta := fs.Bool("delta", false, "print what the agent loop appends after the conversation's last assistant turn: the messages after it, rendered as a delta")
	fam := fs.String("family", "", "the model family whose end-of-turn tokens --delta cuts at (default: detected from the folder): "+strings.Join(family.Names(), ", "))
	kwargs := setFlags{}
	fs.Var(kwargs, "set", "template variable key=value (repeatable); the value is JSON when it parses (enable_thinking=false), else a string")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if *model == "" || *messages == "" || fs.NArg() > 0 {
		fmt.Fprintln(io.err, "agentrt template: --model and --messages are required, and no positional arguments")
		fs.Usage()
		return exitUsage
	}
	if *fam != "" {
		if _, err := family.Lookup(*fam); err != nil {
			return fs.fail(exitUsage, "--family: %v", err)
		}
	}
	data, err := readInput(*messages, io.in)
	if err != nil {
		return fs.fail(exitFailure, "--messages: %v", err)
	}
	msgs, err := tito.DecodeMessages(data)
	if err != nil {
		return fs.fail(exitFailure, "%s: %v", *messages, err)
	}
	opts := tito.RenderOptions{AddGenerationPrompt: *genPrompt, Kwargs: kwargs.kwargs()}
	if *tools != "" {
		data, err := readInput(*tools, io.in)
		if err != nil {
			return fs.fail(exitFailure, "--tools: %v", err)
		}
		if opts.Tools, err = tito.DecodeTools(data); err != nil {
			return fs.fail(exitFailure, "%s: %v", *tools, err)
		}
	}
	dir, err := system.ModelFolder(ctx, *model, *revision, slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	m, err := loadModelFolder(dir)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	if m.Tokenizer != nil {
		defer m.Close()
	}
	tpl, err := loopTemplate(m, *fam)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
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
			return fs.fail(exitFailure, "--delta: %s needs an assistant message followed by the new messages", *messages)
		}
		// The loop's delta code; the stop token the model generated is unknown here (-1): the delta is printed whole.
		text, err = (&turn.Model{Template: tpl}).DeltaText(msgs[:last+1], msgs[last+1:], opts, -1)
	} else {
		text, err = tpl.Render(msgs, opts)
	}
	if err != nil {
		return fs.fail(exitFailure, "%v", err)
	}
	if _, err := io.out.Write([]byte(text)); err != nil {
		return fs.fail(exitFailure, "%v", err)
	}
	return exitOK
}

// loopTemplate is the folder's chat template as the agent loop renders it: with its family profile's end-of-turn
// tokens (the family named, else detected). A folder of no known family gets its template as it is (its EOS token
// ends a turn), unless a family was named.
func loopTemplate(m *tito.Model, name string) (*tito.ChatTemplate, error) {
	d, err := family.Detect(m, name)
	if err != nil {
		if name != "" {
			return nil, err
		}
		return m.ChatTemplate()
	}
	return m.ChatTemplate(d.Profile.TemplateOptions()...)
}

// readInput reads a file, or r for "-".
func readInput(path string, r io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(r)
	}
	return os.ReadFile(path)
}
