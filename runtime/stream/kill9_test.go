package stream_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startDevserver starts the devserver binary on a spool directory and returns its URL.
func startDevserver(t *testing.T, bin, spool string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "-spool", spool, "-tokens", "64")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("devserver printed no address: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		t.Fatalf("devserver said %q", line)
	}
	return cmd, url
}

// TestKill9Replay kills a real server process with SIGKILL while trajectories are unacked; a new process on
// the same spool directory redelivers exactly the unacked ones.
func TestKill9Replay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server binary")
	}
	bin := filepath.Join(t.TempDir(), "devserver")
	build := exec.Command("go", "build", "-o", bin, "./internal/devserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build devserver: %v\n%s", err, out)
	}
	spool := t.TempDir()
	cmd, url := startDevserver(t, bin, spool)
	c, _ := connect(t, url, "trainer", 1000, nil)
	c.send(submit("r", 4, 5))
	c.nextType("accepted")
	trajs, dones := receive(t, c, 20, false)
	if len(dones) == 0 {
		c.nextType("request_done") // spooled, not acked
	}
	acked := map[string]bool{}
	for id := range trajs {
		if len(acked) == 5 {
			break
		}
		acked[id] = true
		c.send(map[string]any{"type": "ack", "trajectory_ids": []string{id}})
	}
	// The server handles a connection's frames in order: the pong means the acks are committed.
	c.send(map[string]any{"type": "ping", "id": "sync"})
	c.nextType("pong")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	c.waitClosed()

	_, url2 := startDevserver(t, bin, spool)
	c2, w := connect(t, url2, "trainer", 1000, nil)
	if w["unacked"].(float64) != 16 { // 15 trajectories + request_done
		t.Fatalf("welcome after kill -9 = %v", w)
	}
	again, _ := receive(t, c2, 15, true)
	for id := range again {
		if acked[id] {
			t.Errorf("acked trajectory %s redelivered", id)
		}
		if _, ok := trajs[id]; !ok {
			t.Errorf("unknown trajectory %s after restart", id)
		}
	}
	if len(again) != 15 {
		t.Fatalf("redelivered %d, want 15", len(again))
	}
}
