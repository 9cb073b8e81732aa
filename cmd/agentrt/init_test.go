package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/runtime/config"
)

// TestInitWritesAConfigServeLoads: `agentrt init` writes the shipped runtime.toml with the model replaced; the file
// loads, names a hub id (or a folder, made absolute), and is not overwritten without --force.
func TestInitWritesAConfigServeLoads(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join("..", "..", "runtime.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(shipped) != agentrt.RuntimeTOML || !strings.Contains(agentrt.RuntimeTOML, shippedModelLine) {
		t.Fatalf("the embedded runtime.toml is not the shipped one, or has no line %q", shippedModelLine)
	}
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		model    string
		hub      bool
		revision string
	}{
		{"default", []string{filepath.Join(dir, "a.toml")}, defaultInitModel, true, ""},
		{"id and revision", []string{filepath.Join(dir, "b.toml"), "--model", "Org/Model", "--revision", "v2"}, "Org/Model", true, "v2"},
		{"folder", []string{"--model", os.Getenv("AGENTRT_QWEN3_MODEL"), filepath.Join(dir, "c.toml")}, os.Getenv("AGENTRT_QWEN3_MODEL"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append([]string{"init"}, tt.args...), stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			path := strings.Fields(stdout.String())[1]
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			a := cfg.Agents[0]
			if a.Model != tt.model || a.Hub != tt.hub || a.Revision != tt.revision || !cfg.UsesEmulator() {
				t.Errorf("agent %+v; want model %s hub %v revision %q on the emulator", a, tt.model, tt.hub, tt.revision)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"init", filepath.Join(dir, "a.toml")}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitFailure || !strings.Contains(stderr.String(), "--force") {
		t.Errorf("init over an existing file: exit %d, %s", code, stderr.String())
	}
	if code := run(context.Background(), []string{"init", "--force", filepath.Join(dir, "a.toml"), "--model", "Org/Other"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Errorf("init --force: exit %d, %s", code, stderr.String())
	}
	if code := run(context.Background(), []string{"init", filepath.Join(dir, "d.toml"), "--model", "models/x", "--revision", "v1"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		// models/x is no folder here, so it is an id: a revision is fine.
		t.Errorf("init with an id-like missing folder: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"init", filepath.Join(dir, "e.toml"), "--model", os.Getenv("AGENTRT_QWEN3_MODEL"), "--revision", "v1"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitUsage || !strings.Contains(stderr.String(), "agent.revision") {
		t.Errorf("init with a folder and a revision: exit %d, %s", code, stderr.String())
	}
}
