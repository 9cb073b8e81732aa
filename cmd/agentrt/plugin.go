package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// runPlugin is `agentrt plugin inspect|test`: tools for plugin authors.
func runPlugin(ctx context.Context, args []string, io stdio) int {
	usage := func() {
		fmt.Fprintln(io.err, `usage: agentrt plugin inspect FILE.wasm [--json]
       agentrt plugin test FILE.wasm --input JSON [--config JSON] [--tools FILE] [--trusted] [--timeout D]

inspect  prints a plugin's kind, name, ABI version, tools or events, imports, exports and sha256
test     loads a plugin (sandboxed unless --trusted) and makes one call; --input is
           parser: the completion as a JSON string (or {"text": "..."})
           tool:   {"name": "...", "arguments": {...}} ("name" may be omitted when the module has one tool)
           hook:   an event, e.g. {"event": "message_added", "counts": {...}, "message": {...}}
         see plugins/ABI.md for every shape`)
	}
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	switch args[0] {
	case "inspect":
		return runPluginInspect(ctx, args[1:], io)
	case "test":
		return runPluginTest(ctx, args[1:], io)
	case "-h", "--help", "help":
		usage()
		return exitOK
	}
	fmt.Fprintf(io.err, "agentrt plugin: unknown subcommand %q (want inspect or test)\n", args[0])
	usage()
	return exitUsage
}

func runPluginInspect(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt plugin inspect", "plugin inspect", io, "")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	cacheDir := fs.String("cache-dir", defaultWasmCacheDir(), "wazero compilation cache directory (\"\" for none)")
	var file string
	if code, ok := fs.parse(args, &file); !ok {
		return code
	}
	if file == "" {
		return fs.fail(exitUsage, "FILE.wasm is required")
	}
	wasm, host, code, ok := fs.openWasm(ctx, file, *cacheDir)
	if !ok {
		return code
	}
	defer host.Close(context.WithoutCancel(ctx))
	ins, ierr := host.Inspect(ctx, file, wasm)
	if *asJSON {
		out := struct {
			File string `json:"file"`
			*plugin.Inspection
			Error string `json:"error,omitempty"`
		}{File: file, Inspection: ins}
		if ierr != nil {
			out.Error = ierr.Error()
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(io.out, "%s\n", b)
	} else {
		printInspection(io, file, ins)
	}
	if ierr != nil {
		return fs.fail(exitFailure, "%v", ierr)
	}
	return exitOK
}

func printInspection(io stdio, file string, ins *plugin.Inspection) {
	w := io.out
	fmt.Fprintf(w, "file:        %s\n", file)
	fmt.Fprintf(w, "sha256:      %s\n", ins.SHA256)
	fmt.Fprintf(w, "size:        %d bytes\n", ins.Size)
	if ins.ABIVersion != 0 {
		fmt.Fprintf(w, "abi_version: %d\n", ins.ABIVersion)
	}
	if mf := ins.Manifest; mf != nil {
		fmt.Fprintf(w, "kind:        %s\n", mf.Kind)
		fmt.Fprintf(w, "name:        %s\n", mf.Name)
		if mf.Version != "" {
			fmt.Fprintf(w, "version:     %s\n", mf.Version)
		}
		if mf.Description != "" {
			fmt.Fprintf(w, "description: %s\n", mf.Description)
		}
		if len(mf.Tools) > 0 {
			fmt.Fprintln(w, "tools:")
			for _, t := range mf.Tools {
				fmt.Fprintf(w, "  %s: %s\n", t.Name, t.Description)
				if len(t.Parameters) > 0 {
					fmt.Fprintf(w, "    parameters: %s\n", t.Parameters)
				}
			}
		}
		if len(mf.Events) > 0 {
			fmt.Fprintf(w, "events:      %s\n", strings.Join(mf.Events, ", "))
		}
		if len(mf.MessageRoles) > 0 {
			fmt.Fprintf(w, "messages:    %s (message_added for these roles only)\n", strings.Join(mf.MessageRoles, ", "))
		}
		if len(mf.ConfigSchema) > 0 {
			fmt.Fprintf(w, "config:      %s\n", mf.ConfigSchema)
		}
	}
	fmt.Fprintln(w, "imports:")
	for _, s := range ins.Imports {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprintln(w, "exports:")
	for _, s := range ins.Exports {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

func runPluginTest(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt plugin test", "plugin test", io, "")
	input := fs.String("input", "", "the call's input as `JSON`; its shape per kind: agentrt plugin -h")
	config := fs.String("config", "", "the plugin's config as JSON (what runtime.toml would pass)")
	toolsFile := fs.String("tools", "", "for parsers: a JSON file with the agent's tool specs (OpenAI tools list)")
	trusted := fs.Bool("trusted", false, "run without the sandbox's per-call interruption (as built-ins run)")
	timeout := fs.Duration("timeout", plugin.DefaultTimeout, "wall-clock limit of the call (sandboxed)")
	cacheDir := fs.String("cache-dir", defaultWasmCacheDir(), "wazero compilation cache directory (\"\" for none)")
	var file string
	if code, ok := fs.parse(args, &file); !ok {
		return code
	}
	if file == "" || *input == "" {
		return fs.fail(exitUsage, "FILE.wasm and --input are required")
	}
	if !json.Valid([]byte(*input)) {
		return fs.fail(exitUsage, "--input is not valid JSON: %s", *input)
	}
	var cfg []byte
	if *config != "" {
		if !json.Valid([]byte(*config)) {
			return fs.fail(exitUsage, "--config is not valid JSON: %s", *config)
		}
		cfg = []byte(*config)
	}
	var specs []abi.ToolSpec
	if *toolsFile != "" {
		var err error
		if specs, err = readToolSpecs(*toolsFile); err != nil {
			return fs.fail(exitUsage, "--tools %v", err)
		}
	}
	wasm, host, code, ok := fs.openWasm(ctx, file, *cacheDir)
	if !ok {
		return code
	}
	defer host.Close(context.WithoutCancel(ctx))
	mod, err := host.Load(ctx, plugin.Spec{Name: file, Wasm: wasm, Trusted: *trusted, Config: cfg, Tools: specs, PoolSize: 1,
		Limits: plugin.Limits{Timeout: *timeout}})
	if err != nil {
		fmt.Fprintf(io.err, "agentrt plugin test: %v\n", err)
		return exitFailure
	}
	start := time.Now()
	out, err := pluginTestCall(ctx, mod, []byte(*input))
	elapsed := time.Since(start)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt plugin test: %v\n", err)
		return exitFailure
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintf(io.err, "agentrt plugin test: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(io.out, "%s\n", b)
	fmt.Fprintf(io.err, "%s %s (sha256 %s): one call in %v\n", mod.Kind(), mod.Name(), mod.SHA256()[:12], elapsed.Round(time.Microsecond))
	return exitOK
}

// pluginTestCall makes one call through the module's typed facade and returns what to print.
func pluginTestCall(ctx context.Context, mod *plugin.Module, input []byte) (any, error) {
	switch mod.Kind() {
	case abi.KindParser:
		var text string
		if err := json.Unmarshal(input, &text); err != nil {
			var obj struct {
				Text *string `json:"text"`
			}
			if json.Unmarshal(input, &obj) != nil || obj.Text == nil {
				return nil, fmt.Errorf(`--input for a parser is the completion as a JSON string, or {"text": "..."}`)
			}
			text = *obj.Text
		}
		p, _ := mod.Parser()
		return p.Parse(ctx, text)
	case abi.KindTool:
		var call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(input, &call); err != nil {
			return nil, fmt.Errorf(`--input for a tool is {"name": "...", "arguments": {...}}: %v`, err)
		}
		t, _ := mod.Tool()
		if call.Name == "" {
			specs := t.Specs()
			if len(specs) != 1 {
				names := make([]string, len(specs))
				for i, s := range specs {
					names[i] = s.Name
				}
				return nil, fmt.Errorf(`--input needs "name": the module has tools %s`, strings.Join(names, ", "))
			}
			call.Name = specs[0].Name
		}
		r, err := t.Call(ctx, call.Name, call.Arguments)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"is_error": r.IsError}
		if r.JSON != nil {
			out["json"] = r.JSON
		} else {
			out["text"] = r.Text
		}
		if r.ErrorCode != "" {
			out["error_code"] = r.ErrorCode
		}
		return out, nil
	case abi.KindHook:
		var ev abi.Event
		if err := json.Unmarshal(input, &ev); err != nil {
			return nil, fmt.Errorf("--input for a hook is an event object: %v", err)
		}
		h, _ := mod.Hook()
		if !h.Wants(ev.Event) {
			return nil, fmt.Errorf("the hook does not subscribe to %q (it wants %s)", ev.Event, strings.Join(h.Events(), ", "))
		}
		return h.Handle(ctx, &ev)
	}
	return nil, fmt.Errorf("unknown plugin kind %q", mod.Kind())
}

// openWasm reads a plugin file and starts a plugin host with the compilation cache in cacheDir; when either
// fails it says why and ok is false (code: exitFailure for the file, exitStartup for the host).
func (f *flags) openWasm(ctx context.Context, file, cacheDir string) (wasm []byte, host *plugin.Host, code int, ok bool) {
	wasm, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, f.fail(exitFailure, "%v", err), false
	}
	if host, err = plugin.NewHost(ctx, plugin.Config{CacheDir: cacheDir}); err != nil {
		return nil, nil, f.fail(exitStartup, "%v", err), false
	}
	return wasm, host, exitOK, true
}
