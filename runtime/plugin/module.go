package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
	"github.com/agentrt/agentrt/runtime/outbound"
)

// Module is a loaded plugin: a compiled module and a pool of initialised instances, one call in flight per
// instance. It is safe for concurrent use. Use the typed facades [Module.Parser], [Module.Tool] and [Module.Hook].
type Module struct {
	host    *Host
	rt      wazero.Runtime
	cm      wazero.CompiledModule
	mc      wazero.ModuleConfig
	name    string // the manifest name once known; the spec name before
	label   string // the spec name
	sha     string
	trusted bool
	clock   bool // granted clock: instances get an interruptible sleep
	lim     Limits
	http    *outbound.Client // granted outbound HTTP (nil: none)

	manifest abi.Manifest
	specs    []abi.ToolSpec // tool kind: the effective tool list (manifest, or init's replacement)
	events   map[string]bool
	roles    map[string]bool // message_added only for these roles (nil: every message)
	initIn   []byte          // the agentrt_init input, for replacement instances

	pool     chan *instance // nil entries are slots whose instance must be (re)created
	size     int
	closing  chan struct{}
	closeMu  sync.Mutex
	isClosed bool

	statsMu  sync.Mutex
	replaced int
}

// instance is one module instance with its cached exports.
type instance struct {
	mod    api.Module
	mem    api.Memory
	alloc  api.Function
	free   api.Function
	call   api.Function
	init   api.Function
	stderr *boundedBuffer
	sleep  *sleeper // nil without the clock grant
	stack  [2]uint64
	// logLines and logBytes count this call's log lines (reset per call; an instance serves one call at a time).
	logLines, logBytes int
}

// SHA256 is the hex sha256 of the module binary; trajectories record it.
func (m *Module) SHA256() string { return m.sha }

// Name is the plugin's name from its manifest.
func (m *Module) Name() string { return m.name }

// Kind is the plugin's kind: abi.KindParser, abi.KindTool or abi.KindHook.
func (m *Module) Kind() string { return m.manifest.Kind }

// Manifest is what the plugin declared about itself (a copy).
func (m *Module) Manifest() abi.Manifest {
	mf := m.manifest
	mf.Tools = append([]abi.ToolSpec(nil), mf.Tools...)
	mf.Events = append([]string(nil), mf.Events...)
	mf.MessageRoles = append([]string(nil), mf.MessageRoles...)
	return mf
}

// Trusted reports whether the module runs without per-call interruption.
func (m *Module) Trusted() bool { return m.trusted }

// PoolSize is the number of instances, the most calls that run at once.
func (m *Module) PoolSize() int { return m.size }

// Replaced is how many broken instances (trap, timeout, limit, protocol error) have been replaced so far.
func (m *Module) Replaced() int {
	m.statsMu.Lock()
	defer m.statsMu.Unlock()
	return m.replaced
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_\-.]{1,64}$`)
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_\-]{1,64}$`)

// start creates the first instance (validating ABI version, manifest and init), then the rest of the pool.
func (m *Module) start(ctx context.Context, spec Spec) error {
	in, err := m.instantiate(ctx)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		m.closeInstance(ctx, in)
		return err
	}
	// ABI version.
	ver := in.mod.ExportedFunction(abi.FuncABIVersion)
	res, err := ver.Call(ctx)
	if err != nil {
		err = m.callError(abi.FuncABIVersion, in, err)
		if fix := commandFix(m.cm, err); fix != "" {
			err = &LoadError{Plugin: m.label, Reason: fix, Err: err}
		}
		return fail(err)
	}
	if v := int32(res[0]); v != abi.Version {
		return fail(&LoadError{Plugin: m.label, Reason: fmt.Sprintf("was built for ABI version %d; this agentrt speaks version %d: rebuild it with an SDK for ABI version %d (or use an agentrt that speaks version %d)", v, abi.Version, abi.Version, v)})
	}
	// Manifest.
	desc := in.mod.ExportedFunction(abi.FuncDescribe)
	res, err = desc.Call(ctx)
	if err != nil {
		return fail(m.callError(abi.FuncDescribe, in, err))
	}
	out, err := m.readOutput(abi.FuncDescribe, in, res[0])
	if err != nil {
		return fail(&LoadError{Plugin: m.label, Reason: "bad manifest", Err: err})
	}
	if err := m.setManifest(out); err != nil {
		return fail(err)
	}
	// Init.
	initIn, err := json.Marshal(abi.InitInput{Config: abi.RawJSON(spec.Config), Tools: initTools(m.manifest.Kind, spec.Tools)})
	if err != nil {
		return fail(&LoadError{Plugin: m.label, Reason: "config is not valid JSON", Err: err})
	}
	m.initIn = initIn
	okv, err := m.initInstance(ctx, in)
	if err != nil {
		return fail(err)
	}
	if m.manifest.Kind == abi.KindTool {
		var ir abi.InitResult
		if err := json.Unmarshal(okv, &ir); err != nil {
			return fail(&LoadError{Plugin: m.label, Reason: "agentrt_init returned an ok value that is not an object", Err: err})
		}
		m.specs = m.manifest.Tools
		if ir.Tools != nil {
			if err := checkTools(m.label, ir.Tools); err != nil {
				return fail(err)
			}
			m.specs = ir.Tools
		}
	}
	m.owned(in)
	m.pool <- in
	// The rest of the pool, GOMAXPROCS at a time. A failed slot still gets its (empty) pool entry, so that Close
	// finds all m.size entries.
	var wg sync.WaitGroup
	errs := make([]error, m.size-1)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := 1; i < m.size; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			in, err := m.newInstance(ctx)
			if err != nil {
				errs[i-1] = err
				m.pool <- nil
				return
			}
			m.pool <- in
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = m.Close(ctx)
		return err
	}
	return nil
}

// goCommandTrap is what a Go module built without -buildmode=c-shared writes when an export runs before main.
const goCommandTrap = "wasmexport function called before runtime initialization"

// commandFix names the fix when the first call into a module failed because it was built as a WASI command (it
// exports _start, not _initialize), so its runtime never started: "" when that is not the case.
func commandFix(cm wazero.CompiledModule, err error) string {
	exports := cm.ExportedFunctions()
	_, start := exports["_start"]
	_, reactor := exports[abi.FuncInitialize]
	var te *TrapError
	switch {
	case errors.As(err, &te) && strings.Contains(te.Stderr, goCommandTrap):
		return "it is a Go program built as a WASI command, whose runtime never starts in a plugin: " +
			"build it as a reactor with -buildmode=c-shared (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o x.wasm .; plugins/sdk/go/README.md)"
	case start && !reactor:
		return "it exports _start, not _initialize: it was built as a WASI command, and plugins are reactors " +
			"(plugins/ABI.md section 2): build it with Go's -buildmode=c-shared, clang's -mexec-model=reactor or asc's --exportStart _initialize"
	}
	return ""
}

func initTools(kind string, tools []abi.ToolSpec) []abi.ToolSpec {
	if kind != abi.KindParser || tools == nil {
		return []abi.ToolSpec{}
	}
	return tools
}

func (m *Module) setManifest(out []byte) error {
	var mf abi.Manifest
	if err := json.Unmarshal(out, &mf); err != nil {
		return &LoadError{Plugin: m.label, Reason: "agentrt_describe returned invalid JSON", Err: err}
	}
	if mf.ABIVersion != abi.Version {
		return &LoadError{Plugin: m.label, Reason: fmt.Sprintf("manifest says abi_version %d; this agentrt speaks version %d", mf.ABIVersion, abi.Version)}
	}
	if !nameRE.MatchString(mf.Name) {
		return &LoadError{Plugin: m.label, Reason: fmt.Sprintf("manifest name %q is invalid: want 1-64 of [a-zA-Z0-9_-.]", mf.Name)}
	}
	switch mf.Kind {
	case abi.KindParser:
	case abi.KindTool:
		if len(mf.Tools) == 0 {
			return &LoadError{Plugin: m.label, Reason: "tool plugin declares no tools in its manifest"}
		}
		if err := checkTools(m.label, mf.Tools); err != nil {
			return err
		}
	case abi.KindHook:
		if len(mf.Events) == 0 {
			return &LoadError{Plugin: m.label, Reason: "hook plugin subscribes to no events"}
		}
		m.events = map[string]bool{}
		for _, e := range mf.Events {
			if !abi.KnownEvent(e) {
				m.host.log.Warn("plugin subscribes to an event this agentrt never sends", "plugin", mf.Name, "event", e)
			}
			m.events[e] = true
		}
		if mf.MessageRoles != nil {
			if len(mf.MessageRoles) == 0 {
				return &LoadError{Plugin: m.label, Reason: "message_roles lists no role (leave it out for every message)"}
			}
			m.roles = map[string]bool{}
			for _, r := range mf.MessageRoles {
				switch r {
				case abi.RoleSystem, abi.RoleUser, abi.RoleAssistant, abi.RoleTool:
					m.roles[r] = true
				default:
					return &LoadError{Plugin: m.label, Reason: fmt.Sprintf("message_roles: %q is not one of system, user, assistant, tool", r)}
				}
			}
		}
	default:
		return &LoadError{Plugin: m.label, Reason: fmt.Sprintf("manifest kind %q is not one of parser, tool, hook", mf.Kind)}
	}
	m.manifest = mf
	m.name = mf.Name
	return nil
}

func checkTools(label string, tools []abi.ToolSpec) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if !toolNameRE.MatchString(t.Name) {
			return &LoadError{Plugin: label, Reason: fmt.Sprintf("tool name %q is invalid: want 1-64 of [a-zA-Z0-9_-]", t.Name)}
		}
		if seen[t.Name] {
			return &LoadError{Plugin: label, Reason: fmt.Sprintf("tool %q declared twice", t.Name)}
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 && !fastjson.IsObject(t.Parameters) {
			return &LoadError{Plugin: label, Reason: fmt.Sprintf("tool %q: parameters is not a JSON object (a JSON Schema)", t.Name)}
		}
	}
	return nil
}

// instantiate creates one instance and runs _initialize.
func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	if !m.trusted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.lim.InitTimeout)
		defer cancel()
	}
	stderr := &boundedBuffer{limit: DefaultStderrBytes}
	mc := m.mc.WithStderr(stderr)
	var sl *sleeper
	if m.clock {
		sl = &sleeper{}
		sl.set(ctx)
		mc = mc.WithNanosleep(sl.sleep)
	}
	mod, err := m.rt.InstantiateModule(ctx, m.cm, mc)
	if err != nil {
		var ee *sys.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeDeadlineExceeded {
			return nil, &TimeoutError{Plugin: m.name, Func: abi.FuncInitialize, Limit: m.lim.InitTimeout}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugin: %s: instantiate: %w", m.name, ctx.Err())
		}
		return nil, &TrapError{Plugin: m.name, Func: abi.FuncInitialize, Stderr: stderr.String(), Err: err}
	}
	return &instance{
		mod:    mod,
		mem:    mod.Memory(),
		alloc:  mod.ExportedFunction(abi.FuncAlloc),
		free:   mod.ExportedFunction(abi.FuncFree),
		call:   mod.ExportedFunction(abi.FuncCall),
		init:   mod.ExportedFunction(abi.FuncInit),
		stderr: stderr,
		sleep:  sl,
	}, nil
}

// newInstance creates and initialises a replacement instance.
func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	in, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := m.initInstance(ctx, in); err != nil {
		m.closeInstance(ctx, in)
		return nil, err
	}
	m.owned(in)
	return in, nil
}

// initInstance calls agentrt_init and returns a copy of its ok value.
func (m *Module) initInstance(ctx context.Context, in *instance) ([]byte, error) {
	if !m.trusted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.lim.InitTimeout)
		defer cancel()
	}
	out, err := m.invoke(ctx, in, abi.FuncInit, in.init, m.initIn)
	if err != nil {
		return nil, err
	}
	okv, gerr, err := m.envelope(abi.FuncInit, out)
	if err != nil {
		return nil, err
	}
	if gerr != nil {
		return nil, &LoadError{Plugin: m.label, Reason: fmt.Sprintf("the plugin %s refused its configuration (%s): %s", m.name, gerr.Code, gerr.Message), Err: gerr}
	}
	if err := fastjson.Check(okv); err != nil {
		return nil, &ProtocolError{Plugin: m.name, Func: abi.FuncInit, Msg: "ok value is not valid JSON: " + err.Error()}
	}
	return append([]byte(nil), okv...), nil
}

func (m *Module) owned(in *instance) { m.host.owners.Store(in.mod, owner{m, in}) }

// owner is what the log import finds from its api.Module.
type owner struct {
	m  *Module
	in *instance
}

func (m *Module) closeInstance(ctx context.Context, in *instance) {
	m.host.owners.Delete(in.mod)
	pendingHTTP.Delete(in.mod)
	_ = in.mod.Close(context.WithoutCancel(ctx))
}

// acquire takes an instance from the pool, creating one in an empty slot.
func (m *Module) acquire(ctx context.Context) (*instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case in := <-m.pool:
		if in != nil {
			return in, nil
		}
		in, err := m.newInstance(ctx)
		if err != nil {
			m.pool <- nil
			return nil, err
		}
		return in, nil
	case <-m.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release returns an instance to the pool; a broken one is closed and its slot left for a fresh instance.
func (m *Module) release(ctx context.Context, in *instance, broken bool) {
	if broken || in.mod.IsClosed() {
		m.closeInstance(ctx, in)
		m.statsMu.Lock()
		m.replaced++
		m.statsMu.Unlock()
		m.pool <- nil
		return
	}
	m.pool <- in
}

// Close waits for calls in flight (bounded by ctx) and closes every instance. Later calls return ErrClosed.
func (m *Module) Close(ctx context.Context) error {
	m.closeMu.Lock()
	if m.isClosed {
		m.closeMu.Unlock()
		return nil
	}
	m.isClosed = true
	close(m.closing)
	m.closeMu.Unlock()
	defer m.host.forget(m)
	for i := 0; i < m.size; i++ {
		select {
		case in := <-m.pool:
			if in != nil {
				m.closeInstance(ctx, in)
			}
		case <-ctx.Done():
			return fmt.Errorf("plugin: close %s: %d calls still in flight: %w", m.name, m.size-i, ctx.Err())
		}
	}
	return nil
}

// run runs one call of agentrt_call with input and hands the raw output (a view into guest memory, valid only
// inside use) to use. Any failure other than an error envelope replaces the instance.
func (m *Module) run(ctx context.Context, input []byte, use func(out []byte) error) error {
	in, err := m.acquire(ctx)
	if err != nil {
		return err
	}
	cctx := ctx
	if !m.trusted {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, m.lim.Timeout)
		defer cancel()
	}
	out, err := m.invoke(cctx, in, abi.FuncCall, in.call, input)
	if err == nil {
		err = use(out)
	}
	var gerr *GuestError
	m.release(ctx, in, err != nil && !errors.As(err, &gerr))
	return err
}

// invoke writes input into the guest (agentrt_alloc), calls fn(ptr, len) and returns a view of the output.
func (m *Module) invoke(ctx context.Context, in *instance, name string, fn api.Function, input []byte) ([]byte, error) {
	in.stderr.Reset()
	in.logLines, in.logBytes = 0, 0
	if in.sleep != nil {
		in.sleep.set(ctx)
	}
	stk := in.stack[:]
	stk[0] = uint64(len(input))
	if err := in.alloc.CallWithStack(ctx, stk[:1]); err != nil {
		return nil, m.callError(abi.FuncAlloc, in, err)
	}
	ptr := uint32(stk[0])
	if ptr == 0 && len(input) > 0 {
		return nil, &LimitError{Plugin: m.name, Func: abi.FuncAlloc, What: "memory", Limit: int64(m.lim.MaxMemoryMB) << 20, Got: 0}
	}
	if !in.mem.Write(ptr, input) {
		return nil, &ProtocolError{Plugin: m.name, Func: abi.FuncAlloc, Msg: fmt.Sprintf("returned [%d, %d), outside its %d-byte memory", ptr, uint64(ptr)+uint64(len(input)), in.mem.Size())}
	}
	stk[0], stk[1] = uint64(ptr), uint64(len(input))
	if err := fn.CallWithStack(ctx, stk); err != nil {
		return nil, m.callError(name, in, err)
	}
	return m.readOutput(name, in, stk[0])
}

func (m *Module) readOutput(name string, in *instance, packed uint64) ([]byte, error) {
	p := abi.Packed(packed)
	if p.Len() == 0 {
		return nil, &ProtocolError{Plugin: m.name, Func: name, Msg: "empty output"}
	}
	if int64(p.Len()) > int64(m.lim.MaxOutputBytes) {
		return nil, &LimitError{Plugin: m.name, Func: name, What: "output", Limit: int64(m.lim.MaxOutputBytes), Got: int64(p.Len())}
	}
	out, ok := in.mem.Read(p.Ptr(), p.Len())
	if !ok {
		return nil, &ProtocolError{Plugin: m.name, Func: name, Msg: fmt.Sprintf("output [%d, %d) out of memory bounds (%d bytes)", p.Ptr(), uint64(p.Ptr())+uint64(p.Len()), in.mem.Size())}
	}
	return out, nil
}

// callError classifies an error from a guest function.
func (m *Module) callError(fn string, in *instance, err error) error {
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			limit := m.lim.Timeout
			if fn == abi.FuncInit {
				limit = m.lim.InitTimeout
			}
			return &TimeoutError{Plugin: m.name, Func: fn, Limit: limit}
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("plugin: %s: %s: %w", m.name, fn, context.Canceled)
		}
	}
	return &TrapError{Plugin: m.name, Func: fn, Stderr: in.stderr.String(), Err: err}
}

// envelope splits an output envelope into its ok value (a view) or its error. For the common shape
// {"ok":VALUE} it does not scan VALUE: the caller must validate it completely (wholeObject, fastjson.Check or
// encoding/json), which each decoder does anyway while decoding.
func (m *Module) envelope(fn string, out []byte) (okv []byte, gerr *GuestError, err error) {
	if len(out) > 7 && string(out[:6]) == `{"ok":` && out[len(out)-1] == '}' {
		return out[6 : len(out)-1], nil, nil
	}
	var errv []byte
	end, perr := fastjson.EachEnd(out, func(k, v []byte) bool {
		switch {
		case fastjson.KeyEquals(k, "ok"):
			okv = v
		case fastjson.KeyEquals(k, "error"):
			errv = v
		}
		return true
	})
	if perr == nil && fastjson.SkipWS(out, end) != len(out) {
		perr = &fastjson.SyntaxError{Offset: end, Msg: "unexpected data after the object"}
	}
	switch {
	case perr != nil:
		return nil, nil, &ProtocolError{Plugin: m.name, Func: fn, Msg: "output is not a JSON object: " + perr.Error() + ": " + snippet(out)}
	case okv != nil && errv != nil:
		return nil, nil, &ProtocolError{Plugin: m.name, Func: fn, Msg: `output has both "ok" and "error"`}
	case errv != nil:
		code, _ := fastjson.String(get(errv, "code"))
		msg, _ := fastjson.String(get(errv, "message"))
		if code == "" && msg == "" {
			return nil, nil, &ProtocolError{Plugin: m.name, Func: fn, Msg: `"error" needs a code or a message: ` + snippet(out)}
		}
		return nil, &GuestError{Plugin: m.name, Func: fn, Code: code, Message: msg}, nil
	case okv == nil:
		return nil, nil, &ProtocolError{Plugin: m.name, Func: fn, Msg: `output has neither "ok" nor "error": ` + snippet(out)}
	}
	return okv, nil, nil
}

// wholeObject is fastjson.Each that also rejects anything after the object (unless fn stopped early).
func wholeObject(b []byte, fn func(k, v []byte) bool) error {
	stopped := false
	end, err := fastjson.EachEnd(b, func(k, v []byte) bool {
		if !fn(k, v) {
			stopped = true
			return false
		}
		return true
	})
	if err == nil && !stopped && fastjson.SkipWS(b, end) != len(b) {
		err = &fastjson.SyntaxError{Offset: end, Msg: "unexpected data after the object"}
	}
	return err
}

// get returns the raw member key of obj, or nil.
func get(obj []byte, key string) []byte {
	v, err := fastjson.Get(obj, key)
	if err != nil {
		return nil
	}
	return v
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q...", b[:200])
	}
	return fmt.Sprintf("%q", b)
}

// CallRaw runs one agentrt_call with a raw input and returns a copy of the output envelope, whatever the kind.
// It is what `agentrt plugin test` uses; the agent loop uses the typed facades.
//
// # Errors
//
// Like the facades, except that error envelopes are returned as output, not as errors.
func (m *Module) CallRaw(ctx context.Context, input []byte) ([]byte, error) {
	var res []byte
	err := m.run(ctx, input, func(out []byte) error {
		if _, _, err := m.envelope(abi.FuncCall, out); err != nil {
			return err
		}
		if err := fastjson.Check(out); err != nil {
			return &ProtocolError{Plugin: m.name, Func: abi.FuncCall, Msg: "output is not valid JSON: " + err.Error()}
		}
		res = append([]byte(nil), out...)
		return nil
	})
	return res, err
}

// boundedBuffer keeps the first limit bytes written to it and counts the rest.
type boundedBuffer struct {
	limit   int
	buf     []byte
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.limit - len(b.buf)
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.dropped += len(p) - room
	return len(p), nil
}

func (b *boundedBuffer) Reset() { b.buf, b.dropped = b.buf[:0], 0 }

func (b *boundedBuffer) String() string {
	if b.dropped > 0 {
		return string(b.buf) + fmt.Sprintf("...(%d bytes dropped)", b.dropped)
	}
	return string(b.buf)
}

// sleeper is a granted clock's sleep that the current call's context interrupts: wazero's own sleep
// (time.Sleep under poll_oneoff and nanosleep) is not, so a sleeping plugin would outlive every timeout and
// SIGTERM. Once woken early the guest is stopped by WithCloseOnContextDone at its next instruction check.
type sleeper struct {
	ctx atomic.Pointer[context.Context]
}

func (s *sleeper) set(ctx context.Context) { s.ctx.Store(&ctx) }

func (s *sleeper) sleep(ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-(*s.ctx.Load()).Done():
	}
}
