package main

import "context"

func runRun(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "run", "issue 5: the agent loop and agentrt run")
}
