package plugin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/outbound"
)

// Config configures a [Host]. The zero value is usable: an in-memory compilation cache.
type Config struct {
	// CacheDir is a directory for wazero's on-disk compilation cache, shared by every runtime of the host and
	// kept across processes (a warm cache turns a ~1 s compile of a Go guest into ~0.1 s). Empty: in memory only.
	CacheDir string `toml:"cache_dir"`
}

// DefaultConfig returns the default host configuration.
func DefaultConfig() Config { return Config{} }

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.CacheDir != "" && !filepath.IsAbs(c.CacheDir) {
		if _, err := filepath.Abs(c.CacheDir); err != nil {
			return fmt.Errorf("plugin: cache_dir %q: %w", c.CacheDir, err)
		}
	}
	return nil
}

// Option configures a [Host] with what cannot be serialised.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets the logger that receives guest log lines (agentrt_v1.log) and host warnings.
// The default discards everything.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Defaults of [Limits], applied to zero fields.
const (
	DefaultTimeout            = 2 * time.Second
	DefaultInitTimeout        = 10 * time.Second
	DefaultMaxMemoryMB        = 64  // sandboxed modules
	DefaultTrustedMaxMemoryMB = 512 // built-in modules
	DefaultMaxOutputBytes     = 1 << 20
	DefaultStderrBytes        = 8 << 10
	maxLogBytes               = 4 << 10
)

// Limits bound a module's instances. Zero fields take the defaults above.
type Limits struct {
	// Timeout is the wall-clock limit of one call of a sandboxed module (built-ins are never interrupted).
	Timeout time.Duration `toml:"timeout"`
	// InitTimeout is the limit for instantiating and initialising one sandboxed instance.
	InitTimeout time.Duration `toml:"init_timeout"`
	// MaxMemoryMB caps each instance's linear memory.
	MaxMemoryMB int `toml:"max_memory_mb"`
	// MaxOutputBytes caps one call's output.
	MaxOutputBytes int `toml:"max_output_bytes"`
}

func (l Limits) withDefaults(trusted bool) Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.InitTimeout <= 0 {
		l.InitTimeout = DefaultInitTimeout
	}
	if l.MaxMemoryMB <= 0 {
		l.MaxMemoryMB = DefaultMaxMemoryMB
		if trusted {
			l.MaxMemoryMB = DefaultTrustedMaxMemoryMB
		}
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// Mount is a read-only directory mount: HostDir appears in the guest as GuestDir.
type Mount struct {
	HostDir  string `toml:"host"`
	GuestDir string `toml:"guest"`
}

// ParseMount parses "host_dir:guest_dir" (or "dir", mounted at the same path).
func ParseMount(s string) (Mount, error) {
	host, guest, ok := strings.Cut(s, ":")
	if !ok {
		guest = host
	}
	if host == "" || guest == "" {
		return Mount{}, fmt.Errorf("plugin: mount %q: want \"host_dir:guest_dir\"", s)
	}
	return Mount{HostDir: host, GuestDir: guest}, nil
}

// Grants are the capabilities a module gets beyond pure computation. The zero value grants nothing: no files,
// a fake clock, deterministic randomness.
type Grants struct {
	// Mounts are read-only directory mounts.
	Mounts []Mount `toml:"mounts"`
	// Clock grants the real wall and monotonic clocks and real sleep.
	Clock bool `toml:"clock"`
	// Random grants a cryptographic random source.
	Random bool `toml:"random"`
	// HTTP grants outbound HTTP through agentrt_v1.http_request (nil: every request is denied).
	HTTP *outbound.Grant `toml:"-"`
}

// Spec is what to load.
type Spec struct {
	// Name labels the module in errors and logs: a file name, or "builtin:limiter".
	Name string
	// Wasm is the module binary.
	Wasm []byte
	// Trusted runs the module without per-call interruption (fast; for built-ins only). Untrusted modules are
	// sandboxed: a wall-clock limit per call, memory and output limits.
	Trusted bool
	// Config is the plugin's configuration as JSON (from runtime.toml), or nil.
	Config []byte
	// Tools are the agent's tool specs, given to parsers at init.
	Tools []abi.ToolSpec
	// Limits bound the module; zero fields take defaults.
	Limits Limits
	// Grants are the capabilities granted to the module.
	Grants Grants
	// PoolSize is the number of instances (concurrent calls); 0 means GOMAXPROCS. All are created by Load.
	PoolSize int
}

// Host compiles, instantiates and pools plugin modules. It is safe for concurrent use. Close releases everything.
type Host struct {
	log      *slog.Logger
	cache    wazero.CompilationCache
	cacheDir string

	mu       sync.Mutex
	closed   bool
	runtimes map[rtKey]*rtEntry
	modules  map[*Module]struct{}

	owners      sync.Map // api.Module -> owner, for the log import
	droppedLogs atomic.Int64
}

type rtKey struct {
	trusted bool
	pages   uint32
}

type rtEntry struct {
	r        wazero.Runtime
	compiled map[[32]byte]wazero.CompiledModule
}

// NewHost creates a host.
//
// # Errors
//
// An invalid Config, or a cache directory that cannot be created.
func NewHost(ctx context.Context, cfg Config, opts ...Option) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	h := &Host{log: o.logger, cacheDir: cfg.CacheDir, runtimes: map[rtKey]*rtEntry{}, modules: map[*Module]struct{}{}}
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("plugin: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin: compilation cache %q: %w", cfg.CacheDir, err)
		}
		h.cache = c
	} else {
		h.cache = wazero.NewCompilationCache()
	}
	return h, nil
}

// CacheDir is the on-disk compilation cache directory of the host ("" when the cache is in memory only). Other
// wazero users in this tree (runtime/plugin/command) compile through the same directory.
func (h *Host) CacheDir() string { return h.cacheDir }

// Close closes every module, runtime and the compilation cache. Calls in flight finish first (bounded by ctx).
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	mods := make([]*Module, 0, len(h.modules))
	for m := range h.modules {
		mods = append(mods, m)
	}
	h.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close(ctx))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.runtimes {
		errs = append(errs, e.r.Close(ctx))
	}
	errs = append(errs, h.cache.Close(ctx))
	return errors.Join(errs...)
}

// runtime returns the wazero runtime for a trust level and memory limit, creating it (with WASI and agentrt_v1)
// on first use. Runtimes share the compilation cache. Caller holds h.mu.
func (h *Host) runtime(ctx context.Context, trusted bool, pages uint32) (*rtEntry, error) {
	k := rtKey{trusted, pages}
	if e, ok := h.runtimes[k]; ok {
		return e, nil
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(h.cache).
		WithDebugInfoEnabled(false). // a DWARF stack trace on every trap costs seconds
		WithCloseOnContextDone(!trusted).
		WithMemoryLimitPages(pages)
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("plugin: instantiate WASI: %w", err)
	}
	_, err := r.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.hostLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(abi.FuncLog).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.hostHTTPRequest), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("ptr", "len").
		Export(funcHTTPRequest).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(h.hostHTTPResult), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("ptr", "len").
		Export(funcHTTPResult).
		Instantiate(ctx)
	if err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("plugin: instantiate %s: %w", abi.HostModule, err)
	}
	e := &rtEntry{r: r, compiled: map[[32]byte]wazero.CompiledModule{}}
	h.runtimes[k] = e
	return e, nil
}

// Log budget per call (and per instance initialisation): a guest that logs in a loop would otherwise write
// gigabytes of stderr in seconds. Lines past it are dropped and counted ([Host.DroppedLogLines]).
const (
	MaxLogLinesPerCall = 100
	MaxLogBytesPerCall = 64 << 10
)

// hostLog implements agentrt_v1.log(level, ptr, len).
func (h *Host) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	var o owner
	if v, ok := h.owners.Load(mod); ok {
		o = v.(owner)
	}
	if o.in != nil {
		o.in.logLines++
		if o.in.logLines > MaxLogLinesPerCall || o.in.logBytes >= MaxLogBytesPerCall {
			if h.droppedLogs.Add(1) == 1 || o.in.logLines == MaxLogLinesPerCall+1 {
				h.log.Warn("plugin log budget spent: dropping the call's further lines", "plugin", o.m.name,
					"max_lines", MaxLogLinesPerCall, "max_bytes", MaxLogBytesPerCall)
			}
			return
		}
	}
	truncated := false
	if n > maxLogBytes {
		n, truncated = maxLogBytes, true
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Sprintf("out of memory reading log message [%d, %d)", ptr, uint64(ptr)+uint64(n)))
	}
	msg := string(b)
	if truncated {
		msg += " ...(truncated)"
	}
	lv := slog.LevelInfo
	switch level {
	case abi.LogDebug:
		lv = slog.LevelDebug
	case abi.LogWarn:
		lv = slog.LevelWarn
	case abi.LogError:
		lv = slog.LevelError
	}
	attrs := []any{}
	if o.m != nil {
		o.in.logBytes += len(msg)
		attrs = append(attrs, "plugin", o.m.name, "sha256", o.m.sha[:12])
	}
	h.log.Log(ctx, lv, msg, attrs...)
}

// DroppedLogLines is how many guest log lines were dropped past the per-call budget, over the host's life.
func (h *Host) DroppedLogLines() int64 { return h.droppedLogs.Load() }

// compile compiles (or reuses) a module in a runtime. Caller holds h.mu.
func (h *Host) compile(ctx context.Context, e *rtEntry, sum [32]byte, wasm []byte) (wazero.CompiledModule, error) {
	if cm, ok := e.compiled[sum]; ok {
		return cm, nil
	}
	// Parallel compilation: ~40 % faster for a 3 MB Go guest on 2 cores (reference/go-libs-measured.md).
	cm, err := e.r.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), wasm)
	if err != nil {
		return nil, err
	}
	e.compiled[sum] = cm
	return cm, nil
}

// Load compiles spec.Wasm (once per binary and trust level; the on-disk cache makes it fast across runs), checks
// its imports and exports, creates PoolSize instances (each: _initialize, ABI version check, manifest, init with
// spec.Config), and returns the ready module.
//
// # Errors
//
//   - *LoadError for anything wrong with the module: invalid Wasm, a missing or mistyped export, an unknown
//     import, an ABI version other than 1, an invalid manifest, or an init error envelope (the guest refused
//     its config; wraps a *GuestError);
//   - *TrapError / *TimeoutError if the guest crashes or hangs while starting;
//   - ErrClosed after Close.
func (h *Host) Load(ctx context.Context, spec Spec) (*Module, error) {
	if spec.Name == "" {
		spec.Name = "plugin"
	}
	if len(spec.Wasm) == 0 {
		return nil, &LoadError{Plugin: spec.Name, Reason: "empty module"}
	}
	lim := spec.Limits.withDefaults(spec.Trusted)
	httpClient, err := newHTTPClient(spec)
	if err != nil {
		return nil, err
	}
	pages := uint32(lim.MaxMemoryMB * 16) // 64 KiB pages
	if pages > 65536 {
		pages = 65536
	}
	sum := sha256.Sum256(spec.Wasm)

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	e, err := h.runtime(ctx, spec.Trusted, pages)
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	cm, err := h.compile(ctx, e, sum, spec.Wasm)
	h.mu.Unlock()
	if err != nil {
		return nil, &LoadError{Plugin: spec.Name, Reason: "not a valid WebAssembly module", Err: err}
	}
	if err := checkShape(spec.Name, cm); err != nil {
		return nil, err
	}

	mc := sandboxModuleConfig()
	if spec.Grants.Clock {
		mc = mc.WithSysWalltime().WithSysNanotime() // sleep: per instance, interruptible (module.go)
	}
	if spec.Grants.Random {
		mc = mc.WithRandSource(rand.Reader)
	}
	if len(spec.Grants.Mounts) > 0 {
		fsc := wazero.NewFSConfig()
		for _, mt := range spec.Grants.Mounts {
			st, err := os.Stat(mt.HostDir)
			if err != nil || !st.IsDir() {
				return nil, &LoadError{Plugin: spec.Name, Reason: fmt.Sprintf("mount %q: not a directory", mt.HostDir), Err: err}
			}
			if err := CheckMountLinks(mt.HostDir); err != nil {
				return nil, &LoadError{Plugin: spec.Name, Reason: fmt.Sprintf("mount %q", mt.HostDir), Err: err}
			}
			fsc = fsc.WithReadOnlyDirMount(mt.HostDir, mt.GuestDir)
		}
		mc = mc.WithFSConfig(fsc)
	}

	size := spec.PoolSize
	if size <= 0 {
		size = runtime.GOMAXPROCS(0)
	}
	m := &Module{
		host:    h,
		rt:      e.r,
		cm:      cm,
		mc:      mc,
		name:    spec.Name,
		label:   spec.Name,
		sha:     hex.EncodeToString(sum[:]),
		trusted: spec.Trusted,
		clock:   spec.Grants.Clock,
		lim:     lim,
		http:    httpClient,
		pool:    make(chan *instance, size),
		size:    size,
		closing: make(chan struct{}),
	}
	if err := m.start(ctx, spec); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = m.Close(ctx)
		return nil, ErrClosed
	}
	h.modules[m] = struct{}{}
	h.mu.Unlock()
	return m, nil
}

func (h *Host) forget(m *Module) {
	h.mu.Lock()
	delete(h.modules, m)
	h.mu.Unlock()
}

// sandboxModuleConfig is the module config that grants nothing: no files, args or env, stdout discarded, a fake
// clock and deterministic randomness (wazero's defaults), and the reactor start function.
func sandboxModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.FuncInitialize)
}

// signature renders a function type as "(i32,i32)->i64".
func signature(params, results []api.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(p)
	}
	s += ")->"
	if len(results) == 0 {
		return s + "()"
	}
	for i, r := range results {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(r)
	}
	return s
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

type wantFunc struct {
	name            string
	params, results []api.ValueType
	optional        bool
}

var requiredExports = []wantFunc{
	{name: abi.FuncInitialize, optional: true},
	{name: abi.FuncABIVersion, results: []api.ValueType{i32}},
	{name: abi.FuncAlloc, params: []api.ValueType{i32}, results: []api.ValueType{i32}},
	{name: abi.FuncFree, params: []api.ValueType{i32}},
	{name: abi.FuncDescribe, results: []api.ValueType{i64}},
	{name: abi.FuncInit, params: []api.ValueType{i32, i32}, results: []api.ValueType{i64}},
	{name: abi.FuncCall, params: []api.ValueType{i32, i32}, results: []api.ValueType{i64}},
}

var hostImports = map[string]wantFunc{
	abi.FuncLog:     {name: abi.FuncLog, params: []api.ValueType{i32, i32, i32}},
	funcHTTPRequest: {name: funcHTTPRequest, params: []api.ValueType{i32, i32}, results: []api.ValueType{i32}},
	funcHTTPResult:  {name: funcHTTPResult, params: []api.ValueType{i32, i32}},
}

// checkShape checks the memory export, each required export's signature and every import (plugins/ABI.md 2.3).
func checkShape(name string, cm wazero.CompiledModule) error {
	if _, ok := cm.ExportedMemories()[abi.ExportMemory]; !ok {
		return &LoadError{Plugin: name, Reason: `does not export its memory as "memory"`}
	}
	exports := cm.ExportedFunctions()
	for _, w := range requiredExports {
		d, ok := exports[w.name]
		if !ok {
			if w.optional {
				continue
			}
			return &LoadError{Plugin: name, Reason: fmt.Sprintf("does not export %s%s (every plugin must: see plugins/ABI.md section 2.1)", w.name, signature(w.params, w.results))}
		}
		got, want := signature(d.ParamTypes(), d.ResultTypes()), signature(w.params, w.results)
		if got != want {
			return &LoadError{Plugin: name, Reason: fmt.Sprintf("exports %s with the wrong signature %s: want %s", w.name, got, want)}
		}
	}
	for _, d := range cm.ImportedFunctions() {
		mod, fn, _ := d.Import()
		switch mod {
		case abi.WASIModule:
		case abi.HostModule:
			w, ok := hostImports[fn]
			if !ok {
				return &LoadError{Plugin: name, Reason: fmt.Sprintf("imports %s.%s, which ABI version 1 does not provide (plugins/ABI.md section 3)", mod, fn)}
			}
			if got, want := signature(d.ParamTypes(), d.ResultTypes()), signature(w.params, w.results); got != want {
				return &LoadError{Plugin: name, Reason: fmt.Sprintf("imports %s.%s with the wrong signature %s: want %s", mod, fn, got, want)}
			}
		default:
			if strings.HasPrefix(mod, "agentrt_v") {
				return &LoadError{Plugin: name, Reason: fmt.Sprintf("imports from %s: it was built for another ABI version; this agentrt speaks %s (rebuild it with an SDK for ABI version %d)", mod, abi.HostModule, abi.Version)}
			}
			return &LoadError{Plugin: name, Reason: fmt.Sprintf("imports %s.%s: plugins may import only from %s and %s%s", mod, fn, abi.HostModule, abi.WASIModule, importFix(mod, fn))}
		}
	}
	return nil
}

// importFix names the fix for imports AssemblyScript adds by default: env.abort (failed assertions, out-of-range
// access) and env.trace.
func importFix(mod, fn string) string {
	if mod != "env" {
		return ""
	}
	switch fn {
	case "abort":
		return " (AssemblyScript's abort: build with `make plugin DIR=...`, or asc --use abort=~lib/agentrt/assembly/index/agentrtAbort " +
			"with the SDK on asc's --path as the package agentrt, which logs the message and traps; plugins/sdk/assemblyscript/README.md)"
	case "trace":
		return " (AssemblyScript's trace(): write with the SDK's log() instead)"
	}
	return ""
}

// Live is what a loaded module holds right now: its instances (in the pool or in a call) and their linear memory.
type Live struct {
	Instances   int
	MemoryBytes uint64
}

// Live reports, per module (by the name it was loaded with), the instances alive on this host and their linear
// memory. A broken instance (trap, timeout, memory past its limit) is closed when its call ends, and a closed module
// holds none, so this is how tests see that a hostile plugin's memory went back.
func (h *Host) Live() map[string]Live {
	out := map[string]Live{}
	h.owners.Range(func(k, v any) bool {
		o := v.(owner)
		l := out[o.m.label]
		l.Instances++
		l.MemoryBytes += uint64(o.in.mem.Size())
		out[o.m.label] = l
		return true
	})
	return out
}
