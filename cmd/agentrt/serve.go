package main

import "context"

func runServe(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "serve", "issue 6: agentrt serve and the WebSocket stream")
}
