package main

import (
	"testing"
)

// TestServeClusterControl: three `agentrt serve` processes in a cluster, each over its own built-in emulator. A
// trainer connected to n1 pauses, updates the weights (weight_version step-7) and resumes; each control is
// acknowledged once every node applied it. A request submitted next runs on every node, and every trajectory,
// whichever node ran it, says its tokens came from step-7: each node's emulator took the update, not n1's alone.
func TestServeClusterControl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three agentrt serve subprocesses")
	}
	nodes, failf := newCluster(t)
	c := dialConsumer(t, nodes[1].url)
	controlOK := func(msg map[string]any) {
		t.Helper()
		c.send(t, msg)
		m := c.read(t)
		if m == nil || m["type"] != "control_ok" || m["id"] != msg["id"] || m["op"] != msg["type"] {
			failf("%v answered %v", msg, m)
		}
	}
	controlOK(map[string]any{"type": "pause", "id": "c1", "mode": "abort"})
	controlOK(map[string]any{"type": "update_weights", "id": "c2", "model_path": "/ckpt/step-7", "weight_version": "step-7"})
	controlOK(map[string]any{"type": "resume", "id": "c3"})

	const items, n = 16, 4
	its := questions(items, n, "What is %[1]d*7?")
	c.send(t, map[string]any{"type": "submit", "request_id": "r", "items": its})
	got := map[string]bool{}
	var done map[string]any
	for done == nil {
		m := c.read(t)
		if m == nil {
			failf("the connection ended")
		}
		switch m["type"] {
		case "accepted":
			continue
		case "trajectory":
			id := m["trajectory_id"].(string)
			got[id] = true
			tr := m["trajectory"].(map[string]any)
			spans, _ := tr["weight_versions"].([]any)
			if tr["status"] != "completed" || len(spans) == 0 {
				failf("%s: status %v, weight_versions %v", id, tr["status"], tr["weight_versions"])
			}
			for _, sp := range spans {
				if v := sp.(map[string]any)["version"]; v != "step-7" {
					failf("%s: tokens from weight version %v, want step-7 (the node did not take the update)", id, v)
				}
			}
		case "request_done":
			done = m
		default:
			failf("unexpected frame %v", m)
		}
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	if len(got) != items*n || done["status"] != "completed" {
		failf("%d trajectories, request_done %v", len(got), done)
	}
	others := 0
	for _, nd := range nodes {
		t.Logf("%s stored %d results", nd.name, nd.count("bus: stored"))
		if nd != nodes[1] {
			others += nd.count("bus: stored")
		}
	}
	if others == 0 {
		failf("only %s ran samples: the other nodes' weights were not checked", nodes[1].name)
	}
}
