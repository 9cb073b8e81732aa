package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentrt/agentrt/runtime/family"
	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/tito"
)

// runModel dispatches `agentrt model check|families`.
func runModel(ctx context.Context, args []string, io stdio) int {
	usage := func() {
		fmt.Fprintln(io.err, "usage: agentrt model check --model DIR|ORG/NAME [--revision REV] [--family NAME] [--parser NAME] [--chat-template FILE] [--set key=value ...]")
		fmt.Fprintln(io.err, "       agentrt model families")
		fmt.Fprintln(io.err, "\ncheck prints the model family's profile and runs its self-test (what an agent runs before it starts);")
		fmt.Fprintln(io.err, "families lists the known families, their parsers and whether they can run agents.")
	}
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	switch args[0] {
	case "check":
		return runModelCheck(ctx, args[1:], io)
	case "families":
		if len(args) > 1 {
			fmt.Fprintf(io.err, "agentrt model families: unexpected argument %q\n", args[1])
			return exitUsage
		}
		printFamilies(io.out)
		return exitOK
	case "-h", "--help", "help":
		usage()
		return exitOK
	}
	fmt.Fprintf(io.err, "agentrt model: unknown subcommand %q\n", args[0])
	usage()
	return exitUsage
}

const modelCheckUsage = `usage: agentrt model check --model DIR|ORG/NAME [--revision REV] [--family NAME] [--parser NAME] [--chat-template FILE] [--set key=value ...]

Prints the model family's profile and runs the self-test that every agent runs before it starts:
render a tool conversation, check that the delta after a tool call equals the full render's tail,
and read the rendered tool call back with the parser. Exit status 0 when it passes, 1 when not.
`

func runModelCheck(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt model check", "agentrt model check", io, modelCheckUsage)
	model := fs.String("model", "", "Hugging Face model folder (tokenizer_config.json and a chat template; tokenizer.json if present), or a model id (Org/Name) fetched into the hub cache")
	revision := fs.String("revision", "", "branch, tag or commit of a Hugging Face model id (default main)")
	fam := fs.String("family", "", "the model family (default: detected from the folder): "+strings.Join(family.Names(), ", "))
	parser := fs.String("parser", "", "tool-call parser: a built-in name or a parser plugin .wasm (default: the family's)")
	cacheDir := fs.String("cache-dir", defaultWasmCacheDir(), "wazero compilation cache directory (\"\" for none)")
	chatTemplate := fs.String("chat-template", "", "a chat template file that replaces the folder's, as an agent's chat_template (the file SGLang is launched with)")
	kwargs := setFlags{}
	fs.Var(kwargs, "set", "chat_template_kwargs key=value (repeatable), as the agent sets them; the value is JSON when it parses")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if *model == "" || fs.NArg() > 0 {
		fmt.Fprintln(io.err, "agentrt model check: --model is required, and no positional arguments")
		fs.Usage()
		return exitUsage
	}
	if *fam != "" {
		if _, err := family.Lookup(*fam); err != nil {
			return fs.fail(exitUsage, "--family: %v", err)
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
	if *chatTemplate != "" {
		src, err := os.ReadFile(*chatTemplate)
		if err != nil {
			return fs.fail(exitUsage, "--chat-template: %v", err)
		}
		m = m.WithChatTemplate(string(src), *chatTemplate)
	}
	host, err := plugin.NewHost(ctx, plugin.Config{CacheDir: *cacheDir})
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	defer host.Close(context.WithoutCancel(ctx))
	d, report := system.CheckFamily(ctx, host, m, nil, *fam, *parser, kwargs.kwargs())
	printCheck(io.out, m, d, report)
	if err := report.Err(); err != nil {
		fmt.Fprintf(io.out, "\nFAIL: agents of this model do not start: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(io.out, "\nPASS: agents of this model can start")
	return exitOK
}

// loadModelFolder loads a model folder with its tokenizer when it has one, else only its template and config
// (what `model check` and `template` need).
func loadModelFolder(dir string) (*tito.Model, error) {
	if _, err := os.Stat(filepath.Join(dir, tito.FileTokenizer)); err == nil {
		return tito.LoadModel(dir)
	}
	return tito.LoadModelTemplate(dir)
}

func printCheck(w io.Writer, m *tito.Model, d family.Detection, r *family.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	tok := "yes"
	if m.Tokenizer == nil {
		tok = "no (" + tito.FileTokenizer + " absent: stop tokens are not looked up)"
	}
	fmt.Fprintf(tw, "model:\t%s\n", m.Dir)
	fmt.Fprintf(tw, "template:\t%s (sha256 %s)\n", orDash(m.TemplateFile), short(m.TemplateSHA256))
	fmt.Fprintf(tw, "tokenizer:\t%s\n", tok)
	if p := d.Profile; p != nil {
		fmt.Fprintf(tw, "family:\t%s (by %s)\n", p.Name, d.By)
		if len(d.Others) > 0 {
			fmt.Fprintf(tw, "also matched:\t%s\n", strings.Join(d.Others, ", "))
		}
		fmt.Fprintf(tw, "models:\t%s\n", p.Models)
		fmt.Fprintf(tw, "parser:\t%s\n", orDash(r.Parser))
		fmt.Fprintf(tw, "reasoning:\t%s\n", p.Reasoning)
		if r.History != "" {
			fmt.Fprintf(tw, "history:\t%s\n", r.History)
		}
		fmt.Fprintf(tw, "end of turn:\t%s\n", endOfTurnRule(m, p))
		if r.WindowDetail != "" {
			fmt.Fprintf(tw, "delta window:\t%s\n", r.WindowDetail)
		}
		for i, k := range p.Kwargs {
			label := ""
			if i == 0 {
				label = "template kwargs:"
			}
			fmt.Fprintf(tw, "%s\t%s: %s\n", label, k.Name, k.Effect)
		}
		if why := p.Why(); why != "" {
			fmt.Fprintf(tw, "unsupported:\t%s\n", why)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nself-test:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		mark := "ok"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, c.Name, c.Detail)
	}
	tw.Flush()
}

func endOfTurnRule(m *tito.Model, p *family.Profile) string {
	stops := append([]string{m.EOSToken}, p.Stops...)
	s := strings.Join(quoteAll(stops), ", ")
	if p.StopBeginsNext {
		return s + "; the stop token begins the next message (the template writes none after an assistant turn)"
	}
	return s
}

func printFamilies(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tPARSER\tREASONING\tEXTRA STOPS\tSTATUS")
	for i := range family.Profiles {
		p := &family.Profiles[i]
		status := "parser built in"
		if why := p.Why(); why != "" {
			status = "refused: " + why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, orDash(p.Parser), p.Reasoning, orDash(strings.Join(p.Stops, " ")), status)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nA family with a built-in parser still has to pass the self-test on the model's own template:")
	fmt.Fprintln(w, "`agentrt model check --model DIR` runs it (every agent runs it before it starts).")
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return orDash(s)
}
