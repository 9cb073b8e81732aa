// Command agentrt runs agentic RL rollouts against SGLang and streams token-exact trajectories to trainers.
//
// This package only wires components together: each subcommand lives in its own file, parses its flags into a
// config, builds library values and calls one library entry point.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
)

// Exit codes, named so that scripts and tests can rely on them.
const (
	exitOK        = 0
	exitFailure   = 1 // the command ran and failed (bad input, a failed rollout run, ...)
	exitUsage     = 2 // bad flags or arguments
	exitStartup   = 3 // could not start: config, model folder, plugins, server unreachable
	exitForceQuit = 4 // a second interrupt
)

// stdio is what a subcommand may touch of the process; tests pass buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, args []string, io stdio) int
}

// commands lists every subcommand; each is implemented in the file of the same name.
func commands() map[string]command {
	return map[string]command{
		"init":     {"write a commented runtime.toml for a model (a Hugging Face id or a folder)", runInit},
		"serve":    {"run the rollout service that trainers drive over WebSocket", runServe},
		"run":      {"run rollouts for a JSONL file of prompts and write trajectories", runRun},
		"emulate":  {"serve a protocol-faithful SGLang stand-in (no GPU)", runEmulate},
		"tokenize": {"encode stdin with a model's tokenizer (or --decode ids)", runTokenize},
		"template": {"render a model's chat template for a conversation", runTemplate},
		"parse":    {"parse a completion's tool calls with a built-in parser", runParse},
		"plugin":   {"inspect or test a Wasm plugin", runPlugin},
		"model":    {"check a model folder: its family profile and self-test (or list the families)", runModel},
		"version":  {"print the version, Go version, commit and embedded plugin hashes", runVersion},
		"view":     {"open the trajectory viewer on a JSONL file of trajectories (in a browser)", runView},
	}
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

func run(ctx context.Context, args []string, io stdio) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(io.err, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(io.err, "agentrt: unknown command %q\n\n", args[0])
		usage(io.err, cmds)
		return exitUsage
	}
	return c.run(ctx, args[1:], io)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: agentrt <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'agentrt <command> -h' for a command's flags.")
}
