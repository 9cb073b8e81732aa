package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/plugins/builtin"
)

// runVersion prints what a bug report needs: the module version, the Go toolchain, the VCS commit the binary was
// built from (when the build recorded it) and the sha256 of every embedded Wasm module, which trajectories record.
func runVersion(_ context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt version", "version", io, "usage: agentrt version\n\nPrints the version, Go version, commit and sha256 of the embedded plugins.\n")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fs.fail(exitUsage, "unexpected argument %q", fs.Arg(0))
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
