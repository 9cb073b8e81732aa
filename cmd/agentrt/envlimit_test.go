package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// countingEnv is an environment service (docs/environments.md) that counts its live environments (create to
// close) and remembers the most it ever had at once.
type countingEnv struct {
	mu       sync.Mutex
	envs     map[string]string // episode id -> env id
	live     map[string]bool   // env id -> live
	most     int
	creates  int
	episodes map[string]bool
}

func (e *countingEnv) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/tools":
		w.Write([]byte(`{"service": "counting 1", "tools": [{"name": "lookup", "description": "Looks a word up.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}]}`))
	case r.Method == http.MethodPost && r.URL.Path == "/create":
		var body struct {
			EpisodeID string `json:"episode_id"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		id, ok := e.envs[body.EpisodeID]
		if !ok || !e.live[id] {
			e.creates++
			id = fmt.Sprintf("env%d", e.creates)
			e.envs[body.EpisodeID] = id
			e.live[id] = true
			e.episodes[body.EpisodeID] = true
			n := 0
			for _, l := range e.live {
				if l {
					n++
				}
			}
			e.most = max(e.most, n)
		}
		fmt.Fprintf(w, `{"env_id": %q}`, id)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/close"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/envs/"), "/close")
		e.live[id] = false
		w.Write([]byte(`{}`))
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/call"):
		w.Write([]byte(`{"content": "found", "is_error": false}`))
	default:
		http.NotFound(w, r)
	}
}

// TestServeClusterEnvLimit: three `agentrt serve` processes in a cluster (8 episode slots each) share one
// environment service whose max_concurrent is 4. The service never has more than 4 live environments at once
// (each node alone would allow 4: 12 in all), and every one of 64 samples completes.
func TestServeClusterEnvLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three agentrt serve subprocesses")
	}
	env := &countingEnv{envs: map[string]string{}, live: map[string]bool{}, episodes: map[string]bool{}}
	srv := httptest.NewServer(env)
	defer srv.Close()
	nodes, failf := newCluster(t, `plugin = "builtin:calculator"`+"\n", `plugin = "builtin:calculator"

[[agent.tools]]
env = { url = "`+srv.URL+`", max_concurrent = 4 }
`)
	const items, n = 16, 4
	its := questions(items, n, "What is %[1]d*7?")
	c := dialConsumer(t, nodes[0].url)
	c.send(t, map[string]any{"type": "submit", "request_id": "r", "items": its})
	got := map[string]bool{}
	var done map[string]any
	for done == nil {
		m := c.read(t)
		if m == nil {
			failf("the connection ended")
		}
		switch m["type"] {
		case "trajectory":
			tr := m["trajectory"].(map[string]any)
			if tr["status"] != "completed" {
				failf("%s: status %v (%v %v)", m["trajectory_id"], tr["status"], tr["status_reason"], tr["error"])
			}
			got[m["trajectory_id"].(string)] = true
		case "request_done":
			done = m
		}
		c.send(t, map[string]any{"type": "ack", "seqs": []any{m["seq"]}})
	}
	env.mu.Lock()
	most, episodes := env.most, len(env.episodes)
	env.mu.Unlock()
	if len(got) != items*n || episodes != items*n {
		failf("%d trajectories, %d episodes with an environment; want %d", len(got), episodes, items*n)
	}
	if most > 4 {
		failf("the service had %d live environments at once; max_concurrent is 4 for the whole cluster", most)
	}
	ran := 0
	for _, nd := range nodes {
		if nd.count("bus: stored") > 0 {
			ran++
		}
	}
	t.Logf("at most %d live environments; %d nodes ran samples", most, ran)
	if ran < 2 {
		failf("only %d node ran samples: the split was not exercised", ran)
	}
}
