package main

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestServeClusterSupersede: three `agentrt serve` processes in a cluster. A trainer on n0 submits a request
// and acks its first trajectories only; the same consumer then says hello on n2. n0's connection is told
// `superseded` and closed (as one process does with two connections of a consumer), and the connection on n2
// receives every other trajectory and the request_done: none of those acked on n0, none missing.
func TestServeClusterSupersede(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three agentrt serve subprocesses")
	}
	nodes, failf := newCluster(t)

	const items, n, ackFirst = 8, 2, 5
	its := questions(items, n, "What is %[1]d*7?")
	c0 := dialConsumer(t, nodes[0].url)
	c0.send(t, map[string]any{"type": "submit", "request_id": "r", "items": its})
	acked := map[string]bool{}
	for len(acked) < ackFirst {
		m := c0.read(t)
		if m == nil {
			failf("n0's connection ended before %d trajectories", ackFirst)
		}
		if m["type"] == "trajectory" {
			acked[m["trajectory_id"].(string)] = true
			c0.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
		}
	}

	c2 := dialConsumer(t, nodes[2].url)
	// n0's connection: what it had queued, then `superseded` (as an error frame, or as the close's reason when
	// its queue was full) and the close.
	superseded := false
	for {
		c0.ws.SetReadDeadline(time.Now().Add(time.Minute))
		_, b, err := c0.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.ClosePolicyViolation && ce.Text == "superseded" {
				superseded = true
			}
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				failf("n0's connection is still open a minute after the hello on n2")
			}
			break
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["type"] == "error" {
			if m["code"] != "superseded" {
				failf("n0's connection got %v, want code superseded", m)
			}
			superseded = true
		}
	}
	if !superseded {
		failf("n0's connection closed without being told superseded")
	}

	got := map[string]bool{}
	var done map[string]any
	for done == nil {
		m := c2.read(t)
		if m == nil {
			failf("n2's connection ended")
		}
		switch m["type"] {
		case "trajectory":
			id := m["trajectory_id"].(string)
			if acked[id] {
				failf("%s was acked on n0 and delivered again on n2", id)
			}
			if got[id] {
				failf("%s delivered twice on n2", id)
			}
			got[id] = true
		case "request_done":
			done = m
		case "error":
			failf("n2's connection got %v", m)
		}
		c2.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	if len(got)+len(acked) != items*n || done["status"] != "completed" {
		failf("%d acked on n0 + %d on n2, want %d; request_done %v", len(acked), len(got), items*n, done)
	}
}
