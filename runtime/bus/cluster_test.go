package bus

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentrt/agentrt/internal/testutil"
)

// cluster starts three nodes in cluster mode on loopback (streams R3) and returns their buses. JetStream
// clustering needs a configured route, and the route listener opens after JetStream starts, so the first node
// takes a port that was free a moment ago and lists itself; if someone took the port in between, the server
// says so at once and the test tries another. The other two take kernel-chosen ports (listen port 0) and
// route to the nodes already started; NATS tells each node about the rest.
func cluster(t *testing.T) []*Bus {
	t.Helper()
	cfgs := make([]Config, 3)
	logs := make([]*slog.Logger, 3)
	srvs := make([]*server.Server, 3)
	var routes []string
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Mode = ModeCluster
		cfg.Name = fmt.Sprintf("n%d", i)
		cfg.Listen = "127.0.0.1:0"
		cfg.Routes = routes
		cfg.Dir = t.TempDir()
		cfg.AckWait = 2 * 1e9
		cfg.MaxDeliver = 5
		logs[i] = slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", cfg.Name)
		for attempt := 1; ; attempt++ {
			if i == 0 {
				cfg.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
				cfg.Routes = []string{"nats-route://" + cfg.Listen}
			}
			srv, err := startServer(cfg, logs[i])
			if i == 0 && attempt < 10 && err != nil && strings.Contains(err.Error(), "address already in use") {
				t.Logf("%s: %v; another port", cfg.Name, err)
				continue
			}
			if err != nil {
				t.Fatalf("node %s: %v", cfg.Name, err)
			}
			t.Cleanup(srv.Shutdown) // attach's Close shuts it down too; this covers a failed attach
			srvs[i] = srv
			break
		}
		cfgs[i] = cfg
		routes = append(routes, "nats-route://"+srvs[i].ClusterAddr().String())
	}
	nodes := make([]*Bus, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { nodes[i], errs[i] = attach(patienceCtx(t), cfgs[i], logs[i], srvs[i], true) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { nodes[i].Close() })
	}
	return nodes
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestClusterRoutePortInUse: a node whose route port is taken fails to open at once, naming the address, and
// a node given port 0 reports the port the kernel chose.
func TestClusterRoutePortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := DefaultConfig()
	cfg.Mode = ModeCluster
	cfg.Name = "n0"
	cfg.Listen = l.Addr().String()
	cfg.Routes = []string{"nats-route://" + cfg.Listen}
	cfg.Dir = t.TempDir()
	_, err = Open(patienceCtx(t), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("Open with a taken route port: %v; want address in use, naming %s", err, l.Addr())
	}

	cfg.Listen = "127.0.0.1:0"
	srv, err := startServer(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	b := &Bus{cfg: cfg, srv: srv}
	host, port, err := net.SplitHostPort(b.ClusterAddr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("ClusterAddr() = %q (%v); want 127.0.0.1 and the port the kernel chose", b.ClusterAddr(), err)
	}
}

// tlog writes a node's log lines to the test's log.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) { w.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

// leaderOf returns the index of the node that leads stream.
func leaderOf(t *testing.T, nodes []*Bus, alive *Bus, stream string) int {
	t.Helper()
	var leader string
	testutil.Until(t, "stream "+stream+" to have a leader", func() bool {
		s, err := alive.js.Stream(patienceCtx(t), stream)
		if err != nil {
			return false
		}
		info, err := s.Info(patienceCtx(t))
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		leader = info.Cluster.Leader
		return true
	})
	for i, n := range nodes {
		if n.ServerName() == leader {
			return i
		}
	}
	t.Fatalf("stream %s is led by %q, not one of the nodes", stream, leader)
	return -1
}

// TestClusterSurvivesANodeDeath runs a request of 8 prompts x 4 samples on three clustered nodes, kills one
// node while it holds samples (the work stream's leader, or another node), and expects every sample's result
// exactly once by trajectory id and one done marker; the trainer reads half of its results through one node
// and the rest, after a reconnect, through another.
func TestClusterSurvivesANodeDeath(t *testing.T) {
	for _, killLeader := range []bool{false, true} {
		name := "follower"
		if killLeader {
			name = "leader"
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			nodes := cluster(t)
			t.Logf("cluster up after %s", time.Since(start))
			leader := leaderOf(t, nodes, nodes[0], WorkStream)
			victim := (leader + 1) % 3
			if killLeader {
				victim = leader
			}
			reader, other := (victim+1)%3, (victim+2)%3

			req, ss := request("trainer", "r", 8, 4)
			if out := submit(t, nodes[reader], req, ss); out.Stored != 32 {
				t.Fatalf("submit: %+v", out)
			}
			release := make(chan struct{})
			evs := make([]*events, 3)
			for i, n := range nodes {
				evs[i] = newEvents()
				serve(t, n, Node{Slots: 4, Run: blocking(release), Observe: evs[i].observe})
			}
			// Every slot of every node holds a sample; then the victim dies with its four.
			for i := range nodes {
				evs[i].waitFor(t, EventClaimed, 4)
			}
			var lost []string
			for _, e := range evs[victim].of(EventClaimed) {
				lost = append(lost, e.Sample.TrajectoryID)
			}
			nodes[victim].Close()
			t.Logf("node %s killed after %s", nodes[victim].ServerName(), time.Since(start))
			close(release)

			o, err := nodes[reader].Outbox(patienceCtx(t), "trainer")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Result{}
			for len(got) < 16 {
				d, err := o.Next(patienceCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				if d.Done {
					t.Fatalf("done after %d results", len(got))
				}
				if _, dup := got[d.TrajectoryID]; dup {
					t.Fatalf("trajectory %s delivered twice", d.TrajectoryID)
				}
				got[d.TrajectoryID] = d.Result
				if err := d.Ack(patienceCtx(t)); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("16 results after %s", time.Since(start))
			// The trainer reconnects to another node: the outbox resumes after the last ack.
			o2, err := nodes[other].Outbox(patienceCtx(t), "trainer")
			if err != nil {
				t.Fatal(err)
			}
			rest := drain(t, o2, "r", 16)
			for id, r := range rest {
				if _, dup := got[id]; dup {
					t.Fatalf("trajectory %s delivered twice (before and after the reconnect)", id)
				}
				got[id] = r
			}
			t.Logf("request done after %s", time.Since(start))
			checkAll(t, got, ss)
			for _, id := range lost {
				r := got[id]
				if r.Node == nodes[victim].ServerName() || r.Delivery < 2 || r.Status != StatusFinished {
					t.Errorf("%s, held by the dead node: stored by %s on claim %d (%s); want another node, claim >= 2", id, r.Node, r.Delivery, r.Status)
				}
			}
			if n := storedResults(t, nodes[reader], "trainer", "r"); n != 33 {
				t.Errorf("%d messages stored for the request, want 33 (32 results, one done marker)", n)
			}
			if killLeader {
				if l := leaderOf(t, nodes, nodes[reader], WorkStream); l == victim {
					t.Errorf("the dead node still leads the work stream")
				}
			}
		})
	}
}

// TestSubmitRidesThroughALeaderDeath: a submit sent at once after the request bucket's stream leader dies is
// stored, not failed: its attempts time out while the survivors elect a leader and the next one lands. It is
// stored once: the record is not taken for a duplicate of itself, and every sample has one work item.
func TestSubmitRidesThroughALeaderDeath(t *testing.T) {
	nodes := cluster(t)
	kv := "KV_" + RequestBucket
	victim := leaderOf(t, nodes, nodes[0], kv)
	if w := leaderOf(t, nodes, nodes[0], WorkStream); w != victim {
		t.Logf("the work stream is led by %s, the request bucket by %s", nodes[w].ServerName(), nodes[victim].ServerName())
	}
	submitter := nodes[(victim+1)%3]
	nodes[victim].Close()
	req, ss := request("trainer", "r", 4, 2)
	out, err := submitter.Submit(patienceCtx(t), req, ss)
	if err != nil || out.Duplicate || out.Stored != 8 {
		t.Fatalf("submit after the leader's death: %+v, %v; want 8 work items stored, not a duplicate", out, err)
	}
	if l := leaderOf(t, nodes, submitter, kv); l == victim {
		t.Fatalf("the dead node still leads %s", kv)
	}
	// Exactly one work item per sample, read back from the work stream.
	s, err := submitter.js.Stream(patienceCtx(t), WorkStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(patienceCtx(t))
	if err != nil || info.State.Msgs != 8 {
		t.Fatalf("work stream after the submit: %+v, %v; want 8 messages", info.State, err)
	}
	// And a real duplicate is still one.
	if out, err := submitter.Submit(patienceCtx(t), req, ss); err != nil || !out.Duplicate || out.Stored != 0 {
		t.Fatalf("second submit of r: %+v, %v; want a duplicate storing nothing", out, err)
	}
}

// TestSubmitRidesThroughItsServerDeath: an external-mode node whose NATS server dies reconnects to another; a
// submit sent at once is stored once, not failed after the caller's whole deadline.
func TestSubmitRidesThroughItsServerDeath(t *testing.T) {
	nodes := cluster(t)
	cfg := DefaultConfig()
	cfg.Mode = ModeExternal
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.srv.ClientURL())
	}
	cfg.URL = strings.Join(urls, ",")
	ext, err := Open(patienceCtx(t), cfg, slog.New(slog.NewTextHandler(tlog{t}, nil)).With("node", "external"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ext.Close() })
	victim := slices.Index(urls, ext.nc.ConnectedUrl())
	if victim < 0 {
		t.Fatalf("connected to %q, not one of %v", ext.nc.ConnectedUrl(), urls)
	}
	nodes[victim].Close()
	t.Logf("killed %s, the external node's server", nodes[victim].ServerName())
	req, ss := request("trainer", "r", 4, 2)
	out, err := ext.Submit(patienceCtx(t), req, ss)
	if err != nil || out.Duplicate || out.Stored != 8 {
		t.Fatalf("submit after its server's death: %+v, %v; want 8 work items stored, not a duplicate", out, err)
	}
	t.Logf("stored through %s", ext.nc.ConnectedUrl())

	// The external node runs the samples; its results name it host-pid (it has no server of its own).
	host, _ := os.Hostname()
	if want := host + "-" + strconv.Itoa(os.Getpid()); ext.NodeName() != want {
		t.Errorf("NodeName() = %q, want %q", ext.NodeName(), want)
	}
	release := make(chan struct{})
	close(release)
	serve(t, ext, Node{Slots: 2, Run: blocking(release)})
	o, err := ext.Outbox(patienceCtx(t), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, o, "r", 8)
	checkAll(t, got, ss)
	for id, r := range got {
		if r.Node != ext.NodeName() {
			t.Errorf("%s: stored by node %q, want %q", id, r.Node, ext.NodeName())
		}
	}
}
