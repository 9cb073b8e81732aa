package hfhub_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentrt/agentrt/runtime/hfhub"
	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
)

// Resolve a model id to a folder of its tokenizer files, pinned to a commit: online once, then offline from the
// cache (HF_HUB_OFFLINE=1).
func Example_snapshot() {
	hub := hfhubtest.New() // a loopback hub; in a program, FromEnv(os.Getenv) points at huggingface.co
	defer hub.Close()
	commit := hub.Push("Org/Tiny", map[string][]byte{
		"tokenizer.json":        []byte(`{"model": {"type": "WordLevel", "vocab": {}}}`),
		"tokenizer_config.json": []byte(`{}`),
		"model.safetensors":     []byte("weights"),
	})
	cache, _ := os.MkdirTemp("", "hub")
	defer os.RemoveAll(cache)
	tokenizerFiles := func(p string) bool { return strings.HasPrefix(p, "tokenizer") }

	for _, offline := range []bool{false, true} {
		c, err := hfhub.New(hfhub.Config{Endpoint: hub.URL, CacheDir: cache, Offline: offline})
		if err != nil {
			panic(err)
		}
		s, err := c.Snapshot(context.Background(), "Org/Tiny", "main", tokenizerFiles)
		if err != nil {
			panic(err)
		}
		fmt.Println(s.Commit == commit, s.Offline, s.Files, strings.TrimPrefix(s.Dir, cache) == "/models--Org--Tiny/snapshots/"+commit)
	}
	// Output:
	// true false [tokenizer.json tokenizer_config.json] true
	// true true [tokenizer.json tokenizer_config.json] true
}
