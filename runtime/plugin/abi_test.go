package plugin_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/runtime/plugin"
)

// TestLoadRejects checks the load-time errors: each ABI violation gets its own clear message.
func TestLoadRejects(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	tests := []struct {
		file string
		want string
	}{
		{"wat/abi2.wasm", "was built for ABI version 2; this agentrt speaks version 1"},
		{"wat/noexport.wasm", "does not export agentrt_call(i32,i32)->i64"},
		{"wat/wrongsig.wasm", "exports agentrt_call with the wrong signature (i32,i32)->i32: want (i32,i32)->i64"},
		{"wat/importv2.wasm", "imports from agentrt_v2: it was built for another ABI version; this agentrt speaks agentrt_v1"},
		{"wat/importenv.wasm", "imports env.abort: plugins may import only from agentrt_v1 and wasi_snapshot_preview1 (AssemblyScript's abort: build with `make plugin DIR=...`, or asc --use abort=~lib/agentrt/assembly/index/agentrtAbort"},
		{"wat/command.wasm", "it exports _start, not _initialize: it was built as a WASI command, and plugins are reactors (plugins/ABI.md section 2): build it with Go's -buildmode=c-shared, clang's -mexec-model=reactor or asc's --exportStart _initialize"},
		{"wat/badkind.wasm", `manifest kind "widget" is not one of parser, tool, hook`},
		{"wat/nomemory.wasm", `does not export its memory as "memory"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := h.Load(context.Background(), plugin.Spec{Name: tt.file, Wasm: wasm(t, tt.file), PoolSize: 1})
			var le *plugin.LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.file) {
				t.Fatalf("Load: %v; want a LoadError naming the file and containing %q", err, tt.want)
			}
		})
	}
	_, err := h.Load(context.Background(), plugin.Spec{Name: "junk.wasm", Wasm: []byte("not wasm at all"), PoolSize: 1})
	if le := (*plugin.LoadError)(nil); !errors.As(err, &le) || !strings.Contains(err.Error(), "not a valid WebAssembly module") {
		t.Fatalf("junk: %v", err)
	}
	_, err = h.Load(context.Background(), plugin.Spec{Name: "startpanic.wasm", Wasm: wasm(t, "wat/startpanic.wasm"), PoolSize: 1})
	if te := (*plugin.TrapError)(nil); !errors.As(err, &te) || te.Func != "_initialize" {
		t.Fatalf("a guest that traps in _initialize: %v; want a TrapError in _initialize", err)
	}
	// The host still works after all of that.
	m := load(t, h, plugin.Spec{Name: "noop.wasm", Wasm: wasm(t, "wat/noop.wasm"), PoolSize: 1})
	tool, _ := m.Tool()
	if res, err := tool.Call(context.Background(), "noop", nil); err != nil || res.Text != "ok" {
		t.Fatalf("noop: %+v, %v", res, err)
	}
}

// TestBrokenCallsAreReplaced checks the run-time ABI violations: each is a typed error, the instance is
// replaced, and the module keeps serving (these guests break on every call, so the next call fails the same way
// on a fresh instance).
func TestBrokenCallsAreReplaced(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	tests := []struct {
		file    string
		check   func(error) bool
		wantMsg string
	}{
		{"wat/trap.wasm", func(err error) bool { var e *plugin.TrapError; return errors.As(err, &e) }, "agentrt_call trapped: wasm error: unreachable"},
		{"wat/badjson.wasm", func(err error) bool { var e *plugin.ProtocolError; return errors.As(err, &e) }, "output is not a JSON object"},
		{"wat/bothkeys.wasm", func(err error) bool { var e *plugin.ProtocolError; return errors.As(err, &e) }, "broke the ABI"},
		{"wat/oob.wasm", func(err error) bool { var e *plugin.ProtocolError; return errors.As(err, &e) }, "out of memory bounds"},
		{"wat/empty.wasm", func(err error) bool { var e *plugin.ProtocolError; return errors.As(err, &e) }, "empty output"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m := load(t, h, plugin.Spec{Name: tt.file, Wasm: wasm(t, tt.file), PoolSize: 1})
			tool, _ := m.Tool()
			for i := 1; i <= 2; i++ {
				_, err := tool.Call(context.Background(), "noop", nil)
				if err == nil || !tt.check(err) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("call %d: %v (%T); want an error containing %q", i, err, err, tt.wantMsg)
				}
				if m.Replaced() != i {
					t.Fatalf("call %d: Replaced() = %d", i, m.Replaced())
				}
			}
		})
	}
}

type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func TestGuestLog(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	h := newHost(t, plugin.WithLogger(slog.New(rec)))
	m := load(t, h, plugin.Spec{Name: "log.wasm", Wasm: wasm(t, "wat/log.wasm"), PoolSize: 1})
	tool, _ := m.Tool()
	if _, err := tool.Call(context.Background(), "noop", nil); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 1 || rec.recs[0].Message != "hello from wat" || rec.recs[0].Level != slog.LevelWarn {
		t.Fatalf("log records %+v", rec.recs)
	}
	attrs := map[string]string{}
	rec.recs[0].Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	if attrs["plugin"] != "wat_tool" || attrs["sha256"] != m.SHA256()[:12] {
		t.Fatalf("log attrs %v", attrs)
	}
}

// FuzzLogImport hands agentrt_v1.log arbitrary (level, ptr, len): each call must end as a log line or a trap,
// never a host panic, and the module must keep serving.
func FuzzLogImport(f *testing.F) {
	h := newHost(f, plugin.WithLogger(slog.New(slog.DiscardHandler)))
	m := load(f, h, plugin.Spec{Name: "logfuzz.wasm", Wasm: wasm(f, "wat/logfuzz.wasm"), PoolSize: 1})
	for _, s := range [][3]uint32{{1, 4096, 12}, {0, 0xFFFFFFFF, 0xFFFFFFFF}, {3, 131000, 100}, {9, 0, 0}, {2, 131071, 1}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, level, ptr, n uint32) {
		in := binary.LittleEndian.AppendUint32(nil, level)
		in = binary.LittleEndian.AppendUint32(in, ptr)
		in = binary.LittleEndian.AppendUint32(in, n)
		out, err := m.CallRaw(context.Background(), in)
		if err != nil {
			var te *plugin.TrapError
			if !errors.As(err, &te) {
				t.Fatalf("log(%d, %d, %d): %v (%T); want a TrapError", level, ptr, n, err, err)
			}
			return
		}
		if !bytes.Equal(out, []byte(`{"ok":{"text":"ok"}}`)) {
			t.Fatalf("output %s", out)
		}
	})
}

// TestGoCommandModuleFix builds a real Go plugin the way a newcomer might, without -buildmode=c-shared (a WASI
// command, whose Go runtime never starts when the host calls an export), and checks the load error names the flag.
func TestGoCommandModuleFix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "probe.wasm")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "./testdata/go/probe")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newHost(t).Load(context.Background(), plugin.Spec{Name: "probe.wasm", Wasm: bin, PoolSize: 1})
	var le *plugin.LoadError
	var te *plugin.TrapError
	want := "it is a Go program built as a WASI command, whose runtime never starts in a plugin: build it as a reactor with -buildmode=c-shared"
	if !errors.As(err, &le) || !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Load of a Go command module: %v; want a LoadError (wrapping the TrapError) saying %q", err, want)
	}
}
