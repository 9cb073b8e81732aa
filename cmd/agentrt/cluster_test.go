package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentrt/agentrt/internal/testutil"
)

// TestServeClusterKill9: three `agentrt serve` processes on loopback form a cluster (bus.mode = "cluster") over
// the built-in emulator; a trainer connected to one of them submits 64 prompts x 8 samples; the node that leads
// the work stream (the JetStream leader, read from its log) is killed with SIGKILL mid-run. Every sample arrives
// exactly once by trajectory id (redeliveries deduped, as clients do), produced by every node, with one
// request_done counting them all. The trainer then moves to the third node and resumes from its last ack.
func TestServeClusterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three agentrt serve subprocesses")
	}
	nodes, failf := newCluster(t)
	const items, n = 64, 8
	its := questions(items, n, "What is %d*7+%d?")
	trainerNode := nodes[1]
	c := dialConsumer(t, trainerNode.url)
	c.send(t, map[string]any{"type": "submit", "request_id": "r", "items": its})
	if m := c.read(t); m == nil || m["type"] != "accepted" {
		failf("submit answered %v", m)
	}
	s := newTally()
	consume := func(c *wsConsumer, stop func() bool) bool { return s.consume(t, c, stop, failf) }
	// Once a quarter of the samples are stored (three quarters still to run, so every node holds claims) and the
	// trainer has read a few through n1, the work stream's leader dies.
	storedAll := func() int {
		k := 0
		for _, nd := range nodes {
			k += nd.count("bus: stored")
		}
		return k
	}
	patience := time.NewTimer(testutil.Patience)
	for storedAll() < items*n/4 {
		select {
		case <-progress:
		case <-patience.C:
			failf("waited %s for %d stored results, have %d", testutil.Patience, items*n/4, storedAll())
		}
	}
	patience.Stop()
	consume(c, func() bool { return len(s.got) >= 16 })
	// A leader that steps down logs nothing; the last node to announce itself leads.
	var victim *clusterNode
	var last uint64
	for _, nd := range nodes {
		if seq := nd.leaderSince("AGENTRT_WORK"); seq > last {
			victim, last = nd, seq
		}
	}
	if victim == nil {
		failf("no node logged that it leads the work stream")
	}
	t.Logf("kill -9 of %s (work stream leader, meta leader %v) with %d of %d samples stored, %d received; trainer on %s",
		victim.name, victim.isMetaLeader(), storedAll(), items*n, len(s.got), trainerNode.name)
	victim.kill9(t)
	// The trainer moves to another live node (as behind a load balancer) and resumes from its last ack: what its
	// old node had sent and not seen acked is offered again at once when that connection ends.
	c.ws.Close()
	for _, nd := range nodes {
		if nd != victim && nd != trainerNode {
			trainerNode = nd
			break
		}
	}
	t.Logf("the trainer reconnects to %s", trainerNode.name)
	t0 := time.Now()
	c = redial(t, trainerNode.url, failf)
	t.Logf("welcome from %s after %s", trainerNode.name, time.Since(t0).Round(time.Millisecond))
	if s.done == nil && !c.inWelcome("active_requests", "r") && !c.inWelcome("done_requests", "r") {
		failf("%s does not know request r: welcome %v", trainerNode.name, c.welcome)
	}
	for !consume(c, func() bool { return s.done != nil && len(s.got) == items*n }) {
		failf("the connection to %s ended before the request was done", trainerNode.name)
	}
	for i := range items {
		for k := range n {
			if id := fmt.Sprintf("r/q%d/%d", i, k); !s.got[id] {
				t.Errorf("sample %s never arrived", id)
			}
		}
	}
	if len(s.got) != items*n || s.done["status"] != "completed" || s.done["trajectories"].(float64) != items*n {
		failf("got %d distinct samples, request_done %v", len(s.got), s.done)
	}
	reclaimed := 0
	for _, nd := range nodes {
		if nd.count("bus: stored") == 0 {
			t.Errorf("%s stored no result: the samples did not spread over the nodes", nd.name)
		}
		if nd != victim {
			reclaimed += nd.count("reclaimed")
		}
		t.Logf("%s stored %d results, ran %d samples on a later claim", nd.name, nd.count("bus: stored"), nd.count("reclaimed"))
	}
	if reclaimed == 0 {
		t.Errorf("no surviving node ran a sample on a later claim: the killed node held none")
	}
	t.Logf("%d samples, %d redelivered and deduped, %d request_done", len(s.got), s.dups, s.dones)
}

// clusterNode is one `agentrt serve` of the cluster; its stderr is scanned for the lines the test waits on.
type clusterNode struct {
	name, url, logPath string
	cmd                *exec.Cmd
	done               chan struct{}
	urlc               chan string // the line serve prints once it listens

	mu     sync.Mutex
	leads  map[string]uint64 // stream -> when this node last said it leads it (leaderSeq)
	meta   bool
	counts map[string]int
}

// leaderSeq orders the leader announcements of all nodes.
var leaderSeq atomic.Uint64

// progress is kicked after every line a node logs.
var progress = make(chan struct{}, 1)

func (nd *clusterNode) leaderSince(stream string) uint64 {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.leads[stream]
}

func (nd *clusterNode) isMetaLeader() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.meta
}

func (nd *clusterNode) count(s string) int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.counts[s]
}

func (nd *clusterNode) kill9(t *testing.T) {
	t.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-nd.done
}

// scan reads the node's stderr (debug log) into its log file and keeps what the test asks about.
func (nd *clusterNode) scan(r *bufio.Reader, logf *os.File) {
	defer logf.Close()
	for {
		line, err := r.ReadString('\n')
		logf.WriteString(line)
		nd.mu.Lock()
		switch {
		case strings.Contains(line, "JetStream cluster new metadata leader: "):
			_, who, _ := strings.Cut(line, "new metadata leader: ")
			nd.meta = strings.HasPrefix(who, nd.name+"/")
		case strings.Contains(line, "JetStream cluster no metadata leader"):
			nd.meta = false
		case strings.Contains(line, "JetStream cluster new stream leader for"):
			_, s, _ := strings.Cut(line, " > ")
			s, _, _ = strings.Cut(s, "'")
			nd.leads[s] = leaderSeq.Add(1)
		}
		if strings.Contains(line, `msg="bus: stored"`) {
			nd.counts["bus: stored"]++
		}
		if strings.Contains(line, `msg="bus: claimed"`) && !strings.Contains(line, " delivery=1 ") {
			nd.counts["reclaimed"]++
		}
		nd.mu.Unlock()
		select {
		case progress <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// newCluster starts three `agentrt serve` processes as a cluster (startCluster, tried again while the first
// node's route port is taken; extra as there) and returns them with failf, which fails the test with the last
// 8 KB of each node's log.
func newCluster(t *testing.T, extra ...string) (nodes []*clusterNode, failf func(format string, args ...any)) {
	t.Helper()
	dir := t.TempDir()
	for attempt := 1; nodes == nil; attempt++ {
		if attempt > 5 {
			t.Fatal("the first node's route port was taken 5 times")
		}
		nodes = startCluster(t, dir, attempt, extra...)
	}
	return nodes, func(format string, args ...any) {
		t.Helper()
		var logs strings.Builder
		for _, nd := range nodes {
			b, _ := os.ReadFile(nd.logPath)
			fmt.Fprintf(&logs, "\n--- %s stderr (last 8 KB):\n%s", nd.name, tail(b, 8<<10))
		}
		t.Fatalf("%s%s", fmt.Sprintf(format, args...), logs.String())
	}
}

// questions are items q0, q1, ... of n samples each, whose user message is format filled with i+2 and i.
func questions(items, n int, format string) []map[string]any {
	var its []map[string]any
	for i := range items {
		its = append(its, map[string]any{"id": fmt.Sprintf("q%d", i), "n": n,
			"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf(format, i+2, i)}}})
	}
	return its
}

// startCluster starts three nodes: n0 on a route port chosen here (a JetStream cluster needs its first node's
// route known before it starts), n1 and n2 on kernel-chosen ports routing to n0. It returns nil when n0's port
// was taken in between (the caller tries again).
// extra are more writeConfig edits (pairs), for every node.
func startCluster(t *testing.T, dir string, attempt int, extra ...string) []*clusterNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seed := ln.Addr().String()
	ln.Close()
	route := fmt.Sprintf(`routes = ["nats-route://%s"]`, seed)
	var nodes []*clusterNode
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		ndir := filepath.Join(dir, fmt.Sprintf("try%d", attempt), name)
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			t.Fatal(err)
		}
		listen := "127.0.0.1:0"
		if i == 0 {
			listen = seed
		}
		edits := []string{
			`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(ndir, "spool")),
			`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
			"concurrency = 256", "concurrency = 8", // ~20 waves of episodes: the kill lands mid-request
			"seed = 1\n", "seed = 1\nlatency = { fixed = \"100ms\" }\n",
			`mode = "embedded" `, fmt.Sprintf(`mode = "cluster"
name = %q
cluster = "agentrt-test"
listen = %q
%s
`, name, listen, route),
			`ack_wait = "30s"`, `ack_wait = "4s"`,
		}
		cfg := writeConfig(t, ndir, append(edits, extra...)...)
		nd := &clusterNode{name: name, logPath: filepath.Join(ndir, "serve.log"), done: make(chan struct{}),
			leads: map[string]uint64{}, counts: map[string]int{}}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAgentrt$", "--", "serve", cfg, "--log-level", "debug")
		cmd.Env = append(os.Environ(), "AGENTRT_TEST_HELPER=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		nd.cmd = cmd
		logf, err := os.Create(nd.logPath)
		if err != nil {
			t.Fatal(err)
		}
		scanned := make(chan struct{})
		go func() { nd.scan(bufio.NewReader(stderr), logf); close(scanned) }()
		go func() { <-scanned; cmd.Wait(); close(nd.done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-nd.done })
		urlc := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			urlc <- line
		}()
		nd.urlc = urlc
		nodes = append(nodes, nd)
	}
	for _, nd := range nodes {
		var line string
		select {
		case line = <-nd.urlc:
		case <-nd.done:
		}
		_, rest, ok := strings.Cut(line, "(WebSocket ")
		url, _, ok2 := strings.Cut(rest, ")")
		if !ok || !ok2 {
			b, _ := os.ReadFile(nd.logPath)
			if nd.name == "n0" && strings.Contains(string(b), "address already in use") {
				for _, o := range nodes {
					o.cmd.Process.Kill()
					<-o.done
				}
				return nil
			}
			t.Fatalf("%s printed %q; stderr:\n%s", nd.name, line, tail(b, 8<<10))
		}
		nd.url = url
	}
	return nodes
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// redial connects a consumer like dialConsumer; a hello answered with an error fails the test with the nodes' logs.
func redial(t *testing.T, url string, failf func(string, ...any)) *wsConsumer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		failf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.Close() })
	c := &wsConsumer{ws: ws}
	c.send(t, map[string]any{"type": "hello", "protocol": 1, "consumer_id": "trainer", "credits": 10000})
	if c.welcome = c.read(t); c.welcome["type"] != "welcome" {
		failf("hello answered with %v", c.welcome)
	}
	return c
}

// TestServeCancelOnTheBus: `agentrt serve` (embedded bus) cancels a running request: its running episodes end
// aborted, its samples not started yet come as failed trajectories with reason cancelled, and request_done says
// cancelled and counts one trajectory per sample. A second cancel gets unknown_request.
func TestServeCancelOnTheBus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agentrt serve subprocess")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir,
		`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(dir, "spool")),
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
		"concurrency = 256", "concurrency = 2",
		"seed = 1\n", "seed = 1\nlatency = { fixed = \"300ms\" }\n")
	logPath := filepath.Join(dir, "serve.log")
	p := startAgentrt(t, logPath, "serve", cfg)
	line, err := p.stdout.ReadString('\n')
	_, rest, ok := strings.Cut(line, "(WebSocket ")
	url, _, ok2 := strings.Cut(rest, ")")
	if err != nil || !ok || !ok2 {
		failWithLog(t, logPath, "agentrt serve printed %q (%v)", line, err)
	}
	c := dialConsumer(t, url)
	const samples = 8
	c.send(t, map[string]any{"type": "submit", "request_id": "r", "events": true, "items": []map[string]any{{"id": "q", "n": samples,
		"messages": []map[string]any{{"role": "user", "content": "What is 6*7?"}}}}})
	cancelled := false
	statuses := map[string]int{}
	var done map[string]any
	for done == nil {
		m := c.read(t)
		if m == nil {
			failWithLog(t, logPath, "the connection ended")
		}
		switch m["type"] {
		case "event":
			// The first turn event: the request runs; cancel it.
			if !cancelled {
				c.send(t, map[string]any{"type": "cancel", "request_id": "r"})
				cancelled = true
			}
			continue
		case "trajectory":
			tr := m["trajectory"].(map[string]any)
			statuses[fmt.Sprintf("%v/%v", tr["status"], tr["status_reason"])]++
		case "request_done":
			done = m
		case "accepted":
			continue
		default:
			failWithLog(t, logPath, "unexpected frame %v", m)
		}
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	if done["status"] != "cancelled" || done["trajectories"].(float64) != samples {
		failWithLog(t, logPath, "request_done %v, want cancelled with %d trajectories", done, samples)
	}
	n := 0
	for st, k := range statuses {
		if !strings.HasPrefix(st, "aborted/") && st != "failed/cancelled" && !strings.HasPrefix(st, "completed/") {
			t.Errorf("%d trajectories %s", k, st)
		}
		n += k
	}
	if n != samples || statuses["failed/cancelled"] == 0 {
		t.Errorf("trajectories by status: %v; want %d, some not started (failed/cancelled)", statuses, samples)
	}
	c.send(t, map[string]any{"type": "cancel", "request_id": "r"})
	for {
		m := c.read(t)
		if m == nil {
			failWithLog(t, logPath, "the connection ended")
		}
		if m["type"] == "error" {
			if m["code"] != "unknown_request" {
				t.Errorf("second cancel answered %v", m)
			}
			break
		}
	}
	t.Logf("trajectories by status: %v", statuses)
}
