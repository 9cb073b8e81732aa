package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/runtime/config"
)

const initUsage = `usage: agentrt init [--model MODEL] [--revision REV] [--force] [FILE]

Writes FILE (default runtime.toml): the configuration agentrt ships, commented key by key, with the built-in
SGLang emulator for inference and MODEL as the agent's model: a Hugging Face model id (fetched into the hub cache
when serve starts: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE apply, docs/hub-models.md) or a model folder. Then:

  agentrt serve FILE

flags:
`

// defaultInitModel is the model `agentrt init` names when given none: the one the built-in emulator's agentic
// policy and the shipped agent (Hermes tool calls, thinking off) are written for.
const defaultInitModel = "Qwen/Qwen3-8B"

// shippedModelLine is runtime.toml's model line, which init replaces (TestInitWritesAConfigServeLoads holds the
// shipped file to it).
const shippedModelLine = `model = "~/.cache/agentrt/models/qwen3"`

func runInit(_ context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt init", "init", io, initUsage)
	model := fs.String("model", defaultInitModel, "Hugging Face model id (Org/Name) or model folder")
	revision := fs.String("revision", "", "branch, tag or commit of the model id (default main)")
	force := fs.Bool("force", false, "overwrite FILE if it exists")
	var path string
	if code, ok := fs.parse(args, &path); !ok {
		return code
	}
	if path == "" {
		path = "runtime.toml"
	}
	m := *model
	if st, err := os.Stat(m); err == nil && st.IsDir() {
		if m, err = filepath.Abs(m); err != nil {
			return fs.fail(exitFailure, "%v", err)
		}
	}
	line := "model = " + strconv.Quote(m)
	if *revision != "" {
		line += "\nrevision = " + strconv.Quote(*revision)
	}
	if !strings.Contains(agentrt.RuntimeTOML, shippedModelLine) {
		return fs.fail(exitFailure, "the embedded runtime.toml has no model line (a build from a broken checkout)")
	}
	text := strings.Replace(agentrt.RuntimeTOML, shippedModelLine, line, 1)
	// What serve will read: a mistyped model or revision fails here, not at the first start.
	if _, err := config.Parse(path, text); err != nil {
		return fs.fail(exitUsage, "%v", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fs.fail(exitFailure, "%s exists (--force overwrites it)", path)
		}
		return fs.fail(exitFailure, "%v", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fs.fail(exitFailure, "%v", err)
	}
	if err := f.Close(); err != nil {
		return fs.fail(exitFailure, "%v", err)
	}
	fmt.Fprintf(io.out, "wrote %s (model %s); start it with: agentrt serve %s\n", path, m, path)
	return exitOK
}
