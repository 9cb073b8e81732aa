package stream_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/runtime/stream/internal/fakerunner"
)

// TestShutdownInterruptsAndRestartResumes: a request is half done when the server shuts down past its grace.
// It sends no request_done; a new server on the same spool resumes it, runs only the samples that had not
// finished, keeps the trajectory ids, and ends it with a request_done that counts every sample.
func TestShutdownInterruptsAndRestartResumes(t *testing.T) {
	cfg := testConfig()
	cfg.Fsync = true
	cfg.SpoolDir = t.TempDir()
	gate := make(chan struct{})
	ts := newTestServer(t, cfg, &fakerunner.Runner{Tokens: 16, Gate: gate})
	c, w := connect(t, ts.url, "trainer", 100, nil)
	if w["done_requests"] == nil || len(w["done_requests"].([]any)) != 0 {
		t.Fatalf("welcome of a new consumer = %v", w)
	}
	c.send(submit("r", 2, 3))
	c.nextType("accepted")
	gate <- struct{}{}
	gate <- struct{}{}
	first, _ := receive(t, c, 2, false)
	var acked string
	for id, m := range first {
		acked = id
		c.send(map[string]any{"type": "ack", "seqs": []uint64{num(m, "seq")}})
		break
	}
	c.send(map[string]any{"type": "ping", "id": "sync"})
	c.nextType("pong")
	ts.close() // past the grace at once: the 4 waiting episodes are interrupted

	gate2 := make(chan struct{})
	r2 := &fakerunner.Runner{Tokens: 16, Gate: gate2}
	ts2 := newTestServer(t, cfg, r2)
	c2, w2 := connect(t, ts2.url, "trainer", 100, nil)
	if id := w["spool_id"]; id == "" || id != w2["spool_id"] {
		t.Fatalf("spool_id %v before the restart, %v after: want one non-empty id", id, w2["spool_id"])
	}
	if _, w3 := connect(t, newTestServer(t, testConfig(), &fakerunner.Runner{}).url, "trainer", 1, nil); w3["spool_id"] == w["spool_id"] {
		t.Fatalf("two spools share the id %v", w3["spool_id"])
	}
	if got := w2["active_requests"].([]any); len(got) != 1 || got[0] != "r" {
		t.Fatalf("welcome after restart: active_requests %v, want [r]", got)
	}
	if w2["unacked"].(float64) != 1 {
		t.Fatalf("welcome after restart: unacked %v, want 1 (the trajectory not acked)", w2["unacked"])
	}
	close(gate2)
	again, dones := receive(t, c2, 5, true)
	if len(dones) == 0 {
		d := c2.nextType("request_done")
		dones["r"] = d
	}
	if _, ok := again[acked]; ok {
		t.Errorf("acked trajectory %s was delivered again", acked)
	}
	var ids []string
	for id := range again {
		ids = append(ids, id)
	}
	ids = append(ids, acked)
	slices.Sort(ids)
	var want []string
	for i := range 2 {
		for k := range 3 {
			want = append(want, fmt.Sprintf("r/item%d/%d", i, k))
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("trajectory ids across the restart = %v, want %v", ids, want)
	}
	if d := dones["r"]; d["status"] != "completed" || d["trajectories"].(float64) != 6 {
		t.Fatalf("request_done after restart = %v", d)
	}
	if n := r2.Started.Load(); n != 4 {
		t.Fatalf("the restarted server ran %d episodes, want 4 (2 had finished)", n)
	}
}

// TestWelcomeListsDoneRequests: a consumer that reconnects before acking a request_done finds the request in
// welcome.done_requests (and the request_done follows).
func TestWelcomeListsDoneRequests(t *testing.T) {
	ts := newTestServer(t, testConfig(), &fakerunner.Runner{Tokens: 16})
	c, _ := connect(t, ts.url, "trainer", 100, nil)
	c.send(submit("r", 1, 2))
	c.nextType("accepted")
	c.nextType("request_done") // not acked
	c.ws.Close()
	c.waitClosed()
	c2, w := connect(t, ts.url, "trainer", 100, nil)
	if got := w["done_requests"].([]any); len(got) != 1 || got[0] != "r" {
		t.Fatalf("done_requests = %v, want [r]", got)
	}
	if got := w["active_requests"].([]any); len(got) != 0 {
		t.Fatalf("active_requests = %v, want []", got)
	}
	c2.nextType("request_done")
}
