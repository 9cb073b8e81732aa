package main

import "context"

func runPlugin(ctx context.Context, args []string, io stdio) int {
	return notYet(io, "plugin", "issue 4: the plugin system")
}
