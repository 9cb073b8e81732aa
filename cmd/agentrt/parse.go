package main

import "context"

func runParse(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "parse", "issue 4: built-in parsers")
}
