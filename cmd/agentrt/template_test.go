package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// templateCase is the part of tito's golden template cases (scripts/golden/template_golden.py, from transformers)
// that the CLI test needs.
type templateCase struct {
	ModelEnv            string                     `json:"model_env"`
	Family              string                     `json:"family"`
	Kind                string                     `json:"kind"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	Kwargs              map[string]json.RawMessage `json:"kwargs"`
	Expected            string                     `json:"expected"`
	ExpectedError       string                     `json:"expected_error"`
	Raised              bool                       `json:"raised"`
}

// cliCases are the golden cases the CLI test runs: each family, tools, --set kwargs, and raise_exception.
var cliCases = map[string]bool{
	"qwen3_render_tool_rounds":         true,
	"qwen3_render_thinking_off":        true,
	"qwen25_render_tools_no_system":    true,
	"llama31_render_tools_in_system":   true,
	"llama31_render_tool_rounds":       true,
	"llama31_error_two_tool_calls":     true,
	"llama31_error_tools_without_user": true,
}

// TestTemplateCommandGolden runs `agentrt template` on transformers' golden cases and compares stdout byte for byte.
func TestTemplateCommandGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "tito", "testdata", "template", "*.json"))
	if len(files) == 0 {
		t.Fatal("no golden template cases in tito/testdata/template")
	}
	for _, f := range files {
		var c templateCase
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !cliCases[name] { // tito's tests cover every case; the CLI needs a few (each loads a model folder)
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := os.Getenv(c.ModelEnv)
			if dir == "" {
				t.Skipf("$%s is not set (source ~/.cache/agentrt/env.sh)", c.ModelEnv)
			}
			tmp := t.TempDir()
			msgFile := filepath.Join(tmp, "messages.json")
			if err := os.WriteFile(msgFile, c.Messages, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"template", "--model", dir, "--messages", msgFile}
			if len(c.Tools) > 0 && string(c.Tools) != "null" {
				toolFile := filepath.Join(tmp, "tools.json")
				if err := os.WriteFile(toolFile, c.Tools, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--tools", toolFile)
			}
			if c.AddGenerationPrompt {
				args = append(args, "--add-generation-prompt")
			}
			keys := make([]string, 0, len(c.Kwargs))
			for k := range c.Kwargs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				args = append(args, "--set", k+"="+string(c.Kwargs[k]))
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr})
			if c.Kind == "error" {
				msg := strings.TrimPrefix(c.ExpectedError, "TemplateError: ")
				if code != exitFailure || stdout.Len() != 0 || !strings.Contains(stderr.String(), msg) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and the template's message %q", code, stdout.String(), stderr.String(), exitFailure, msg)
				}
				return
			}
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if got := stdout.String(); got != c.Expected {
				t.Fatalf("stdout differs from transformers\n got: %q\nwant: %q", got, c.Expected)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr not empty: %q", stderr.String())
			}
		})
	}
}

// TestTemplateCommandErrors checks the exit codes and messages of bad input.
func TestTemplateCommandErrors(t *testing.T) {
	qwen := os.Getenv("AGENTRT_QWEN3_MODEL")
	if qwen == "" {
		t.Skip("$AGENTRT_QWEN3_MODEL is not set (source ~/.cache/agentrt/env.sh)")
	}
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"role": "user", "content": "hi"}]`)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantErr  string
		wantOut  string
	}{
		{"missing flags", []string{"--model", qwen}, "", exitUsage, "--model and --messages are required", ""},
		{"bad set", []string{"--model", qwen, "--messages", good, "--set", "novalue"}, "", exitUsage, "want key=value", ""},
		{"invalid json", []string{"--model", qwen, "--messages", write("bad.json", "[{\"role\": \"user\",\n \"content\": }]")}, "", exitFailure, "line 2, column", ""},
		{"unknown role", []string{"--model", qwen, "--messages", write("role.json", `[{"role":"user","content":"a"},{"role":"asistant","content":"b"}]`)}, "", exitFailure, `message 1: role: unknown role "asistant"`, ""},
		{"wrong field type", []string{"--model", qwen, "--messages", write("type.json", `[{"role":"assistant","tool_calls":[{"function":{"name":7}}]}]`)}, "", exitFailure, "message 0: tool_calls[0].function.name: want a string", ""},
		{"tools not objects", []string{"--model", qwen, "--messages", good, "--tools", write("tools.json", `[{"type":"function"}, 3]`)}, "", exitFailure, "tool 1: want a JSON object", ""},
		{"missing file", []string{"--model", qwen, "--messages", filepath.Join(tmp, "nope.json")}, "", exitFailure, "no such file", ""},
		{"missing model", []string{"--model", filepath.Join(tmp, "nomodel"), "--messages", good}, "", exitStartup, "nomodel", ""},
		{"stdin and set", []string{"--model", qwen, "--messages", "-", "--add-generation-prompt", "--set", "enable_thinking=false"}, `[{"role":"user","content":"hi"}]`, exitOK, "",
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"delta", []string{"--model", qwen, "--messages", "-", "--delta", "--add-generation-prompt"}, `[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},{"role":"tool","content":"42"}]`, exitOK, "",
			"\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"template"}, tt.args...), stdio{strings.NewReader(tt.stdin), &stdout, &stderr})
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) || stdout.String() != tt.wantOut {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// familyGolden is the part of a family's golden corpus (tito/testdata/families/golden, from transformers by
// scripts/golden/families_golden.py) that the delta test needs.
type familyGolden struct {
	Family string `json:"family"`
	Cases  []struct {
		Kind          string                     `json:"kind"`
		Name          string                     `json:"name"`
		Kwargs        map[string]json.RawMessage `json:"kwargs"`
		History       json.RawMessage            `json:"history"`
		New           json.RawMessage            `json:"new"`
		Tools         json.RawMessage            `json:"tools"`
		ExpectedDelta *string                    `json:"expected_delta"`
	} `json:"cases"`
}

// TestTemplateDeltaGoldenFamilies runs `agentrt template --delta` on every family's golden deltas (the tail of
// transformers' full render after the history's end of turn) and compares stdout byte for byte. The command cuts
// where the agent loop does, by the family profile's end-of-turn tokens (detected from the folder): gpt-oss's
// <|call|> and GLM's stop tokens that begin the next message included, where the template alone knows only EOS.
func TestTemplateDeltaGoldenFamilies(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "tito", "testdata", "families", "golden", "*.json"))
	if len(files) == 0 {
		t.Fatal("no golden family corpus in tito/testdata/families/golden")
	}
	tmp := t.TempDir()
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g familyGolden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join("..", "..", "tito", "testdata", "families", g.Family)
		for i, c := range g.Cases {
			if c.Kind != "delta" || c.ExpectedDelta == nil {
				continue // a render, or a conversation whose full render does not continue its history (no exact delta)
			}
			n++
			msgs := append(slices.Clip(unmarshalList(t, c.History)), unmarshalList(t, c.New)...)
			msgFile := filepath.Join(tmp, fmt.Sprintf("%s-%d.json", g.Family, i))
			b, _ := json.Marshal(msgs)
			if err := os.WriteFile(msgFile, b, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"template", "--model", dir, "--messages", msgFile, "--add-generation-prompt", "--delta"}
			if len(c.Tools) > 0 && string(c.Tools) != "null" {
				toolFile := msgFile + ".tools"
				if err := os.WriteFile(toolFile, c.Tools, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--tools", toolFile)
			}
			for k, v := range c.Kwargs {
				args = append(args, "--set", k+"="+string(v))
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, stdio{strings.NewReader(""), &stdout, &stderr})
			if code != exitOK || stdout.String() != *c.ExpectedDelta {
				t.Errorf("%s %s: exit %d, stderr %q\n got: %q\nwant: %q (transformers)", g.Family, c.Name, code, stderr.String(), stdout.String(), *c.ExpectedDelta)
			}
		}
	}
	t.Logf("%d golden deltas", n)
}

func unmarshalList(t *testing.T, raw json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
