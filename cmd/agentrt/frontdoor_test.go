package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFrontdoor: `agentrt serve` with [frontdoor] enabled answers an OpenAI chat completions call on the
// same listener as the stream; ending the session delivers its trajectory to the configured consumer over the
// WebSocket, in a trajectory frame like any rollout's, and the consumer's ack removes it from the spool.
func TestServeFrontdoor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agentrt serve subprocess")
	}
	dir := t.TempDir()
	model := os.Getenv("AGENTRT_QWEN3_MODEL")
	cfg := writeConfig(t, dir,
		`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(dir, "spool")),
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
		"enabled = false", "enabled = true",
		`agent = ""`, `agent = "chat"`,
		`consumer = "frontdoor"`, `consumer = "trainer"`)
	src, _ := os.ReadFile(cfg)
	src = append(src, fmt.Sprintf("\n[[agent]]\nname = \"chat\"\nmodel = %q\nchat_template_kwargs = { enable_thinking = false }\n", model)...)
	os.WriteFile(cfg, src, 0o644)
	logPath := filepath.Join(dir, "serve.log")
	p := startAgentrt(t, logPath, "serve", cfg)
	defer p.kill9(t)
	line, err := p.stdout.ReadString('\n')
	_, rest, ok := strings.Cut(line, "(WebSocket ")
	url, _, ok2 := strings.Cut(rest, ")")
	if err != nil || !ok || !ok2 {
		failWithLog(t, logPath, "agentrt serve printed %q (%v)", line, err)
	}
	base := "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/v1/stream")

	post := func(path string, body any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			failWithLog(t, logPath, "POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			failWithLog(t, logPath, "POST %s: %d %q", path, resp.StatusCode, raw)
		}
		return resp.StatusCode, out
	}
	code, resp := post("/s/ep1/v1/chat/completions", map[string]any{"model": "chat",
		"messages": []any{map[string]any{"role": "user", "content": "Say hello."}}})
	if code != 200 || resp["object"] != "chat.completion" {
		failWithLog(t, logPath, "chat completions answered %d %v", code, resp)
	}
	// The same messages again: a second sample of the turn, which the default drift policy (fork) makes a branch.
	if code, resp := post("/s/ep1/v1/chat/completions", map[string]any{"model": "chat",
		"messages": []any{map[string]any{"role": "user", "content": "Say hello."}}}); code != 200 {
		failWithLog(t, logPath, "the second sample answered %d %v", code, resp)
	}
	mresp, err := http.Get(base + "/metrics")
	if err != nil {
		failWithLog(t, logPath, "GET /metrics: %v", err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(metrics), `agentrt_frontdoor_history_drift_total{policy="fork",reason="regenerate"} 1`) {
		failWithLog(t, logPath, "/metrics has no fork/regenerate drift count")
	}
	if code, resp := post("/s/ep1/end", map[string]any{"reward": 0.5}); code != 200 {
		failWithLog(t, logPath, "end answered %d %v", code, resp)
	}
	c := dialConsumer(t, url)
	m := c.read(t)
	// frontdoor/SESSION/RUN/BRANCH
	tid, _ := m["trajectory_id"].(string)
	run := strings.TrimSuffix(strings.TrimPrefix(tid, "frontdoor/ep1/"), "/0")
	if m == nil || m["type"] != "trajectory" || m["request_id"] != "frontdoor/ep1" || len(run) != 16 || tid != "frontdoor/ep1/"+run+"/0" {
		failWithLog(t, logPath, "the consumer got %v", m)
	}
	tr := m["trajectory"].(map[string]any)
	if tr["status"] != "completed" || tr["reward"] != 0.5 || tr["provenance"].(map[string]any)["frontdoor"] == nil {
		failWithLog(t, logPath, "trajectory status %v reward %v provenance %v", tr["status"], tr["reward"], tr["provenance"])
	}
	c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	if m := c.read(t); m == nil || m["type"] != "trajectory" || m["trajectory_id"] != "frontdoor/ep1/"+run+"/1" {
		failWithLog(t, logPath, "the consumer got %v as the second branch", m)
	} else {
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	if code, resp := post("/s/ep1/v1/chat/completions", map[string]any{"model": "chat",
		"messages": []any{map[string]any{"role": "user", "content": "Again."}}}); code != 404 {
		failWithLog(t, logPath, "a call to the ended session answered %d %v", code, resp)
	}
}

// TestServeFrontdoorReusedSessionAcrossRestart: session "dup" ends with reward 1; `agentrt serve` is killed and
// started again on the same spool; a new session "dup" ends with reward 0. The two end calls answer two
// different trajectory ids, and the trainer receives both trajectories (issue 27: the second used to answer the
// first's id while the spool dropped it as a duplicate).
func TestServeFrontdoorReusedSessionAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt serve subprocesses")
	}
	dir := t.TempDir()
	model := os.Getenv("AGENTRT_QWEN3_MODEL")
	cfg := writeConfig(t, dir,
		`spool_dir = "~/.cache/agentrt/spool"`, fmt.Sprintf("spool_dir = %q", filepath.Join(dir, "spool")),
		`addr = "127.0.0.1:8080"`, `addr = "127.0.0.1:0"`,
		"enabled = false", "enabled = true",
		`agent = ""`, `agent = "chat"`,
		`consumer = "frontdoor"`, `consumer = "trainer"`)
	src, _ := os.ReadFile(cfg)
	src = append(src, fmt.Sprintf("\n[[agent]]\nname = \"chat\"\nmodel = %q\nchat_template_kwargs = { enable_thinking = false }\n", model)...)
	os.WriteFile(cfg, src, 0o644)
	logPath := filepath.Join(dir, "serve.log")
	serve := func() (*agentrtProc, string, string) {
		p := startAgentrt(t, logPath, "serve", cfg)
		line, err := p.stdout.ReadString('\n')
		_, rest, ok := strings.Cut(line, "(WebSocket ")
		url, _, ok2 := strings.Cut(rest, ")")
		if err != nil || !ok || !ok2 {
			failWithLog(t, logPath, "agentrt serve printed %q (%v)", line, err)
		}
		return p, url, "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/v1/stream")
	}
	post := func(base, path string, body any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			failWithLog(t, logPath, "POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			failWithLog(t, logPath, "POST %s: %d %q", path, resp.StatusCode, raw)
		}
		return resp.StatusCode, out
	}
	episode := func(base string, reward float64) string {
		if code, resp := post(base, "/s/dup/v1/chat/completions", map[string]any{"model": "chat",
			"messages": []any{map[string]any{"role": "user", "content": "Say hello."}}}); code != 200 {
			failWithLog(t, logPath, "chat completions answered %d %v", code, resp)
		}
		code, resp := post(base, "/s/dup/end", map[string]any{"reward": reward})
		ids, _ := resp["trajectories"].([]any)
		if code != 200 || len(ids) != 1 {
			failWithLog(t, logPath, "end answered %d %v", code, resp)
		}
		return ids[0].(string)
	}
	p, _, base := serve()
	first := episode(base, 1)
	p.kill9(t)
	p, url, base := serve()
	defer p.kill9(t)
	second := episode(base, 0)
	if first == second {
		failWithLog(t, logPath, "both sessions \"dup\" answered trajectory %s", first)
	}
	c := dialConsumer(t, url)
	got := map[string]float64{}
	for len(got) < 2 {
		m := c.read(t)
		if m == nil || m["type"] != "trajectory" {
			failWithLog(t, logPath, "the consumer got %v (trajectories so far %v)", m, got)
		}
		got[m["trajectory_id"].(string)] = m["trajectory"].(map[string]any)["reward"].(float64)
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	if got[first] != 1 || got[second] != 0 {
		failWithLog(t, logPath, "the trainer got %v, want %s with reward 1 and %s with reward 0", got, first, second)
	}
}
