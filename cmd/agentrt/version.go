package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"runtime/debug"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/builtin"
)

// runVersion prints what a bug report needs: the module version, the Go toolchain, the VCS commit the binary was
// built from (when the build recorded it) and the sha256 of every embedded Wasm module, which trajectories record.
func runVersion(_ context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: agentrt version\n\nPrints the version, Go version, commit and sha256 of the embedded plugins.")
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(io.err, "agentrt version: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	version, commit, goVersion := "(unknown)", "(not recorded)", "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					commit += " (modified)"
				}
			}
		}
	}
	fmt.Fprintf(io.out, "agentrt %s\ngo %s\ncommit %s\n", version, goVersion, commit)
	fmt.Fprintf(io.out, "parsers.wasm sha256 %s\n", sha(parsers.Wasm()))
	for _, n := range builtin.Names() {
		w, _ := builtin.Wasm(n)
		fmt.Fprintf(io.out, "%s.wasm sha256 %s\n", n, sha(w))
	}
	return 0
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
