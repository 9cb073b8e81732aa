package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two serve processes started from one runtime.toml with their own --spool-dir get their own embedded stores (the
// store used to stay under the file's spool_dir, so agentrt_client.ray's nodes shared one JetStream store), and a
// third given a spool dir already in use refuses to start, naming the store, instead of corrupting it.
func TestServeSpoolDirsAreSeparateStores(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt serve subprocesses")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir,
		`spool_dir = "~/.cache/agentrt/spool"`, `spool_dir = "from-the-file"`,
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`)
	logPath := filepath.Join(dir, "serve.log")
	ready := func(p *agentrtProc) {
		t.Helper()
		if line, err := p.stdout.ReadString('\n'); err != nil || !strings.Contains(line, "(WebSocket ") {
			failWithLog(t, logPath, "agentrt serve printed %q (%v)", line, err)
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	ready(startAgentrt(t, logPath, "serve", cfg, "--spool-dir", a))
	ready(startAgentrt(t, logPath, "serve", cfg, "--spool-dir", b))
	for _, d := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(d, "bus", "agentrt.lock")); err != nil {
			failWithLog(t, logPath, "the store of the serve given --spool-dir %s: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "from-the-file")); !os.IsNotExist(err) {
		failWithLog(t, logPath, "the file's spool_dir was used although both processes had --spool-dir (%v)", err)
	}

	third := startAgentrt(t, filepath.Join(dir, "third.log"), "serve", cfg, "--spool-dir", a)
	<-third.done
	out, _ := os.ReadFile(filepath.Join(dir, "third.log"))
	want := "the store " + filepath.Join(a, "bus") + " is in use by another process (pid "
	if third.cmd.ProcessState.Success() || !strings.Contains(string(out), want) {
		t.Fatalf("a second serve on spool dir %s: exit %v, stderr:\n%s\nwant it to refuse with %q", a, third.cmd.ProcessState, out, want)
	}
}
