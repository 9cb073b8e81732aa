package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/runtime/stream"
	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// Emit never reports as stored a trajectory it did not store: a second trajectory under an id the consumer's
// spool still holds (a front-door session id reused after a restart) is refused with ErrDuplicate, across a
// restart of the server on the same spool; once the first is acked, the id is free again.
func TestEmitRefusesADuplicateID(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SpoolDir = dir
	first := stream.Finished{ItemID: "dup", TrajectoryID: "frontdoor/dup/0", Trajectory: []byte(`{"reward": 1}`)}
	second := stream.Finished{ItemID: "dup", TrajectoryID: "frontdoor/dup/0", Trajectory: []byte(`{"reward": 0}`)}
	ts := newTestServer(t, cfg, &fakerunner.Runner{})
	if err := ts.srv.Emit(context.Background(), "trainer", "frontdoor/dup", first); err != nil {
		t.Fatal(err)
	}
	ts.close()
	ts = newTestServer(t, cfg, &fakerunner.Runner{})
	err := ts.srv.Emit(context.Background(), "trainer", "frontdoor/dup", second)
	if !errors.Is(err, stream.ErrDuplicate) {
		t.Fatalf("a second trajectory under the id after a restart: %v, want ErrDuplicate", err)
	}
	c, _ := connect(t, ts.url, "trainer", 100, nil)
	m := c.nextType("trajectory")
	if m["trajectory"].(map[string]any)["reward"] != 1.0 {
		t.Fatalf("the consumer got %v, want the first trajectory", m)
	}
	c.send(map[string]any{"type": "ack", "seqs": []uint64{num(m, "seq")}})
	c.send(map[string]any{"type": "ping", "id": "sync"})
	c.nextType("pong")
	if err := ts.srv.Emit(context.Background(), "trainer", "frontdoor/dup", second); err != nil {
		t.Fatalf("the id after its trajectory was acked: %v", err)
	}
}
