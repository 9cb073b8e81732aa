package mcptool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/testutil"
)

// The adversarial probes of issue 27 against MCP servers: a huge answer (over streamable HTTP, as JSON and as
// SSE, and over stdio), a server dropped after a protocol error that refuses to die, and a crash loop.

// hostile is testdata/hostile.py in mode, recording its pids in a file of the test's.
func hostile(t *testing.T, mode string) (argv []string, pidfile string) {
	t.Helper()
	py := serverCommand(t, "stdio")[0]
	pidfile = filepath.Join(t.TempDir(), "pids")
	return []string{py, "testdata/hostile.py", mode, pidfile}, pidfile
}

// pids reads every pid a hostile server wrote (each start: the server and its grandchild).
func pids(t *testing.T, pidfile string) []int {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", pidfile, b)
		}
		out = append(out, n)
	}
	return out
}

// alive reports whether pid is a live process (a zombie nobody reaped yet is dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(st), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

func wantGone(t *testing.T, pidfile string) {
	t.Helper()
	ps := pids(t, pidfile)
	if len(ps) == 0 {
		t.Fatal("the server recorded no pids")
	}
	t.Cleanup(func() {
		for _, p := range ps {
			syscall.Kill(p, syscall.SIGKILL) // whatever the test's verdict, leave nothing behind
		}
	})
	// A SIGKILLed process takes a moment to die: wait for it (a process nobody killed never does).
	testutil.Until(t, fmt.Sprintf("the server processes %v to be gone after Close", ps), func() bool {
		return !slices.ContainsFunc(ps, alive)
	})
}

// A stdio server dropped after a protocol error, which ignores its stdin's end and SIGTERM and has a child of its
// own, is gone with its child once the tool is closed (agentrt run closes its tools before it exits).
func TestDroppedServerIsKilledWithItsChildren(t *testing.T) {
	argv, pidfile := hostile(t, "orphan")
	tool, err := Open(context.Background(), Config{Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, tool, "e1", "poke", `{}`)
	if !r.IsError || !strings.Contains(text(r), "failed during the call") {
		t.Fatalf("poke = %q, want the protocol error's error result", text(r))
	}
	if err := tool.Close(context.Background()); err != nil {
		t.Logf("close: %v", err)
	}
	wantGone(t, pidfile)
}

// A server that crashes on every call: each call gets an error result, each is restarted once, and no process
// is left behind.
func TestCrashLoop(t *testing.T) {
	argv, pidfile := hostile(t, "crash")
	tool, err := Open(context.Background(), Config{Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if r := call(t, tool, "e1", "poke", `{}`); !r.IsError || !strings.Contains(text(r), "failed during the call") {
			t.Fatalf("call %d = %q, want the crash's error result", i, text(r))
		}
	}
	if n := tool.Restarts(); n != 4 {
		t.Errorf("restarts = %d, want 4 (one per crashed call)", n)
	}
	tool.Close(context.Background())
	if n := len(pids(t, pidfile)); n != 2*4 {
		t.Errorf("%d pids recorded, want 8 (4 starts of a server and its child: Open's, then one per crash but the last)", n)
	}
	wantGone(t, pidfile)
	// A server that cannot even start is an error at Open naming it.
	if _, err := Open(context.Background(), Config{Command: []string{argv[0], "-c", "import sys; sys.exit(1)"}}); err == nil || !strings.Contains(err.Error(), "connecting") {
		t.Errorf("Open(a server that exits) = %v, want a connecting error", err)
	}
}

// A stdio server that floods one 100 MB frame: the call gets an error result naming the cap, and the next call
// gets a fresh server.
func TestStdioFloodIsCapped(t *testing.T) {
	argv, pidfile := hostile(t, "flood")
	tool, err := Open(context.Background(), Config{Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := call(t, tool, "e1", "poke", `{}`)
		if !r.IsError || !strings.Contains(text(r), fmt.Sprintf("returned more than %d bytes", DefaultMaxMessageBytes)) {
			t.Fatalf("poke = %.300q, want the cap's error result", text(r))
		}
	}
	tool.Close(context.Background())
	wantGone(t, pidfile)
}

// bigServer is a streamable HTTP MCP server on the official Go SDK whose tool "big" answers 100 MB of text, as
// one JSON body (jsonResponse) or one SSE event.
func bigServer(t *testing.T, jsonResponse bool) string {
	t.Helper()
	big := strings.Repeat("x", 100<<20)
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "100 MB of text."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "small", Description: "A normal answer."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// bigCalls is the child process of TestStreamableHTTPHugeAnswerMemory: for each "URL#N", N calls of "big" at
// once, then one of "small"; it prints one line per call, then its peak RSS.
func bigCalls(urls []string) {
	for _, arg := range urls {
		u, calls, _ := strings.Cut(arg, "#")
		n, _ := strconv.Atoi(calls)
		tool, err := Open(context.Background(), Config{URL: u})
		if err != nil {
			fmt.Println("OPEN", err)
			os.Exit(1)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Go(func() {
				r, err := tool.CallEpisode(context.Background(), fmt.Sprint("e", i), "big", json.RawMessage(`{}`))
				mu.Lock()
				defer mu.Unlock()
				fmt.Printf("BIG %v %v %.200q\n", err, r.IsError, text(r))
			})
		}
		wg.Wait()
		r, err := tool.CallEpisode(context.Background(), "e9", "small", json.RawMessage(`{}`))
		fmt.Printf("SMALL %v %v %q\n", err, r.IsError, text(r))
		tool.Close(context.Background())
	}
	// The process's peak RSS (not getrusage's: a child started with vfork inherits its parent's peak).
	st, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Println(line)
		}
	}
}

// A streamable HTTP server answering 100 MB (4 calls at once as JSON, 1 as SSE: the server takes some 10 s to
// encode each) costs the client a bounded amount of memory: its answers are capped while they are read, each
// call gets an error result naming the cap, and the next call works. The client runs in a child process (this
// test binary again), which reports its own peak RSS (VmHWM).
func TestStreamableHTTPHugeAnswerMemory(t *testing.T) {
	if urls := os.Getenv("MCPTOOL_BIG_URLS"); urls != "" {
		bigCalls(strings.Fields(urls))
		return
	}
	urls := bigServer(t, true) + "#4 " + bigServer(t, false) + "#1"
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamableHTTPHugeAnswerMemory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCPTOOL_BIG_URLS="+urls)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	big, small, peakMiB := 0, 0, -1
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmHWM:"):
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			peakMiB = kb / 1024
		case strings.HasPrefix(line, "BIG "):
			big++
			if !strings.HasPrefix(line, "BIG <nil> true ") || !strings.Contains(line, "returned more than") {
				t.Errorf("a 100 MB answer gave %s, want an error result naming the cap", line)
			}
		case strings.HasPrefix(line, "SMALL "):
			small++
			if line != `SMALL <nil> false "fine"` {
				t.Errorf("the call after: %s", line)
			}
		}
	}
	t.Logf("client peak RSS: %d MiB\n%s", peakMiB, out)
	if big != 5 || small != 2 || peakMiB < 0 {
		t.Fatalf("%d big and %d small calls reported, want 5 and 2:\n%s", big, small, out)
	}
	// Four 100 MB answers held whole need 400 MB and more (2.3 GB measured before the cap); capped at 4 MiB each,
	// the client stays small: about 30 MiB measured, 120-130 MiB under the race detector, whose shadow memory
	// multiplies what the process touches.
	limit := 100
	if raceEnabled {
		limit = 250
	}
	if peakMiB > limit {
		t.Errorf("client peak RSS %d MiB, want at most %d MiB", peakMiB, limit)
	}
}
