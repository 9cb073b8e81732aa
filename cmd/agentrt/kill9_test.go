package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The kill -9 tests run this test binary as `agentrt` (TestHelperAgentrt), kill it with SIGKILL in the middle of
// the work, twice, start it again on the same state (spool, --out) and count what arrives.

// TestHelperAgentrt is not a test: it is `agentrt` for the subprocesses of the kill -9 tests.
func TestHelperAgentrt(t *testing.T) {
	if os.Getenv("AGENTRT_TEST_HELPER") != "1" {
		t.Skip("runs only as the kill -9 tests' subprocess")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), args, stdio{os.Stdin, os.Stdout, os.Stderr}))
}

// agentrtProc is one `agentrt` subprocess; its stderr goes to a file the test prints when it fails.
type agentrtProc struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	done   chan struct{} // closed when the process has exited
}

func startAgentrt(t *testing.T, logPath string, args ...string) *agentrtProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperAgentrt$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTRT_TEST_HELPER=1")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentrtProc{cmd: cmd, stdout: bufio.NewReader(out), done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
	return p
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (p *agentrtProc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// failWithLog fails the test with what the subprocesses logged and the test's goroutines.
func failWithLog(t *testing.T, logPath, format string, args ...any) {
	t.Helper()
	b, _ := os.ReadFile(logPath)
	var dump bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&dump, 1)
	t.Fatalf("%s\n--- agentrt stderr:\n%s\n--- goroutines:\n%s", fmt.Sprintf(format, args...), b, dump.String())
}

// wsConsumer is a minimal trainer: it acks everything it reads and dedupes by trajectory id.
// tally is what a trainer received, by trajectory id: a redelivered trajectory is counted as a duplicate.
type tally struct {
	got         map[string]bool
	dups, dones int
	done        map[string]any // the last request_done
}

func newTally() *tally { return &tally{got: map[string]bool{}} }

// consume reads, acks and dedupes until stop says so; it reports false if the connection ended first. Every
// trajectory must be completed; a rejected or error frame calls fail.
func (s *tally) consume(t *testing.T, c *wsConsumer, stop func() bool, fail func(format string, args ...any)) bool {
	t.Helper()
	for !stop() {
		m := c.read(t)
		if m == nil {
			return false
		}
		switch m["type"] {
		case "trajectory":
			id := m["trajectory_id"].(string)
			if s.got[id] {
				s.dups++
			}
			s.got[id] = true
			if st := m["trajectory"].(map[string]any)["status"]; st != "completed" {
				t.Errorf("%s: status %v", id, st)
			}
		case "request_done":
			s.dones++
			s.done = m
		case "rejected", "error":
			fail("server answered %v", m)
		default:
			continue
		}
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	return true
}

type wsConsumer struct {
	ws      *websocket.Conn
	welcome map[string]any
}

func dialConsumer(t *testing.T, url string) *wsConsumer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.Close() })
	c := &wsConsumer{ws: ws}
	c.send(t, map[string]any{"type": "hello", "protocol": 1, "consumer_id": "trainer", "credits": 10000})
	c.welcome = c.read(t)
	if c.welcome["type"] != "welcome" {
		t.Fatalf("hello answered with %v", c.welcome)
	}
	return c
}

func (c *wsConsumer) send(t *testing.T, v any) {
	t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// read returns the next frame, or nil when the connection ends (the server was killed). A minute without a
// frame fails the test: it is a hang, not a timing assertion.
func (c *wsConsumer) read(t *testing.T) map[string]any {
	t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(time.Minute))
	_, b, err := c.ws.ReadMessage()
	if err != nil {
		if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			t.Fatalf("no frame from the server within a minute")
		}
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("server sent invalid JSON: %v", err)
	}
	return m
}

func (c *wsConsumer) inWelcome(key, id string) bool {
	l, _ := c.welcome[key].([]any)
	return slices.Contains(l, any(id))
}

// TestServeKill9ResumesRequests: `agentrt serve` on the built-in emulator with latency; a trainer submits 24
// samples; the server is killed with SIGKILL twice while they run and restarted on the same spool. The trainer
// gets every sample (deduped by trajectory id, as clients do), each once, and the request's request_done.
func TestServeKill9ResumesRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt serve subprocesses")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir,
		`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(dir, "spool")),
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
		"concurrency = 256", "concurrency = 3", // 8 waves of episodes: the kills land mid-request
		"seed = 1\n", "seed = 1\nlatency = { fixed = \"100ms\" }\n")
	logPath := filepath.Join(dir, "serve.log")
	addr := ""
	start := func() (*agentrtProc, string) {
		args := []string{"serve", cfg}
		if addr != "" {
			args = append(args, "--addr", addr) // the same port again, as a restarted service would have
		}
		p := startAgentrt(t, logPath, args...)
		line, err := p.stdout.ReadString('\n')
		_, rest, ok := strings.Cut(line, "(WebSocket ")
		url, _, ok2 := strings.Cut(rest, ")")
		if err != nil || !ok || !ok2 {
			failWithLog(t, logPath, "agentrt serve printed %q (%v)", line, err)
		}
		addr = strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/v1/stream")
		return p, url
	}

	const items, n = 6, 4
	var its []map[string]any
	for i := range items {
		its = append(its, map[string]any{"id": fmt.Sprintf("q%d", i), "n": n,
			"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf("What is %d*7+%d?", i+2, i)}}})
	}
	s := newTally()
	fail := func(format string, args ...any) { failWithLog(t, logPath, format, args...) }
	consume := func(c *wsConsumer, stop func() bool) { s.consume(t, c, stop, fail) }

	p, url := start()
	c := dialConsumer(t, url)
	c.send(t, map[string]any{"type": "submit", "request_id": "r", "items": its})
	if m := c.read(t); m == nil || m["type"] != "accepted" {
		failWithLog(t, logPath, "submit answered %v", m)
	}
	for kill := 1; kill <= 2; kill++ {
		want := 3 * kill
		consume(c, func() bool { return len(s.got) >= want || s.done != nil })
		p.kill9(t)
		t.Logf("kill -9 #%d after %d of %d samples", kill, len(s.got), items*n)
		p, url = start()
		c = dialConsumer(t, url)
		if s.done == nil && !c.inWelcome("active_requests", "r") && !c.inWelcome("done_requests", "r") {
			failWithLog(t, logPath, "after restart #%d the server does not know request r: welcome %v", kill, c.welcome)
		}
	}
	consume(c, func() bool { return s.done != nil && len(s.got) == items*n })
	if s.done == nil {
		failWithLog(t, logPath, "the connection ended before request_done")
	}
	for i := range items {
		for k := range n {
			if id := fmt.Sprintf("r/q%d/%d", i, k); !s.got[id] {
				t.Errorf("sample %s never arrived", id)
			}
		}
	}
	if len(s.got) != items*n || s.done["status"] != "completed" || s.done["trajectories"].(float64) != items*n {
		failWithLog(t, logPath, "got %d distinct samples, request_done %v", len(s.got), s.done)
	}
	t.Logf("%d samples, %d redelivered and deduped, %d request_done", len(s.got), s.dups, s.dones)
	p.kill9(t)
}

// TestRunKill9KeepsFinished: `agentrt run` killed with SIGKILL twice mid-run keeps every trajectory that had
// finished (each is written as it finishes); the re-runs complete the rest, and --out ends with each sample once.
func TestRunKill9KeepsFinished(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt run subprocesses")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "seed = 1\n", "seed = 1\nlatency = { fixed = \"100ms\" }\n")
	prompts := filepath.Join(dir, "prompts.jsonl")
	var lines []string
	for i := range 6 {
		lines = append(lines, fmt.Sprintf(`{"id": "q%d", "prompt": "What is %d*3+1?", "n": 4}`, i, i+2))
	}
	os.WriteFile(prompts, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	logPath := filepath.Join(dir, "run.log")
	complete := func() int {
		b, _ := os.ReadFile(out)
		return bytes.Count(b, []byte("\n"))
	}
	for kill := 1; kill <= 2; kill++ {
		before := complete()
		p := startAgentrt(t, logPath, "run", cfg, "--prompts", prompts, "--out", out, "--quiet", "--concurrency", "2")
		// Wait (on the file, the run's only output) until it has written 3 more trajectories.
		deadline := time.Now().Add(2 * time.Minute)
		for complete() < before+3 {
			select {
			case <-p.done:
				failWithLog(t, logPath, "agentrt run exited before it was killed (%d lines in --out)", complete())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				failWithLog(t, logPath, "waited 2 minutes for agentrt run to write trajectory %d to %s", before+3, out)
			}
		}
		p.kill9(t)
		t.Logf("kill -9 #%d with %d trajectories in --out", kill, complete())
	}
	kept := readTrajectories(t, out)
	p := startAgentrt(t, logPath, "run", cfg, "--prompts", prompts, "--out", out, "--quiet")
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != exitOK {
		failWithLog(t, logPath, "the last run exited %d", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var tr struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(line, &tr); err != nil {
			t.Fatalf("%s:%d: %v", out, i+1, err)
		}
		seen[tr.ID]++
		if tr.Status != "completed" {
			t.Errorf("%s: status %s", tr.ID, tr.Status)
		}
	}
	for i := range 6 {
		for k := range 4 {
			if id := fmt.Sprintf("q%d#%d", i, k); seen[id] != 1 {
				t.Errorf("%s is in --out %d times, want 1", id, seen[id])
			}
		}
	}
	if len(seen) != 24 || len(kept) < 6 {
		t.Fatalf("%d distinct trajectories in --out (want 24); %d kept through the kills (want >= 6)", len(seen), len(kept))
	}
}
