// Package testmodel is the TestMain of the runtime's test packages that run real episodes: it loads the Qwen3
// model folder ($AGENTRT_QWEN3_MODEL, which ~/.cache/agentrt/env.sh sets) and a plugin host whose compilation cache
// the test binaries share. Only tests import it.
package testmodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/tito"
)

// Main sets *model and *host, runs the tests and exits with their status; pkg names the package in the message
// of a missing model folder.
func Main(m *testing.M, pkg string, model **tito.Model, host **plugin.Host) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		fmt.Fprintf(os.Stderr, "%s tests need AGENTRT_QWEN3_MODEL: run `make setup` and `source ~/.cache/agentrt/env.sh`\n", pkg)
		os.Exit(1)
	}
	var err error
	if *model, err = tito.LoadModel(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cache := filepath.Join(os.TempDir(), "agentrt-test-wazero")
	if c := os.Getenv("AGENTRT_CACHE"); c != "" {
		cache = filepath.Join(c, "wazero-test")
	}
	os.MkdirAll(cache, 0o755)
	if *host, err = plugin.NewHost(context.Background(), plugin.Config{CacheDir: cache}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	(*host).Close(context.Background())
	os.Exit(code)
}
