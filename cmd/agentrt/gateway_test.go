package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/sglang"
)

// The real SGLang Model Gateway in front of three `agentrt emulate` workers, with agentrt configured by the README's
// one-line change (gateway = URL, context_window = 0 read from a worker the gateway lists). Under the policies that
// honour X-SMG-Routing-Key (smg 1.13.0: manual and consistent_hashing; sglang-router 0.3.2: manual) every
// episode's turns reach one worker, so its prefix cache is reused; under round_robin they scatter. Then a worker dies
// mid-run: no episode is lost, and every status says what happened (completed, or aborted with the reason).
func TestGateways(t *testing.T) {
	for _, gw := range []struct {
		name, env string
		policies  []string
	}{
		{"smg", "AGENTRT_SMG", []string{"manual", "consistent_hashing", "round_robin"}},
		{"sglang-router", "AGENTRT_SGLANG_ROUTER", []string{"manual"}},
	} {
		t.Run(gw.name, func(t *testing.T) {
			bin := os.Getenv(gw.env)
			if _, err := os.Stat(bin); bin == "" || err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("$%s (%q) is missing: scripts/setup.d/85-gateways.sh installs it", gw.env, bin)
				}
				t.Skipf("$%s (%q) is missing: run make setup", gw.env, bin)
			}
			for _, policy := range gw.policies {
				t.Run(policy, func(t *testing.T) { gatewayRun(t, bin, policy) })
			}
		})
	}
}

// TestGatewaysLongBody: a long conversation's requests (over 8,192 ids, kept between turns in an sglang.IDsCache, so
// each body of 64 KB and more goes out chunked, Transfer-Encoding: chunked) pass through the real gateways to an
// `agentrt emulate` worker unchanged: the worker logs every turn's input_ids as sent.
func TestGatewaysLongBody(t *testing.T) {
	for _, gw := range []struct{ name, env string }{{"smg", "AGENTRT_SMG"}, {"sglang-router", "AGENTRT_SGLANG_ROUTER"}} {
		t.Run(gw.name, func(t *testing.T) {
			bin := os.Getenv(gw.env)
			if _, err := os.Stat(bin); bin == "" || err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("$%s (%q) is missing: scripts/setup.d/85-gateways.sh installs it", gw.env, bin)
				}
				t.Skipf("$%s (%q) is missing: run make setup", gw.env, bin)
			}
			dir := t.TempDir()
			worker := startWorker(t, dir, 0)
			url := startGateway(t, bin, "manual", filepath.Join(dir, "gateway.log"), []*emuWorker{worker})
			cfg := sglang.DefaultConfig()
			cfg.Gateway = url
			c, err := sglang.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// smg answers /health before it has read its worker's model: "No worker available for model 'unknown'"
			var lastErr error
			testutil.Until(t, gw.name+" to route a short /generate to its worker (last error: see below)", func() bool {
				_, lastErr = c.Generate(t.Context(), "warm", &sglang.GenerateRequest{InputIDs: []int32{1000, 1001},
					SamplingParams: sglang.SamplingParams{MaxNewTokens: 1}, RID: "warm"})
				if lastErr != nil {
					t.Logf("warm-up: %v", lastErr)
				}
				return lastErr == nil
			})
			ids := make([]int32, 0, 30000)
			for i := range 12000 {
				ids = append(ids, int32(1000+i*37%20000))
			}
			sent := map[string][]int32{}
			cache := new(sglang.IDsCache)
			for turn := range 3 {
				rid := fmt.Sprintf("long.%d", turn)
				req := &sglang.GenerateRequest{InputIDs: ids[:len(ids):len(ids)], SamplingParams: sglang.SamplingParams{MaxNewTokens: 8},
					ReturnLogprob: true, LogprobStartLen: len(ids) - 1, RID: rid, IDsCache: cache}
				resp, err := c.Generate(t.Context(), "long", req)
				if err != nil {
					t.Fatalf("turn %d (%d ids) through %s: %v", turn, len(ids), gw.name, err)
				}
				sent[rid] = slices.Clone(ids)
				ids = append(ids, resp.OutputIDs...)
				for i := range 3000 {
					ids = append(ids, int32(2000+i*53%20000))
				}
			}
			got := map[string][]int32{}
			f, err := os.Open(worker.log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				var r struct {
					Path    string `json:"path"`
					RID     string `json:"rid"`
					Request struct {
						InputIDs []int32 `json:"input_ids"`
					} `json:"request"`
				}
				if json.Unmarshal(sc.Bytes(), &r) == nil && r.Path == "/generate" {
					got[r.RID] = r.Request.InputIDs
				}
			}
			for rid, want := range sent {
				if !slices.Equal(got[rid], want) {
					t.Errorf("%s: the worker got %d input_ids, want the %d sent (equal: %v)", rid, len(got[rid]), len(want), slices.Equal(got[rid], want))
				}
			}
		})
	}
}

type emuWorker struct {
	url, log string
	cancel   context.CancelFunc
	done     chan struct{} // closed when the emulator has returned
}

// startWorker runs `agentrt emulate` in-process with a request log.
func startWorker(t *testing.T, dir string, i int) *emuWorker {
	t.Helper()
	model := os.Getenv("AGENTRT_QWEN3_MODEL")
	w := &emuWorker{log: filepath.Join(dir, fmt.Sprintf("worker%d.jsonl", i)), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	var out, errb lockedBuffer
	go func() {
		defer close(w.done)
		// --drain-timeout 1ns: stopping a worker is its death (what is in flight is aborted), not a drain
		run(ctx, []string{"emulate", "--model", model, "--addr", "127.0.0.1:0", "--seed", fmt.Sprint(i + 1), "--latency", "2ms,0,200us",
			"--drain-timeout", "1ns", "--log", w.log}, stdio{strings.NewReader(""), &out, &errb})
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	testutil.Until(t, "emulator worker to print its address", func() bool {
		if s := strings.TrimSpace(out.String()); strings.HasPrefix(s, "http://") {
			w.url = s
		}
		return w.url != ""
	})
	return w
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGateway runs the gateway binary in front of the workers and waits until it answers /health.
func startGateway(t *testing.T, bin, policy, logPath string, workers []*emuWorker) string {
	t.Helper()
	port := freePort(t)
	// Its Prometheus exporter gets a free port too (the default 29000 may be taken by another gateway).
	args := []string{"launch", "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--prometheus-host", "127.0.0.1",
		"--prometheus-port", fmt.Sprint(freePort(t)), "--policy", policy, "--worker-urls"}
	for _, w := range workers {
		args = append(args, w.url)
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited; logf.Close() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.Until(t, bin+" to answer /health with its workers", func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited: %s", bin, b)
		default:
		}
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url
}

// TestRunGroupsShareWorker: `agentrt run` over three emulator workers (no gateway) with the default routing
// (affinity "group", placement "least_loaded"): the samples of a prompt share one worker, every turn, and the
// groups use more than one worker. The loop passes each episode's group to the client (sglang.WithGroup).
func TestRunGroupsShareWorker(t *testing.T) {
	dir := t.TempDir()
	workers := []*emuWorker{startWorker(t, dir, 0), startWorker(t, dir, 1), startWorker(t, dir, 2)}
	cfg := writeConfig(t, dir, "\nworkers = [\"emulator\"]\n",
		fmt.Sprintf("\nworkers = [%q, %q, %q]\n", workers[0].url, workers[1].url, workers[2].url))
	var prompts bytes.Buffer
	for i := range 12 {
		fmt.Fprintf(&prompts, `{"id": "p%d", "prompt": "Compute (%d+25)*3 and 144/12.", "n": 3}`+"\n", i, i)
	}
	promptsPath := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(promptsPath, prompts.Bytes(), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", cfg, "--prompts", promptsPath, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("agentrt run: exit %d: %s", code, stderr.String())
	}
	for id, tr := range readTrajectories(t, out) {
		if tr["status"] != "completed" {
			t.Errorf("%s: %v %v", id, tr["status"], tr["error"])
		}
	}
	if used := checkGroupsShareWorker(t, workers, 12); used < 2 {
		t.Errorf("12 groups used %d of 3 workers", used)
	}
}

// checkGroupsShareWorker checks from the workers' logs that each group's requests (rid GROUP#SAMPLE.TURN) reached
// one worker, and that there were want groups; it returns how many workers served them.
func checkGroupsShareWorker(t *testing.T, workers []*emuWorker, want int) int {
	t.Helper()
	groups, used := map[string]map[int]bool{}, map[int]bool{}
	for ep, ws := range workerOf(t, workers) {
		g, _, _ := strings.Cut(ep, "#")
		if groups[g] == nil {
			groups[g] = map[int]bool{}
		}
		for w := range ws {
			groups[g][w] = true
			used[w] = true
		}
	}
	if len(groups) != want {
		t.Errorf("%d groups in the workers' logs, want %d", len(groups), want)
	}
	for g, ws := range groups {
		if len(ws) != 1 {
			t.Errorf("group %s's samples were served by workers %v, want one", g, ws)
		}
	}
	return len(used)
}

// workerOf maps each /generate rid to the workers that served it.
func workerOf(t *testing.T, workers []*emuWorker) map[string]map[int]bool {
	t.Helper()
	seen := map[string]map[int]bool{}
	for i, w := range workers {
		f, err := os.Open(w.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r struct {
				Path string `json:"path"`
				RID  string `json:"rid"`
			}
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Path == "/generate" && r.RID != "" {
				ep, _, _ := strings.Cut(r.RID, ".") // rid = EPISODE.TURN[.rN]
				if seen[ep] == nil {
					seen[ep] = map[int]bool{}
				}
				seen[ep][i] = true
			}
		}
		f.Close()
	}
	return seen
}

func gatewayRun(t *testing.T, bin, policy string) {
	keepsAffinity := policy == "manual" || policy == "consistent_hashing" // they honour X-SMG-Routing-Key
	dir := t.TempDir()
	workers := []*emuWorker{startWorker(t, dir, 0), startWorker(t, dir, 1), startWorker(t, dir, 2)}
	gw := startGateway(t, bin, policy, filepath.Join(dir, "gateway.log"), workers)
	cfg := writeConfig(t, dir, "\nworkers = [\"emulator\"]\n", "\ngateway = \""+gw+"\"\n")

	var prompts bytes.Buffer
	for i := range 12 {
		fmt.Fprintf(&prompts, `{"id": "p%d", "prompt": "Compute (%d+25)*3 and 144/12.", "n": 2}`+"\n", i, i)
	}
	promptsPath := filepath.Join(dir, "prompts.jsonl")
	os.WriteFile(promptsPath, prompts.Bytes(), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"run", cfg, "--prompts", promptsPath, "--out", out, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr}); code != exitOK {
		t.Fatalf("agentrt run through %s (%s): exit %d: %s", bin, policy, code, stderr.String())
	}
	got := readTrajectories(t, out)
	if len(got) != 24 {
		t.Fatalf("%d trajectories, want 24", len(got))
	}
	for id, tr := range got {
		if tr["status"] != "completed" {
			t.Errorf("%s: %v %v", id, tr["status"], tr["error"])
		}
	}
	if keepsAffinity {
		checkGroupsShareWorker(t, workers, 12)
	}
	spread, used := 0, map[int]bool{}
	for ep, ws := range workerOf(t, workers) {
		if len(ws) != 1 {
			spread++
			if keepsAffinity {
				t.Errorf("episode %s's turns went to workers %v under %s", ep, ws, policy)
			}
		}
		for w := range ws {
			used[w] = true
		}
	}
	t.Logf("%s %s: 24 episodes, %d spread across workers, %d of 3 workers used", filepath.Base(bin), policy, spread, len(used))
	if !keepsAffinity && spread == 0 {
		// what the README says of these policies: turns scatter, and each later turn prefills the history again
		t.Errorf("under %s no episode's turns were spread across workers", policy)
	}

	// A worker dies while episodes run: each one still ends with an honest status.
	out2 := filepath.Join(dir, "out2.jsonl")
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{"run", cfg, "--prompts", promptsPath, "--out", out2, "--quiet"}, stdio{strings.NewReader(""), &stdout, &stderr})
	}()
	victim := workers[0]
	before := countLines(victim.log)
	testutil.Until(t, "the second run's requests to reach worker 0", func() bool { return countLines(victim.log) > before })
	victim.cancel()
	<-victim.done
	if c, _ := testutil.Recv(t, "agentrt run to finish after a worker died", code); c != exitOK && c != exitFailure {
		t.Fatalf("run exit %d: %s", c, stderr.String())
	}
	got = readTrajectories(t, out2)
	if len(got) != 24 {
		t.Fatalf("after a worker died: %d trajectories, want 24 (none lost)", len(got))
	}
	statuses := map[string]int{}
	for id, tr := range got {
		st, _ := tr["status"].(string)
		statuses[st]++
		switch st {
		case "completed":
		case "aborted", "failed":
			if tr["status_reason"] == nil || tr["status_reason"] == "" {
				t.Errorf("%s: %s without a reason", id, st)
			}
		default:
			t.Errorf("%s: status %q", id, st)
		}
		if n := len(tr["token_ids"].([]any)); n != len(tr["loss_mask"].([]any)) || n != len(tr["logprobs"].([]any)) {
			t.Errorf("%s: arrays misaligned", id)
		}
	}
	t.Logf("after worker 0 died: %v", statuses)
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}
