package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/family"
)

func refTemplates(name string) string {
	return filepath.Join("..", "..", "tito", "testdata", "families", name)
}

// TestModelCheck runs `agentrt model check` on reference template folders and a real model folder: the profile
// and each self-test step are printed, and the exit status says whether agents of the model can start.
func TestModelCheck(t *testing.T) {
	cache := pluginCLICache(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"qwen3 template folder", []string{"--model", refTemplates("qwen3"), "--set", "enable_thinking=false"}, exitOK,
			[]string{"family:           qwen3 (by chat template)", "parser:           hermes", "tokenizer:        no (tokenizer.json absent",
				"  ok  delta ", "  ok  round trip            calculator({\"expression\":\"(2 + 3) * 4\",\"precision\":2})", "PASS: agents of this model can start"}},
		{"real qwen3 folder", []string{"--model", os.Getenv("AGENTRT_QWEN3_MODEL")}, exitOK,
			[]string{"tokenizer:        yes", `ok  stop tokens           ["<|im_end|>"]`, "PASS"}},
		{"family without a tool format", []string{"--model", refTemplates("phi-4")}, exitFailure,
			[]string{"family:           phi-4 (by chat template)", "FAIL  parser  the chat template ignores tools and tool calls", "FAIL: agents of this model do not start"}},
		{"family override", []string{"--model", refTemplates("qwen3"), "--family", "qwen2.5"}, exitOK,
			[]string{"family:           qwen2.5 (by family = qwen2.5)", "PASS"}},
		{"parser override that cannot read the calls", []string{"--model", refTemplates("qwen3"), "--parser", "glm45"}, exitFailure,
			[]string{"parser:           glm45", "FAIL  round trip            parser glm45 rejected the template's own tool call: missing_name"}},
		{"parser plugin file", []string{"--model", refTemplates("qwen3"), "--parser", filepath.Join("..", "..", "plugins", "examples", "go-xmltag", "xmltag.wasm")}, exitOK,
			[]string{"parser: ../../plugins/examples/go-xmltag/xmltag.wasm", "ok round trip round 2: calculator(", "PASS"}},
		{"misspelt kwarg", []string{"--model", refTemplates("qwen3"), "--set", "enable_thinkng=false"}, exitFailure,
			[]string{"FAIL  chat_template_kwargs  the chat template never reads enable_thinkng"}},
	} {
		code, out, errs := runCLI(t, append([]string{"model", "check", "--cache-dir", cache}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.name, code, c.code, out, errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(squash(out), squash(w)) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, out)
			}
		}
	}
}

func TestModelCheckUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"model"}, "usage: agentrt model check"},
		{[]string{"model", "check"}, "--model is required"},
		{[]string{"model", "check", "--model", refTemplates("qwen3"), "--family", "qwen9"}, `unknown model family "qwen9" (known: qwen3,`},
		{[]string{"model", "frobnicate"}, `unknown subcommand "frobnicate"`},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", c.args, code, errs, exitUsage, c.want)
		}
	}
	code, _, errs := runCLI(t, "model", "check", "--model", "testdata/no-such-folder")
	if code != exitStartup || !strings.Contains(errs, "no-such-folder") {
		t.Errorf("missing folder: exit %d, stderr %q", code, errs)
	}
}

// TestModelFamilies: `agentrt model families` lists every profile with its parser and status.
func TestModelFamilies(t *testing.T) {
	code, out, errs := runCLI(t, "model", "families")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, p := range family.Profiles {
		if !strings.Contains(out, "\n"+p.Name+" ") {
			t.Errorf("no row for %s:\n%s", p.Name, out)
		}
	}
	for _, w := range []string{"glm-4.6 glm45 think <|user|> <|observation|> parser built in", "phi-4 - none - refused: the chat template ignores tools"} {
		if !strings.Contains(squash(out), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

var spaces = regexp.MustCompile(` {2,}`)

// squash collapses runs of spaces (tabwriter's alignment depends on the longest cell).
func squash(s string) string { return spaces.ReplaceAllString(s, " ") }
