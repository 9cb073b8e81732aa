package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
)

// claimed is a trainer connection's claim in a test; done is closed when it is superseded.
type claimed struct {
	release func()
	done    chan struct{}
}

func claim(t *testing.T, b *Bus, consumer, conn string) claimed {
	t.Helper()
	done := make(chan struct{})
	release, err := b.ClaimConsumer(patienceCtx(t), consumer, conn, func() { close(done) })
	if err != nil {
		t.Fatalf("claim %s/%s on %s: %v", consumer, conn, b.NodeName(), err)
	}
	return claimed{release, done}
}

func (c claimed) superseded() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func awaitSuperseded(t *testing.T, c claimed, what string) {
	t.Helper()
	select {
	case <-c.done:
	case <-patienceCtx(t).Done():
		testutil.Hung(t, what+" to be superseded")
	}
}

// caughtUp returns once node's watch of the connection bucket has shown every hello recorded so far: a probe
// claimed on node and then on another node must supersede the first.
func caughtUp(t *testing.T, node, other *Bus, probe string) {
	t.Helper()
	first := claim(t, node, probe, "probe")
	claim(t, other, probe, "probe")
	awaitSuperseded(t, first, fmt.Sprintf("the probe %s on %s", probe, node.NodeName()))
}

// The newest hello of a consumer, on any node, supersedes its older connections on every node, once each; a
// superseded connection's release leaves the newer one's record; the survivor of a race is the one recorded
// last.
func TestSupersedeAcrossNodes(t *testing.T) {
	nodes := cluster(t)
	c0 := claim(t, nodes[0], "alice/trainer 1", "c0")
	c1 := claim(t, nodes[1], "alice/trainer 1", "c1")
	awaitSuperseded(t, c0, "alice's connection on n0 (after a hello on n1)")
	caughtUp(t, nodes[1], nodes[2], "probe-1")
	if c1.superseded() {
		t.Fatal("the newest connection (n1) was superseded by an older hello")
	}
	c0.release() // the superseded connection closes: the record stays n1's
	e, err := nodes[2].conns.Get(patienceCtx(t), token("alice/trainer 1"))
	if err != nil {
		t.Fatal(err)
	}
	var rec connRecord
	if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Node != nodes[1].NodeName() || rec.Conn != "c1" {
		t.Fatalf("record after the old connection closed = %s (%v), want n1's c1", e.Value(), err)
	}
	c1.release()
	if _, err := nodes[2].conns.Get(patienceCtx(t), token("alice/trainer 1")); err == nil {
		t.Fatal("the record is still there after its connection closed")
	}
	// A consumer's next hello after a clean close supersedes nothing.
	c2 := claim(t, nodes[2], "alice/trainer 1", "c2")
	caughtUp(t, nodes[2], nodes[0], "probe-2")
	if c2.superseded() {
		t.Fatal("a hello after the last connection closed was superseded")
	}

	// Three hellos at once on three nodes: exactly one survives, on every node's view.
	race := make([]claimed, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { race[i] = claim(t, nodes[i], "bob", fmt.Sprintf("r%d", i)) })
	}
	wg.Wait()
	testutil.Until(t, "two of three racing hellos superseded", func() bool {
		n := 0
		for _, c := range race {
			if c.superseded() {
				n++
			}
		}
		return n >= 2
	})
	for i := range 3 {
		caughtUp(t, nodes[i], nodes[(i+1)%3], fmt.Sprintf("probe-race-%d", i))
	}
	var alive []int
	for i, c := range race {
		if !c.superseded() {
			alive = append(alive, i)
		}
	}
	if len(alive) != 1 {
		t.Fatalf("survivors of the race = %v, want exactly one", alive)
	}
	e, err = nodes[0].conns.Get(patienceCtx(t), token("bob"))
	if err != nil || json.Unmarshal(e.Value(), &rec) != nil || rec.Conn != fmt.Sprintf("r%d", alive[0]) {
		t.Fatalf("bob's record = %v (%v), want the survivor r%d", rec, err, alive[0])
	}
}

// A hello the store cannot record is refused: nothing could supersede it.
func TestClaimOnAClosedBusFails(t *testing.T) {
	b := openBus(t, testConfig(t))
	b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience)
	defer cancel()
	if _, err := b.ClaimConsumer(ctx, "alice", "c0", func() {}); err == nil {
		t.Fatal("a claim on a closed bus succeeded")
	}
}
