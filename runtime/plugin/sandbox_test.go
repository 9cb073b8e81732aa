package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtime/plugin"
)

// probe loads the misbehaving Go guest, sandboxed, with one instance so that replacement is observable. Its time
// limit is far above any call's real cost, so that a loaded machine cannot turn a quick call into a timeout.
func probe(t *testing.T, h *plugin.Host, grants plugin.Grants) (*plugin.Module, *plugin.Tool) {
	return probeWith(t, h, grants, plugin.Limits{Timeout: 20 * time.Second, MaxMemoryMB: 32})
}

// runawayLimit is the time limit of the tests whose guest runs forever. It bounds the test's duration, and the
// quick calls those tests make after the timeout run under it too, so it is kept well above a starved scheduler's
// pause on a shared 2-core machine (300ms was once not enough for a file read in CI).
const runawayLimit = 2 * time.Second

// probeRunaway is probe with runawayLimit.
func probeRunaway(t *testing.T, h *plugin.Host, grants plugin.Grants) (*plugin.Module, *plugin.Tool) {
	return probeWith(t, h, grants, plugin.Limits{Timeout: runawayLimit, MaxMemoryMB: 32})
}

func probeWith(t *testing.T, h *plugin.Host, grants plugin.Grants, lim plugin.Limits) (*plugin.Module, *plugin.Tool) {
	t.Helper()
	m := load(t, h, plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 1, Grants: grants, Limits: lim})
	tool, err := m.Tool()
	if err != nil {
		t.Fatal(err)
	}
	return m, tool
}

func call(t *testing.T, tool *plugin.Tool, name, args string) (plugin.ToolResult, error) {
	t.Helper()
	return tool.Call(context.Background(), name, []byte(args))
}

// mustEcho proves the module still serves: the next call succeeds.
func mustEcho(t *testing.T, tool *plugin.Tool) {
	t.Helper()
	res, err := call(t, tool, "echo", `{"still":"alive"}`)
	if err != nil || string(res.JSON) != `{"still":"alive"}` {
		t.Fatalf("echo after a failure: %+v, %v", res, err)
	}
}

func TestBadGuestsAreContained(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	// A generous time limit, so that each failure is the one under test (TestTimeoutStopsSpinningGuest has the loop).
	m, tool := probeWith(t, h, plugin.Grants{}, plugin.Limits{Timeout: 20 * time.Second, MaxMemoryMB: 32})
	tests := []struct {
		name    string
		tool    string
		args    string
		check   func(error) bool
		wantMsg string
	}{
		{"memory blow-up", "grow", `{}`, func(err error) bool {
			var te *plugin.TrapError
			return errors.As(err, &te) && strings.Contains(te.Stderr, "out of memory")
		}, "trapped"},
		{"exit", "exit", `{}`, func(err error) bool {
			var te *plugin.TrapError
			return errors.As(err, &te)
		}, "exit_code(3)"},
		{"stack overflow", "stackoverflow", `{}`, func(err error) bool {
			var te *plugin.TrapError
			return errors.As(err, &te)
		}, "trapped"},
		{"huge output", "huge", `{"bytes": 2000000}`, func(err error) bool {
			var le *plugin.LimitError
			return errors.As(err, &le) && le.What == "output" && le.Limit == plugin.DefaultMaxOutputBytes
		}, "exceeds the limit of 1048576 bytes"},
	}
	replaced := m.Replaced()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, err := call(t, tool, tt.tool, tt.args)
			if err == nil || !tt.check(err) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("%s: got %+v, %v (%T); want an error containing %q", tt.tool, res, err, err, tt.wantMsg)
			}
			t.Logf("%s -> %v (%v)", tt.tool, err, time.Since(start).Round(time.Millisecond))
			replaced++
			if got := m.Replaced(); got != replaced {
				t.Fatalf("Replaced() = %d, want %d: the broken instance was not replaced", got, replaced)
			}
			mustEcho(t, tool)
		})
	}
}

func TestTimeoutStopsSpinningGuest(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m, tool := probeRunaway(t, h, plugin.Grants{})
	start := time.Now()
	_, err := call(t, tool, "spin", `{}`)
	var te *plugin.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.Limit != runawayLimit {
		t.Fatalf("spin: %v; want a TimeoutError at %v", err, runawayLimit)
	}
	t.Logf("spin stopped after %v", time.Since(start).Round(time.Millisecond))
	if m.Replaced() != 1 {
		t.Fatalf("Replaced() = %d", m.Replaced())
	}
	mustEcho(t, tool)

	// The caller's own deadline also stops it, and cancellation is reported as such.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tool.Call(ctx, "spin", []byte(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("spin under a 50ms caller deadline: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	if _, err := tool.Call(ctx, "spin", []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("spin cancelled: %v", err)
	}
	mustEcho(t, tool)
}

// A guest granted the clock that sleeps for an hour is stopped by the call's timeout and by its caller's
// cancellation: wazero's own sleep would not wake up.
func TestTimeoutStopsSleepingGuest(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m, tool := probeRunaway(t, h, plugin.Grants{Clock: true})
	if res, err := call(t, tool, "sleep", `{"ms": 1}`); err != nil || res.Text != "slept" {
		t.Fatalf("short sleep: %+v, %v", res, err)
	}
	_, err := call(t, tool, "sleep", `{}`)
	var te *plugin.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.Limit != runawayLimit {
		t.Fatalf("sleep: %v; want a TimeoutError at %v", err, runawayLimit)
	}
	if m.Replaced() != 1 {
		t.Fatalf("Replaced() = %d", m.Replaced())
	}
	mustEcho(t, tool)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	if _, err := tool.Call(ctx, "sleep", []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep cancelled: %v", err)
	}
	mustEcho(t, tool)
}

func TestGuestPanicIsAToolError(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m, tool := probe(t, h, plugin.Grants{})
	res, err := call(t, tool, "panic", `{}`)
	if err != nil || !res.IsError || res.ErrorCode != "internal" || res.Text != "panic: boom" {
		t.Fatalf("panic: %+v, %v; want an internal error result", res, err)
	}
	if m.Replaced() != 0 {
		t.Fatalf("a recovered panic replaced the instance")
	}
	mustEcho(t, tool)
}

func TestGrants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("granted content"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	_, denied := probe(t, h, plugin.Grants{})
	_, granted := probe(t, h, plugin.Grants{Mounts: []plugin.Mount{{HostDir: dir, GuestDir: "/data"}}, Clock: true, Random: true})

	t.Run("files", func(t *testing.T) {
		for _, path := range []string{secret, "/etc/hostname", "/data/data.txt"} {
			res, err := call(t, denied, "readfile", `{"path":"`+path+`"}`)
			if err != nil || !res.IsError || strings.Contains(res.Text, "host secret") || strings.Contains(res.Text, "granted content") {
				t.Errorf("ungranted read of %s: %+v, %v; want an error result", path, res, err)
			}
		}
		res, err := call(t, granted, "readfile", `{"path":"/data/data.txt"}`)
		if err != nil || res.IsError || res.Text != "granted content" {
			t.Errorf("granted read: %+v, %v", res, err)
		}
		res, err = call(t, granted, "readfile", `{"path":"`+secret+`"}`)
		if err != nil || !res.IsError {
			t.Errorf("read outside the mount: %+v, %v; want an error result", res, err)
		}
		res, err = call(t, granted, "readfile", `{"path":"/data/../../`+secret+`"}`)
		if err != nil || !res.IsError {
			t.Errorf("escape from the mount: %+v, %v; want an error result", res, err)
		}
	})
	t.Run("clock", func(t *testing.T) {
		// wazero's fake clock starts at 2022-01-01 and ticks 1 ms per reading.
		fakeEnd := time.Date(2022, 1, 2, 0, 0, 0, 0, time.UTC).UnixNano()
		res, err := call(t, denied, "now", `{}`)
		if n, _ := strconv.ParseInt(res.Text, 10, 64); err != nil || n >= fakeEnd {
			t.Errorf("ungranted clock = %s, %v; want the fake clock (2022-01-01)", res.Text, err)
		}
		res, err = call(t, granted, "now", `{}`)
		if n, _ := strconv.ParseInt(res.Text, 10, 64); err != nil || n < time.Now().Add(-time.Hour).UnixNano() {
			t.Errorf("granted clock = %s, %v; want the real time", res.Text, err)
		}
	})
	t.Run("random", func(t *testing.T) {
		a, _ := call(t, denied, "random", `{}`)
		_, other := probe(t, h, plugin.Grants{})
		b, _ := call(t, other, "random", `{}`)
		if a.Text == "" || a.Text != b.Text {
			t.Errorf("ungranted randomness differs between fresh instances (%s, %s); want deterministic", a.Text, b.Text)
		}
		c, _ := call(t, granted, "random", `{}`)
		if c.Text == a.Text {
			t.Errorf("granted randomness = the deterministic stream %s", c.Text)
		}
	})
	if _, err := h.Load(context.Background(), plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 1,
		Grants: plugin.Grants{Mounts: []plugin.Mount{{HostDir: filepath.Join(dir, "nope"), GuestDir: "/x"}}}}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("mount of a missing directory: %v", err)
	}
}

func TestConfigReachesGuest(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 2, Config: []byte(`{"greeting":"hi","n":[1,2]}`)})
	tool, _ := m.Tool()
	for i := 0; i < 2; i++ { // both instances got it
		res, err := call(t, tool, "config", `{}`)
		if err != nil || string(res.JSON) != `{"greeting":"hi","n":[1,2]}` {
			t.Fatalf("config = %+v, %v", res, err)
		}
	}
	_, err := h.Load(context.Background(), plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 1, Config: []byte(`{"refuse":"no thanks"}`)})
	var le *plugin.LoadError
	// The plugin's message appears once: the load error quotes the refusal instead of wrapping it a second time.
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "the plugin probe refused its configuration (bad_config): refusing config: no thanks") ||
		strings.Count(err.Error(), "no thanks") != 1 {
		t.Fatalf("refused config: %v", err)
	}
}

// TestConcurrentTimeoutsAndCalls mixes runaway calls and good calls on a small sandboxed pool: every runaway call
// times out, every good call succeeds, and the pool ends full of working instances.
func TestConcurrentTimeoutsAndCalls(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	m := load(t, h, plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 2,
		Limits: plugin.Limits{Timeout: runawayLimit}})
	tool, _ := m.Tool()
	ctx := context.Background()
	errs := make(chan error, 16)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 3; i++ {
				if (g+i)%3 == 0 {
					if _, err := tool.Call(ctx, "spin", nil); !errors.Is(err, context.DeadlineExceeded) {
						errs <- err
					}
					continue
				}
				res, err := tool.Call(ctx, "echo", []byte(`{"g":`+strconv.Itoa(g)+`}`))
				if err != nil || string(res.JSON) != `{"g":`+strconv.Itoa(g)+`}` {
					errs <- err
				}
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Errorf("unexpected result: %v", err)
	}
	if m.Replaced() != 4 {
		t.Errorf("Replaced() = %d, want 4 (one per runaway call)", m.Replaced())
	}
	mustEcho(t, tool)
	mustEcho(t, tool)
}

// A call's timeout names the runtime.toml keys that raise it; a timeout during start-up says that limit is fixed
// (no key changes it: naming one that does not exist sent users looking for [plugins.<name>]).
func TestTimeoutErrorNamesItsLimit(t *testing.T) {
	for fn, key := range map[string]string{"_initialize": "fixed limit", "agentrt_init": "fixed limit", "agentrt_call": "agent.tools.timeout"} {
		msg := (&plugin.TimeoutError{Plugin: "p", Func: fn, Limit: time.Second}).Error()
		if !strings.Contains(msg, key) {
			t.Errorf("%s: %q lacks %q", fn, msg, key)
		}
	}
}
