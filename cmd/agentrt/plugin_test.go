package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pluginCLICache is a compilation cache shared by the plugin CLI tests (the user cache, like `agentrt` itself uses,
// so repeated runs do not recompile the 3 MB Go guests).
func pluginCLICache(t *testing.T) string {
	t.Helper()
	if d := defaultWasmCacheDir(); d != "" {
		return d
	}
	return t.TempDir()
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestPluginInspect(t *testing.T) {
	cache := pluginCLICache(t)
	file := filepath.Join("..", "..", "plugins", "builtin", "calculator", "calculator.wasm")
	code, out, errs := runCLI(t, "plugin", "inspect", file, "--cache-dir", cache)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"kind:        tool", "name:        calculator", "abi_version: 1", "  calculator: Evaluate", "agentrt_call (i32,i32)->i64", "memory (memory)", "sha256:      "} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "plugin", "inspect", "--json", file, "--cache-dir", cache)
	var js struct {
		SHA256   string `json:"sha256"`
		Manifest struct {
			Kind string `json:"kind"`
		} `json:"manifest"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil || len(js.SHA256) != 64 || js.Manifest.Kind != "tool" {
		t.Fatalf("inspect --json: exit %d, %s", code, out)
	}
	bad := filepath.Join("..", "..", "runtime", "plugin", "testdata", "wat", "abi2.wasm")
	code, out, errs = runCLI(t, "plugin", "inspect", bad, "--cache-dir", cache)
	if code != exitFailure || !strings.Contains(out, "abi_version: 2") || !strings.Contains(errs, "was built for ABI version 2") {
		t.Fatalf("inspect of an ABI v2 plugin: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, _ := runCLI(t, "plugin", "inspect"); code != exitUsage {
		t.Errorf("inspect without a file: exit %d", code)
	}
	if code, _, errs := runCLI(t, "plugin", "inspect", filepath.Join(t.TempDir(), "missing.wasm")); code != exitFailure || !strings.Contains(errs, "no such file") {
		t.Errorf("inspect of a missing file: exit %d %s", code, errs)
	}
}

func TestPluginTest(t *testing.T) {
	cache := pluginCLICache(t)
	root := filepath.Join("..", "..")
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"tool", []string{"plugins/builtin/calculator/calculator.wasm", "--input", `{"name":"calculator","arguments":{"expression":"6*7"}}`}, exitOK, `"text": "42"`, "tool calculator"},
		{"tool without name", []string{"plugins/builtin/calculator/calculator.wasm", "--input", `{"arguments":{"expression":"1/0"}}`}, exitOK, `"error_code": "division_by_zero"`, ""},
		{"hook with config", []string{"plugins/builtin/limiter/limiter.wasm", "--config", `{"max_tool_iters":1}`, "--input", `{"event":"message_added","counts":{"tool_iters":1},"message":{"role":"tool"}}`}, exitOK, `"reason": "max_tool_iters"`, ""},
		{"hook bad config", []string{"plugins/builtin/limiter/limiter.wasm", "--config", `{"max_tool_iters":-1}`, "--input", `{"event":"message_added"}`}, exitFailure, "", "refused its configuration"},
		{"hook unsubscribed event", []string{"plugins/builtin/limiter/limiter.wasm", "--input", `{"event":"episode_end"}`}, exitFailure, "", `does not subscribe to "episode_end"`},
		{"parser with tools", []string{"plugins/examples/go-xmltag/xmltag.wasm", "--tools", tools, "--input", `"<tool_call>{\"name\":\"get_weather\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"nope\"}</tool_call>"`}, exitOK, `"reason": "unknown_tool"`, "parser xmltag"},
		{"parser text object", []string{"plugins/examples/go-xmltag/xmltag.wasm", "--input", `{"text":"plain"}`}, exitOK, `"normal_text": "plain"`, ""},
		{"bad input JSON", []string{"plugins/builtin/calculator/calculator.wasm", "--input", `{nope`}, exitUsage, "", "--input is not valid JSON"},
		{"missing input", []string{"plugins/builtin/calculator/calculator.wasm"}, exitUsage, "", "--input are required"},
		{"broken guest", []string{"runtime/plugin/testdata/wat/trap.wasm", "--input", `{"name":"noop"}`}, exitFailure, "", "agentrt_call trapped: wasm error: unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"plugin", "test"}, tt.args...)
			if !strings.HasPrefix(args[2], "-") {
				args[2] = filepath.Join(root, args[2])
			}
			args = append(args, "--cache-dir", cache)
			code, out, errs := runCLI(t, args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errs, tt.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout containing %q and stderr containing %q", code, tt.wantCode, out, errs, tt.wantOut, tt.wantErr)
			}
		})
	}
	if code, _, errs := runCLI(t, "plugin", "frobnicate"); code != exitUsage || !strings.Contains(errs, `unknown subcommand "frobnicate"`) {
		t.Errorf("unknown subcommand: exit %d %s", code, errs)
	}
	// A refused config is said once: the plugin's message, its code, and the plugin's name.
	_, _, errs := runCLI(t, "plugin", "test", filepath.Join(root, "plugins/builtin/limiter/limiter.wasm"), "--config", `{"max_tool_iters":-1}`,
		"--input", `{"event":"message_added"}`, "--cache-dir", cache)
	if want := "the plugin loop_limiter refused its configuration (bad_config): "; !strings.Contains(errs, want) || strings.Count(errs, "max_tool_iters") != 1 {
		t.Errorf("refused config: stderr %q, want %q and the message once", errs, want)
	}
}

// TestPluginTestHelp checks each flag's value name in `agentrt plugin test -h` (the flag package takes the first
// `quoted` word of a usage string as the value name).
func TestPluginTestHelp(t *testing.T) {
	code, _, errs := runCLI(t, "plugin", "test", "-h")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"  -input JSON\n", "  -config string\n", "  -tools string\n", "  -timeout duration\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("plugin test -h lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "-input agentrt") {
		t.Errorf("plugin test -h names -input's value after a command:\n%s", errs)
	}
}
