package main

import "context"

func runEmulate(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "emulate", "issue 3: the SGLang emulator")
}
