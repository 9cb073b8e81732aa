package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentrt/agentrt/internal/slots"
	"github.com/agentrt/agentrt/internal/testutil"
)

// splitLimits is every node's share of one cluster-wide limit of max slots, in one process: each node's
// Limits is a slots.Limiter, and every change of a limit is checked at once against the others (their sum, and
// the slots held, must never pass max).
type splitLimits struct {
	t   *testing.T
	max int

	mu       sync.Mutex
	lims     []*slots.Limiter
	shares   []slots.Share
	exceeded string
}

type nodeLimits struct {
	s *splitLimits
	i int
}

func newSplit(t *testing.T, max, nodes int) *splitLimits {
	s := &splitLimits{t: t, max: max}
	for range nodes {
		s.lims = append(s.lims, slots.New(0)) // a node not started holds nothing
		s.shares = append(s.shares, slots.Share{})
	}
	return s
}

func (l nodeLimits) SetShare(sh slots.Share) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares[l.i] = sh
	s.lims[l.i].SetLimit(sh.Of(s.max))
	s.checkLocked(fmt.Sprintf("node %d took %d", l.i, sh.Of(s.max)))
}

func (l nodeLimits) Within() bool { return l.s.lims[l.i].Within() }

// checkLocked records the first moment the live nodes' limits add up to more than max.
func (s *splitLimits) checkLocked(what string) {
	sum := 0
	for _, l := range s.lims {
		sum += max(l.Limit(), l.InUse())
	}
	if sum > s.max && s.exceeded == "" {
		s.exceeded = fmt.Sprintf("%s: the nodes' limits (or slots held above them) add up to %d > %d", what, sum, s.max)
	}
}

func (s *splitLimits) limit(i int) int { return s.lims[i].Limit() }

// acquire takes n slots of node i (they must be free).
func (s *splitLimits) acquire(t *testing.T, i, n int) {
	t.Helper()
	for range n {
		if !s.lims[i].TryAcquire() {
			t.Fatalf("node %d: no free slot (limit %d, in use %d)", i, s.lims[i].Limit(), s.lims[i].InUse())
		}
	}
}

// forget drops node i (it died): its slots stop counting.
func (s *splitLimits) forget(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lims[i] = slots.New(0)
}

// TestLimitsSplitAcrossNodes: a limit of 5 on a 3-server cluster. Two nodes split it 3 + 2. A third joins: it
// gets nothing until the others have shrunk to their new parts and drained what they held above them (node 0
// holds 3 and must let one go), then takes its part (2 + 2 + 1). When a node dies, the survivors grow to
// 3 + 2 only after its presence lapses. At no moment do the nodes' limits, or the slots held, add up to more
// than 5.
func TestLimitsSplitAcrossNodes(t *testing.T) {
	nodes := cluster(t)
	split := newSplit(t, 5, 3)
	ctls := make([]*fakeControl, 3)
	stops := make([]func(), 3)
	start := func(i int) {
		ctls[i] = &fakeControl{}
		stops[i], _ = serve(t, nodes[i], Node{Slots: 1, Run: ctls[i].run, Control: ctls[i], Limits: nodeLimits{split, i}})
	}
	check := func() {
		t.Helper()
		split.mu.Lock()
		defer split.mu.Unlock()
		if split.exceeded != "" {
			t.Fatal(split.exceeded)
		}
	}
	// Ranks follow the node names: n0, n1, n2.
	start(0)
	start(1)
	testutil.Until(t, "nodes 0 and 1 to split 5 as 3 + 2", func() bool { return split.limit(0) == 3 && split.limit(1) == 2 })
	split.acquire(t, 0, 3)
	split.acquire(t, 1, 2)

	start(2)
	testutil.Until(t, "node 0 to shrink to 2 and node 1 to confirm the 3-node view", func() bool {
		e, err := nodes[0].nodes.Get(patienceCtx(t), token(nodes[1].NodeName()))
		if err != nil {
			return false
		}
		return split.limit(0) == 2 && len(e.Value()) > 0 && countLines(viewOf(t, e.Value())) == 3
	})
	// Node 0 holds 3 slots above its new part of 2: node 2 may not take anything yet.
	if l := split.limit(2); l != 0 {
		t.Fatalf("node 2 took %d while node 0 still held 3 slots above its part", l)
	}
	split.lims[0].Release()
	testutil.Until(t, "node 2 to take its part (1) once node 0 drained", func() bool { return split.limit(2) == 1 })
	if split.limit(0) != 2 || split.limit(1) != 2 {
		t.Fatalf("3 nodes: limits %d + %d + %d, want 2 + 2 + 1", split.limit(0), split.limit(1), split.limit(2))
	}
	check()

	// Node 1 dies (its connection closes: its presence lapses after ack_wait, and its slots with its claims).
	nodes[1].Close()
	split.forget(1)
	testutil.Until(t, "nodes 0 and 2 to split 5 as 3 + 2 after node 1's presence lapsed", func() bool {
		return split.limit(0) == 3 && split.limit(2) == 2
	})
	// They grew only after node 1 stopped counting: its presence record is gone from the server (until then they
	// kept their smaller parts, under-using the limit).
	if _, err := nodes[0].nodes.Get(patienceCtx(t), token(nodes[1].NodeName())); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("nodes 0 and 2 grew while node 1's presence record was still stored (get: %v)", err)
	}
	check()
}

func viewOf(t *testing.T, v []byte) string {
	var p presence
	if err := json.Unmarshal(v, &p); err != nil {
		t.Fatal(err)
	}
	return p.View
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}
