package envtool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testutil"
	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// refServer is the reference environment service (examples/environments/reference_env.py), started for a test.
type refServer struct {
	URL string
	cmd *exec.Cmd
}

// startReference starts the reference service with fault flags and returns it once it listens. python3 missing:
// skipped, except under CI=true where it fails.
func startReference(t testing.TB, flags ...string) *refServer {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not on PATH")
		}
		t.Skip("python3 is not on PATH")
	}
	cmd := exec.Command(py, append([]string{"../../examples/environments/reference_env.py", "--port", "0"}, flags...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		io.Copy(io.Discard, out)
	}()
	l, _ := testutil.Recv(t, "the reference environment's address", line)
	addr, ok := strings.CutPrefix(strings.TrimSpace(l), "listening ")
	if !ok {
		t.Fatalf("reference environment printed %q, want its address", l)
	}
	return &refServer{URL: addr, cmd: cmd}
}

// serverStats are the reference service's counts (GET /stats).
type serverStats struct {
	Live           int       `json:"live"`
	MaxLive        int       `json:"max_live"`
	Creates        int       `json:"creates"`
	CreateRequests int       `json:"create_requests"`
	MaxCreating    int       `json:"max_creating"`
	CreateTimes    []float64 `json:"create_times"`
	Calls          int       `json:"calls"`
	Closed         []string  `json:"closed"`
}

func (s *refServer) stats(t *testing.T) serverStats {
	t.Helper()
	resp, err := http.Get(s.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st serverStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func open(t testing.TB, cfg Config) *Tool {
	t.Helper()
	tool, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tool.Close(context.Background()) })
	return tool
}

func intp(n int) *int { return &n }

func text(r abi.ToolResult) string {
	if r.Text != nil {
		return *r.Text
	}
	return string(r.JSON)
}

func call(t *testing.T, tool *Tool, ep, name, args string) abi.ToolResult {
	t.Helper()
	r, err := tool.CallEpisode(context.Background(), ep, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	return r
}

func begin(t *testing.T, tool *Tool, ep, meta string) {
	t.Helper()
	if err := tool.BeginEpisode(context.Background(), ep, json.RawMessage(meta)); err != nil {
		t.Fatalf("begin %s: %v", ep, err)
	}
}

// Two episodes, each with its own environment seeded from its metadata: calls reach the right one and see its
// state, rewards are the environments' own, and both are closed.
func TestReferenceEpisodes(t *testing.T) {
	srv := startReference(t)
	tool := open(t, Config{URL: srv.URL, Reward: true})
	var names []string
	for _, s := range tool.Specs() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "list_files,read_file,write_file" || !strings.Contains(string(tool.Specs()[1].Parameters), `"required"`) {
		t.Fatalf("specs %+v, want the service's three tools with their schemas", tool.Specs())
	}
	meta := `{"files": {"task.txt": "write 42 to answer.txt"}, "expect": {"answer.txt": "42"}}`
	begin(t, tool, "a", meta)
	begin(t, tool, "b", meta)
	if got := text(call(t, tool, "a", "read_file", `{"path": "task.txt"}`)); got != "write 42 to answer.txt" {
		t.Errorf("read_file = %q", got)
	}
	if r := call(t, tool, "a", "write_file", `{"path": "answer.txt", "content": "42"}`); r.IsError {
		t.Errorf("write_file: %q", text(r))
	}
	if got := text(call(t, tool, "a", "list_files", `{}`)); got != "answer.txt\ntask.txt" {
		t.Errorf("list_files in a = %q", got)
	}
	// b has its own workspace: a's write is not there, and the service's own error is an error result.
	if r := call(t, tool, "b", "read_file", `{"path": "answer.txt"}`); !r.IsError || text(r) != "no such file: answer.txt" {
		t.Errorf("read_file in b = %+v %q, want an error result", r, text(r))
	}
	if r := call(t, tool, "b", "read_file", `[1, 2]`); !r.IsError || !strings.Contains(text(r), "not a JSON object") {
		t.Errorf("array arguments: %q, want an error result", text(r))
	}
	for ep, want := range map[string]float64{"a": 1, "b": 0} {
		r, err := tool.EpisodeReward(context.Background(), ep)
		if err != nil || r == nil || *r != want {
			t.Errorf("reward of %s = %v, %v; want %v", ep, r, err, want)
		}
	}
	for _, ep := range []string{"a", "b"} {
		if err := tool.CloseEpisode(context.Background(), ep); err != nil {
			t.Errorf("close %s: %v", ep, err)
		}
	}
	if err := tool.CloseEpisode(context.Background(), "a"); err != nil { // nothing left to close
		t.Errorf("second close: %v", err)
	}
	st := srv.stats(t)
	if st.Live != 0 || len(st.Closed) != 2 || st.Creates != 2 {
		t.Errorf("service stats %+v: want 2 created, 2 closed, none live", st)
	}
	if _, err := tool.CallEpisode(context.Background(), "a", "list_files", nil); !isEnvError(err) {
		t.Errorf("a call after close: %v, want an environment error", err)
	}
}

func isEnvError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// A create that fails (503) is retried with backoff and, create being idempotent by episode id, makes one
// environment; one that fails every attempt is an environment error and frees its slot.
func TestCreateRetries(t *testing.T) {
	srv := startReference(t, "--fail-creates", "2")
	tool := open(t, Config{URL: srv.URL, Retries: intp(3), Backoff: time.Millisecond, MaxConcurrent: 1})
	begin(t, tool, "a", `{}`)
	if st := tool.Stats(); st.CreateAttempts != 3 || st.Creates != 1 {
		t.Errorf("tool stats %+v: want 3 attempts, 1 environment", st)
	}
	if err := tool.CloseEpisode(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}

	once := open(t, Config{URL: srv.URL, Retries: intp(1), Backoff: time.Millisecond, MaxConcurrent: 1})
	err := once.BeginEpisode(context.Background(), "b", nil)
	var e *Error
	if !errors.As(err, &e) || e.Op != "create" || !strings.Contains(err.Error(), "HTTP 503: sandbox pool exhausted") || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("create past its retries: %v, want an environment error naming the 503 and the attempts", err)
	}
	if !strings.Contains(err.Error(), "environment env:"+srv.URL) {
		t.Errorf("error %q does not name the service", err)
	}
	// The failed create gave its slot back (max_concurrent 1), and the service's third answer for b is a success.
	begin(t, once, "b", `{}`)
	if st := srv.stats(t); st.Creates != 2 || st.CreateRequests != 6 {
		t.Errorf("service stats %+v: want 2 environments from 6 requests", st)
	}
}

// An environment that never answers a create is an environment error after create_timeout (each attempt);
// a call that never answers is the model's error result after the call timeout, and the environment lives on.
func TestTimeouts(t *testing.T) {
	srv := startReference(t, "--hang-on", "list_files")
	// Long enough for a loaded machine's ordinary calls, which must not time out here.
	tool := open(t, Config{URL: srv.URL, CallTimeout: 2 * time.Second})
	begin(t, tool, "a", `{}`)
	r := call(t, tool, "a", "list_files", `{}`)
	if !r.IsError || text(r) != "Error: tool list_files timed out after 2s" {
		t.Errorf("hung call = %q, want a timeout error result", text(r))
	}
	if r := call(t, tool, "a", "write_file", `{"path": "x", "content": "y"}`); r.IsError {
		t.Errorf("a call after the timeout: %q", text(r))
	}
	// The episode's own end is the caller's to report.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.CallEpisode(ctx, "a", "list_files", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", err)
	}

	slow := startReference(t, "--create-delay", "30")
	st := open(t, Config{URL: slow.URL, CreateTimeout: 100 * time.Millisecond, Retries: intp(1), Backoff: time.Millisecond})
	err := st.BeginEpisode(context.Background(), "b", nil)
	if !isEnvError(err) || !strings.Contains(err.Error(), "no answer within 100ms") || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Errorf("hung create: %v, want an environment error after 2 attempts", err)
	}
}

// A service that dies mid-episode: the next call is an environment error (never a tool result the model would
// read as the environment's answer), and closing it fails but frees the slot.
func TestServiceCrash(t *testing.T) {
	srv := startReference(t, "--exit-on", "write_file")
	tool := open(t, Config{URL: srv.URL, Backoff: time.Millisecond, MaxConcurrent: 1, CloseTimeout: 5 * time.Second})
	begin(t, tool, "a", `{"files": {"f": "1"}}`)
	if got := text(call(t, tool, "a", "read_file", `{"path": "f"}`)); got != "1" {
		t.Fatalf("read_file = %q", got)
	}
	_, err := tool.CallEpisode(context.Background(), "a", "write_file", json.RawMessage(`{"path": "f", "content": "2"}`))
	var e *Error
	if !errors.As(err, &e) || e.Op != "call write_file" {
		t.Fatalf("call to a crashed service: %v, want an environment error", err)
	}
	if err := tool.CloseEpisode(context.Background(), "a"); !isEnvError(err) {
		t.Errorf("close on a dead service: %v, want an environment error", err)
	}
	if st := tool.Stats(); st.CloseFailures != 1 {
		t.Errorf("stats %+v, want one failed close", st)
	}
	// The slot is free again: the next episode waits for nothing but the (dead) service.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tool.BeginEpisode(ctx, "b", nil); !isEnvError(err) {
		t.Errorf("create on a dead service: %v, want an environment error", err)
	}
}

// max_concurrent caps the live environments (create to close), whatever the episodes' concurrency; the rest
// wait for a close.
func TestMaxConcurrent(t *testing.T) {
	srv := startReference(t)
	tool := open(t, Config{URL: srv.URL, MaxConcurrent: 2})
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- tool.BeginEpisode(context.Background(), string(rune('a'+i)), nil) }()
	}
	created := func() int { return tool.Stats().Creates }
	for closed := 0; closed < n; closed++ {
		want := min(n, closed+2)
		testutil.Until(t, "environments created", func() bool { return created() == want })
		if st := srv.stats(t); st.Live != want-closed || st.Live > 2 {
			t.Fatalf("after %d closes: service stats %+v, want %d live", closed, st, want-closed)
		}
		// Close one live episode: exactly one waiting episode may then create its environment.
		tool.mu.Lock()
		var ep string
		for k := range tool.envs {
			ep = k
			break
		}
		tool.mu.Unlock()
		if err := tool.CloseEpisode(context.Background(), ep); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if err, _ := testutil.Recv(t, "a create's result", errs); err != nil {
			t.Error(err)
		}
	}
	if st := srv.stats(t); st.MaxLive != 2 || st.Creates != n || st.Live != 0 {
		t.Errorf("service stats %+v: want %d environments, at most 2 live at once", st, n)
	}
}

// creates_per_second spaces creates (no burst), however many episodes begin at once; waiting for a turn does not
// count against create_timeout (the last create here waits longer than that, without a retry to spare).
func TestCreateRate(t *testing.T) {
	srv := startReference(t)
	const perSecond, n = 4.0, 6
	tool := open(t, Config{URL: srv.URL, CreatesPerSecond: perSecond, CreateTimeout: time.Second, Retries: intp(0)})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { begin(t, tool, string(rune('a'+i)), "") })
	}
	wg.Wait()
	st := srv.stats(t)
	if len(st.CreateTimes) != n {
		t.Fatalf("%d creates, want %d", len(st.CreateTimes), n)
	}
	// The limiter spaces the requests' departures by 250 ms; their arrivals may bunch up by the jitter of a loaded
	// machine, so the bound is half the paced span (unpaced, they would arrive within a few milliseconds).
	span := st.CreateTimes[n-1] - st.CreateTimes[0]
	if want := 0.5 * float64(n-1) / perSecond; span < want {
		t.Errorf("%d creates arrived within %.3fs, want at least %.3fs at %v/s", n, span, want, perSecond)
	}
	// A turn past the caller's deadline ends the create at once, as the deadline (not the service's failure).
	srv2 := startReference(t)
	slow := open(t, Config{URL: srv2.URL, CreatesPerSecond: 0.001})
	begin(t, slow, "first", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := slow.BeginEpisode(ctx, "second", nil)
	if !errors.Is(err, context.DeadlineExceeded) || isEnvError(err) || !strings.Contains(err.Error(), "creates_per_second") {
		t.Errorf("a create whose turn comes after the deadline: %v, want a deadline error naming creates_per_second", err)
	}
}

// The service is unreachable at start-up: Open fails, naming it, after its retries.
func TestOpenUnreachable(t *testing.T) {
	_, err := Open(context.Background(), Config{URL: "http://127.0.0.1:1", Retries: intp(1), Backoff: time.Millisecond})
	if !isEnvError(err) || !strings.Contains(err.Error(), "env:http://127.0.0.1:1: listing tools") {
		t.Errorf("Open: %v, want an environment error naming the service", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		key string
	}{
		{Config{}, "url"},
		{Config{URL: "ftp://x"}, "url"},
		{Config{URL: "http://x", MaxConcurrent: -1}, "max_concurrent"},
		{Config{URL: "http://x", CreatesPerSecond: -1}, "creates_per_second"},
		{Config{URL: "http://x", Retries: intp(-1)}, "retries"},
		{Config{URL: "http://x"}, ""},
	} {
		if key, _ := tc.cfg.Validate(); key != tc.key {
			t.Errorf("%+v: key %q, want %q", tc.cfg, key, tc.key)
		}
	}
}

// The limits are the service's: entries naming one URL share them (the service fails under the sum of their
// bursts), must agree on them, and a closed entry's hold goes away.
func TestLimitsSharedPerService(t *testing.T) {
	srv := startReference(t)
	a := open(t, Config{URL: srv.URL, MaxConcurrent: 3, CreatesPerSecond: 10})
	b := open(t, Config{URL: srv.URL + "/", MaxConcurrent: 3, CreatesPerSecond: 10})
	if a.limits != b.limits || a.slots == nil || a.slots != b.slots || a.limiter != b.limiter {
		t.Fatalf("two entries for one service have separate limits")
	}
	_, err := Open(context.Background(), Config{URL: srv.URL, MaxConcurrent: 4, CreatesPerSecond: 10})
	if err == nil || !strings.Contains(err.Error(), "another entry uses this service with 3 and 10") {
		t.Fatalf("an entry with other limits: %v, want a start-up error", err)
	}
	a.Close(context.Background())
	a.Close(context.Background()) // twice: still one hold dropped
	b.Close(context.Background())
	c := open(t, Config{URL: srv.URL, MaxConcurrent: 4})
	if c.limits == b.limits || c.slots.Limit() != 4 || c.limiter != nil {
		t.Errorf("after every entry closed, a new one does not get its own limits")
	}
}

// BenchmarkReferenceCall is one tool call routed to an environment of the reference service (stdlib Python
// http.server, loopback): what a remote environment adds to a turn besides the tool's own work.
// BenchmarkReferenceLifecycle is an episode's create + one call + close.
func BenchmarkReferenceCall(b *testing.B) {
	srv := startReference(b)
	tool := open(b, Config{URL: srv.URL})
	if err := tool.BeginEpisode(context.Background(), "bench", json.RawMessage(`{"files": {"task.txt": "hello"}}`)); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path": "task.txt"}`)
	b.ResetTimer()
	for b.Loop() {
		if r, err := tool.CallEpisode(context.Background(), "bench", "read_file", args); err != nil || r.IsError {
			b.Fatal(err)
		}
	}
}

func BenchmarkReferenceLifecycle(b *testing.B) {
	srv := startReference(b)
	tool := open(b, Config{URL: srv.URL})
	args := json.RawMessage(`{"path": "task.txt"}`)
	i := 0
	for b.Loop() {
		ep := fmt.Sprint("bench-", i)
		i++
		if err := tool.BeginEpisode(context.Background(), ep, json.RawMessage(`{"files": {"task.txt": "hello"}}`)); err != nil {
			b.Fatal(err)
		}
		if r, err := tool.CallEpisode(context.Background(), ep, "read_file", args); err != nil || r.IsError {
			b.Fatal(err)
		}
		if err := tool.CloseEpisode(context.Background(), ep); err != nil {
			b.Fatal(err)
		}
	}
}
