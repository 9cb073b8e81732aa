package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// flags is a subcommand's flag set: its errors and usage go to stderr, parse says how the command ends when the
// flags end it, and fail prints a message under the command's name.
type flags struct {
	*flag.FlagSet
	cmd string // "agentrt tokenize": what the command's messages start with
	io  stdio
}

// newFlags returns the flag set of the command cmd (set is the flag set's own name); usage, if not empty, is
// printed before the flags' defaults by -h and after a bad flag.
func newFlags(cmd, set string, io stdio, usage string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet(set, flag.ContinueOnError), cmd: cmd, io: io}
	f.SetOutput(io.err)
	if usage != "" {
		f.Usage = func() { fmt.Fprint(io.err, usage); f.PrintDefaults() }
	}
	return f
}

// parse parses args. With positional set, the command takes at most one positional argument (CONFIG, FILE),
// before, among or after the flags; a second is a usage error. ok is false when the flags end the command, which
// returns code: exitOK after -h, exitUsage after a bad flag or argument (the reason printed).
func (f *flags) parse(args []string, positional *string) (code int, ok bool) {
	if positional != nil && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		*positional, args = args[0], args[1:]
	}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if positional != nil {
		rest := f.Args()
		if *positional == "" && len(rest) > 0 {
			// flags may follow the positional argument too (the flag package stops at it)
			*positional = rest[0]
			if err := f.Parse(rest[1:]); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return exitOK, false
				}
				return exitUsage, false
			}
			rest = f.Args()
		}
		if len(rest) > 0 {
			f.fail(exitUsage, "unexpected argument %q", rest[0])
			f.Usage()
			return exitUsage, false
		}
	}
	return exitOK, true
}

// fail prints "CMD: message" to stderr and returns code.
func (f *flags) fail(code int, format string, a ...any) int {
	fmt.Fprintf(f.io.err, f.cmd+": "+format+"\n", a...)
	return code
}
