package bus

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
)

// freePorts returns n loopback ports that were free a moment ago (the route listeners must be known before
// the servers start, since each names the others in its routes).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// cluster starts three nodes in cluster mode on loopback (streams R3) and returns their buses.
func cluster(t *testing.T) []*Bus {
	t.Helper()
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	nodes := make([]*Bus, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Mode = ModeCluster
		cfg.Name = fmt.Sprintf("n%d", i)
		cfg.Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
		cfg.Routes = routes
		cfg.Dir = t.TempDir()
		cfg.AckWait = 2 * 1e9
		cfg.MaxDeliver = 5
		log := slog.New(slog.NewTextHandler(tlog{t}, nil)).With("node", cfg.Name)
		wg.Go(func() { nodes[i], errs[i] = Open(patienceCtx(t), cfg, log) })
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
