package main

import "context"

func runTokenize(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "tokenize", "issue 2: the TITO core")
}
