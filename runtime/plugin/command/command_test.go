package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/plugin"
	"github.com/agentrt/agentrt/runtime/plugin/command"
)

// The tests run real CPython 3.12 for WASI ($AGENTRT_PYTHON_WASM, from scripts/setup.d/60-python-wasi.sh). The
// 26 MB module compiles once per process through the on-disk cache under $AGENTRT_CACHE; each Python run costs
// ~0.1-0.5 s, so the cases share tools and stay few.

var (
	pyOnce  sync.Once
	pyWasm  []byte
	pyTool  *command.Tool
	pyErr   error
	scratch string
)

func cacheDir() string {
	if c := os.Getenv("AGENTRT_CACHE"); c != "" {
		return filepath.Join(c, "wazero-test")
	}
	return filepath.Join(os.TempDir(), "agentrt-command-test-wazero")
}

// python returns the shared tool: the python preset with 64 MiB, a 30 s limit (no test relies on it) and a scratch
// root the test can inspect.
func python(t *testing.T) *command.Tool {
	t.Helper()
	path := os.Getenv("AGENTRT_PYTHON_WASM")
	if path == "" {
		t.Skip("AGENTRT_PYTHON_WASM is not set: run `make setup` and source ~/.cache/agentrt/env.sh")
	}
	pyOnce.Do(func() {
		if pyWasm, pyErr = os.ReadFile(path); pyErr != nil {
			return
		}
		if scratch, pyErr = os.MkdirTemp("", "command-test-scratch-"); pyErr != nil {
			return
		}
		cfg := command.Python()
		cfg.CacheDir, cfg.Timeout, cfg.MaxMemoryMB, cfg.ScratchRoot = cacheDir(), 30*time.Second, 64, scratch
		pyTool, pyErr = command.New(context.Background(), pyWasm, cfg)
	})
	if pyErr != nil {
		t.Fatal(pyErr)
	}
	return pyTool
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pyTool != nil {
		pyTool.Close(context.Background())
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

func codeArgs(code string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"code": code})
	return b
}

func call(t *testing.T, tool *command.Tool, code string) (string, bool) {
	t.Helper()
	r, err := tool.Call(context.Background(), tool.Spec().Name, codeArgs(code))
	if err != nil {
		t.Fatalf("Call(%q): %v", code, err)
	}
	if r.Text == nil {
		t.Fatalf("Call(%q): no text result", code)
	}
	return *r.Text, r.IsError
}

func TestPythonSandbox(t *testing.T) {
	tool := python(t)
	tests := []struct {
		name, code string
		isErr      bool
		want       []string // substrings of the result, in order
	}{
		{"print", `print("hello", 6*7)`, false, []string{"hello 42"}},
		{"stdlib", "import fractions, math, itertools, decimal, statistics, json, re\n" +
			"print(fractions.Fraction(7, 8) + fractions.Fraction(1, 2), math.comb(10, 3), statistics.mean([1, 2, 4]))",
			false, []string{"11/8 120 2.3333333333333335"}},
		{"stderr", `import sys; print("out"); print("warn", file=sys.stderr)`, false, []string{"out\nstderr:\nwarn"}},
		{"no output", `x = 1`, false, []string{"(no output: print() the values you want to see)"}},
		{"exception", `print("before"); 1/0`, true,
			[]string{"Error: the program exited with status 1\nbefore\nstderr:\nTraceback", "ZeroDivisionError: division by zero"}},
		{"syntax error", `print(`, true, []string{"Error: the program exited with status 1", "SyntaxError"}},
		{"exit code", `import sys; sys.exit(3)`, true, []string{"Error: the program exited with status 3"}},
		{"memory", `x = bytearray(1 << 30)`, true, []string{"Error: the program exited with status 1", "MemoryError"}},
		{"host file", `print(open("/etc/passwd").read())`, true,
			[]string{"FileNotFoundError: [Errno 44] No such file or directory: '/etc/passwd'"}},
		{"escape scratch", `print(open("/tmp/../etc/passwd").read())`, true, []string{"PermissionError"}},
		// Links made inside the scratch dir would be followed by the host's path walk: creation is refused.
		{"relative symlink", `import os; os.symlink("../../../../../../etc", "/tmp/e"); print(open("/tmp/e/passwd").read())`,
			true, []string{"PermissionError: [Errno 63] Operation not permitted"}},
		{"absolute symlink", `import os; os.symlink("/etc", "/tmp/e"); print(os.listdir("/tmp/e"))`,
			true, []string{"PermissionError: [Errno 63] Operation not permitted"}},
		{"hard link", `import os; open("/tmp/a", "w").write("x"); os.link("/tmp/a", "/tmp/b")`,
			true, []string{"PermissionError: [Errno 63] Operation not permitted"}},
		{"root listing", `import os; print(os.listdir("/"))`, true, []string{"FileNotFoundError"}},
		{"socket", `import socket; socket.create_connection(("10.0.0.1", 80), timeout=1)`, true,
			[]string{"AttributeError: module '_socket' has no attribute 'getaddrinfo'"}},
		{"subprocess", `import subprocess; subprocess.run(["ls"])`, true, []string{"wasi does not support processes"}},
		{"environment", `import os; print(dict(os.environ))`, false, []string{"{}"}},
		{"scratch", `open("/tmp/a.txt", "w").write("kept"); print(open("/tmp/a.txt").read())`, false, []string{"kept"}},
		{"scratch is per call", `import os; print(os.listdir("/tmp"))`, false, []string{"[]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isErr := call(t, tool, tt.code)
			if isErr != tt.isErr {
				t.Errorf("IsError = %v, want %v; result:\n%s", isErr, tt.isErr, got)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("result lacks %q (in order); result:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("scratch directories left behind: %v", left)
	}
	// The tool still works after every failure above.
	if got, isErr := call(t, tool, "print(sum(range(10)))"); isErr || got != "45" {
		t.Errorf("after the failures: %q (error %v)", got, isErr)
	}
}

// TestEpisodeScratch: the calls of one episode share /tmp, other episodes and episode-less calls do not see it,
// and EndEpisode removes it.
func TestEpisodeScratch(t *testing.T) {
	tool := python(t)
	run := func(episode, code string) string {
		t.Helper()
		r, err := tool.CallEpisode(context.Background(), episode, tool.Spec().Name, codeArgs(code))
		if err != nil || r.Text == nil || r.IsError {
			t.Fatalf("CallEpisode(%q, %q) = %+v, %v", episode, code, r, err)
		}
		return *r.Text
	}
	run("ep-a", `open("/tmp/notes.txt", "w").write("from call 1")`)
	if got := run("ep-a", `print(open("/tmp/notes.txt").read())`); got != "from call 1" {
		t.Errorf("the episode's second call read %q, want the first call's file", got)
	}
	if got := run("ep-b", `import os; print(os.listdir("/tmp"))`); got != "[]" {
		t.Errorf("another episode sees %s in /tmp", got)
	}
	if got, _ := call(t, tool, `import os; print(os.listdir("/tmp"))`); got != "[]" {
		t.Errorf("a call outside any episode sees %s in /tmp", got)
	}
	if left, _ := os.ReadDir(scratch); len(left) != 2 {
		t.Errorf("want the two episodes' directories while they run, have %v", left)
	}
	tool.EndEpisode("ep-a")
	tool.EndEpisode("ep-b")
	tool.EndEpisode("never-called") // no directory: nothing to do
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("scratch directories left after EndEpisode: %v", left)
	}
	if got := run("ep-a", `import os; print(os.listdir("/tmp"))`); got != "[]" {
		t.Errorf("an ended episode's id starts over with an empty /tmp, got %s", got)
	}
	tool.EndEpisode("ep-a")
}

func TestPythonOutputCap(t *testing.T) {
	tool := python(t)
	r, err := tool.Run(context.Background(), codeArgs(`print("x" * 100000)`))
	if err != nil {
		t.Fatal(err)
	}
	limit := tool.Config().MaxOutputBytes
	if r.Outcome != command.OutcomeOK || len(r.Stdout) != limit || r.StdoutDropped != int64(100001-limit) {
		t.Fatalf("outcome %s, %d bytes kept, %d dropped; want %d kept, %d dropped", r.Outcome, len(r.Stdout), r.StdoutDropped, limit, 100001-limit)
	}
	want := fmt.Sprintf("... (%d more bytes not shown: output is capped at %d bytes)", 100001-limit, limit)
	if text := tool.Format(r); !strings.HasSuffix(text, want) {
		t.Errorf("formatted result ends %q, want %q", text[len(text)-100:], want)
	}
}

func TestPythonTimeout(t *testing.T) {
	python(t)
	cfg := command.Python()
	cfg.CacheDir, cfg.Timeout, cfg.Scratch = cacheDir(), 3*time.Second, false
	tool, err := command.New(context.Background(), pyWasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close(context.Background())
	r, err := tool.Run(context.Background(), codeArgs("print('started', flush=True)\nwhile True: pass"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != command.OutcomeTimeout || r.Stdout != "started\n" {
		t.Fatalf("outcome %s, stdout %q, want timeout after 'started'", r.Outcome, r.Stdout)
	}
	want := "Error: execution stopped at the 3s time limit (an endless loop, or too much work: this interpreter is ~10-30x slower than native)\nstarted"
	if got := tool.Format(r); got != want {
		t.Errorf("formatted:\n%s\nwant:\n%s", got, want)
	}
	// The caller's own deadline is a Go error, not a result.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tool.Call(ctx, "execute_python_code", codeArgs("while True: pass")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller deadline: err = %v, want context.DeadlineExceeded", err)
	}
}

// A generic command: arguments through argv and stdin, a derived schema, a read-only mount, concurrent calls.
func TestGenericCommand(t *testing.T) {
	python(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("mounted"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := command.Config{
		Name:          "shout",
		Description:   "Upper-cases its input.",
		Args:          []string{"python", "-I", "-c", "{code}", "{prefix}"},
		Stdin:         "{text}",
		Mounts:        []plugin.Mount{{HostDir: dir, GuestDir: "/data"}},
		CacheDir:      cacheDir(),
		MaxConcurrent: 2,
	}
	tool, err := command.New(context.Background(), pyWasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close(context.Background())
	var schema map[string]any
	if err := json.Unmarshal(tool.Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if req := fmt.Sprint(schema["required"]); req != "[code prefix text]" {
		t.Errorf("derived schema %s", tool.Spec().Parameters)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]any{"prefix": i, "text": "hi",
				"code": "import sys; print(sys.argv[1], sys.stdin.read().upper(), open('/data/data.txt').read())"})
			r, err := tool.Call(context.Background(), "shout", args)
			if err != nil || r.IsError || *r.Text != fmt.Sprintf("%d HI mounted", i) {
				t.Errorf("call %d: %v %+v", i, err, r)
			}
		}()
	}
	wg.Wait()
	// The mount is read-only.
	args, _ := json.Marshal(map[string]any{"prefix": "x", "text": "y", "code": "open('/data/new.txt', 'w')"})
	if r, err := tool.Call(context.Background(), "shout", args); err != nil || !r.IsError || !strings.Contains(*r.Text, "Error") {
		t.Errorf("write to a read-only mount: %v %+v", err, r)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("the guest created a file in a read-only mount")
	}
}

func TestBadArguments(t *testing.T) {
	tool := python(t)
	for _, tt := range []struct{ name, args, want string }{
		{"missing", `{}`, `Error: missing argument "code"`},
		{"null", `{"code": null}`, `Error: missing argument "code"`},
		{"not an object", `[1]`, `Error: arguments must be a JSON object with "code"`},
		{"NUL", `{"code": "print(1)\u0000"}`, "Error: arguments contain a NUL character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tool.Call(context.Background(), "execute_python_code", json.RawMessage(tt.args))
			if err != nil || !r.IsError || !strings.HasPrefix(*r.Text, tt.want) {
				t.Errorf("got %v %q, want an error result starting %q", err, *r.Text, tt.want)
			}
		})
	}
	r, err := tool.Call(context.Background(), "calculator", codeArgs("1"))
	if err != nil || !r.IsError || !strings.Contains(*r.Text, `unknown tool "calculator"`) {
		t.Errorf("unknown name: %v %+v", err, r)
	}
}

func TestNewErrors(t *testing.T) {
	good := command.Config{Name: "t", Args: []string{"prog"}, CacheDir: cacheDir()}
	tests := []struct {
		name string
		wasm []byte
		edit func(*command.Config)
		want string
	}{
		{"bad name", []byte("x"), func(c *command.Config) { c.Name = "a b" }, `tool name "a b"`},
		{"no args", []byte("x"), func(c *command.Config) { c.Args = nil }, "args is empty"},
		{"bad parameters", []byte("x"), func(c *command.Config) { c.Parameters = json.RawMessage(`[`) }, "parameters is not a JSON object"},
		{"bad env", []byte("x"), func(c *command.Config) { c.Env = []string{"NOVALUE"} }, `env "NOVALUE": want KEY=VALUE`},
		{"memory", []byte("x"), func(c *command.Config) { c.MaxMemoryMB = 5000 }, "exceeds the 4096 MiB"},
		{"mount", []byte("x"), func(c *command.Config) { c.Mounts = []plugin.Mount{{HostDir: "/nonexistent-dir", GuestDir: "/d"}} }, "not a directory"},
		{"mount link outside", []byte("x"), func(c *command.Config) { c.Mounts = []plugin.Mount{{HostDir: linkDir(t, "/etc"), GuestDir: "/d"}} }, "points outside the mount (to /etc)"},
		{"mount link up", []byte("x"), func(c *command.Config) {
			c.Mounts = []plugin.Mount{{HostDir: linkDir(t, "../../../../../../etc"), GuestDir: "/d"}}
		}, "points outside the mount"},
		{"mount link dangling", []byte("x"), func(c *command.Config) { c.Mounts = []plugin.Mount{{HostDir: linkDir(t, "nowhere"), GuestDir: "/d"}} }, "does not resolve"},
		{"not wasm", []byte("not wasm"), func(*command.Config) {}, "not a valid WebAssembly module"},
		{"reactor", module("_initialize"), func(*command.Config) {}, "exports no _start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.edit(&c)
			_, err := command.New(context.Background(), tt.wasm, c)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "command: ") {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tool, err := command.New(context.Background(), minimalCommand, command.Config{Name: "t", Args: []string{"t"}, MaxOutputBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close(context.Background())
	for _, tt := range []struct {
		r    command.Result
		want string
	}{
		{command.Result{Outcome: command.OutcomeOK, Stdout: "42\n"}, "42"},
		{command.Result{Outcome: command.OutcomeOK}, "(no output: print() the values you want to see)"},
		{command.Result{Outcome: command.OutcomeOK, Stderr: "w\n"}, "stderr:\nw"},
		{command.Result{Outcome: command.OutcomeExit, ExitCode: 2, Stderr: "bad\n"}, "Error: the program exited with status 2\nbad"},
		{command.Result{Outcome: command.OutcomeExit, ExitCode: 1, Stdout: "a", Stderr: "b"}, "Error: the program exited with status 1\na\nstderr:\nb"},
		{command.Result{Outcome: command.OutcomeCrash, Message: "the program crashed (x)"}, "Error: the program crashed (x)"},
		{command.Result{Outcome: command.OutcomeBadInput, Message: "missing argument \"code\""}, "Error: missing argument \"code\""},
		{command.Result{Outcome: command.OutcomeOK, Stdout: "abcd", StdoutDropped: 6}, "abcd\n... (6 more bytes not shown: output is capped at 4 bytes)"},
	} {
		if got := tool.Format(tt.r); got != tt.want {
			t.Errorf("Format(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	// The minimal command runs: _start returns, exit 0, no output.
	r, err := tool.Run(context.Background(), nil)
	if err != nil || r.Outcome != command.OutcomeOK {
		t.Errorf("minimal command: %v %+v", err, r)
	}
	if err := tool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Run(context.Background(), nil); !errors.Is(err, plugin.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// module hand-assembles (module (func (export NAME)) (memory (export "memory") 1)): a WASI command when NAME is
// _start, a reactor when it is _initialize.
func module(name string) []byte {
	exports := []byte{2, byte(len(name))}
	exports = append(exports, name...)
	exports = append(exports, 0x00, 0x00, 6, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00)
	b := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
		0x03, 0x02, 0x01, 0x00, // function section: func 0 has type 0
		0x05, 0x03, 0x01, 0x00, 0x01, // memory section: min 1 page
		0x07, byte(len(exports))} // export section
	b = append(b, exports...)
	return append(b, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b) // code section: one empty body
}

var minimalCommand = module("_start")

// linkDir returns a temporary directory holding sub/e, a symlink to target.
func linkDir(t *testing.T, target string) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "sub", "e")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A program granted the real clock that sleeps for an hour (poll_oneoff) is stopped at its time limit.
func TestSleepStopsAtTimeLimit(t *testing.T) {
	wasm, err := os.ReadFile("../testdata/wat/sleepcmd.wasm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := command.Config{Name: "sleep", Args: []string{"sleep"}, CacheDir: cacheDir(), Timeout: 300 * time.Millisecond, Clock: true}
	tool, err := command.New(context.Background(), wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close(context.Background())
	r, err := tool.Run(context.Background(), json.RawMessage(`{}`))
	if err != nil || r.Outcome != command.OutcomeTimeout {
		t.Fatalf("sleep: %+v, %v; want outcome %q", r, err, command.OutcomeTimeout)
	}
}
