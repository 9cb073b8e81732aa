package main

import "context"

func runTemplate(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "template", "issue 2: the TITO core")
}
