package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// ErrClosed is returned by calls on a closed [Host] or [Module].
var ErrClosed = errors.New("plugin: closed")

// ErrWrongKind is returned when a module is used as a kind it is not (e.g. Parser on a tool module).
var ErrWrongKind = errors.New("plugin: wrong kind")

// LoadError is a module that cannot be loaded: it is not valid Wasm, misses an export, has a wrong signature, imports
// something the host does not provide, speaks another ABI version, describes itself wrongly or refuses its config.
type LoadError struct {
	Plugin string // the Spec name (file name, "builtin:limiter", ...)
	Reason string // what is wrong, and what to do about it
	Err    error  // the underlying error, if any
}

// Error is "plugin: load NAME: REASON", then the underlying error, unless it is the plugin's own refusal (a
// *GuestError from agentrt_init), whose code and message the reason already quotes.
func (e *LoadError) Error() string {
	var ge *GuestError
	if e.Err != nil && !errors.As(e.Err, &ge) {
		return fmt.Sprintf("plugin: load %q: %s: %v", e.Plugin, e.Reason, e.Err)
	}
	return fmt.Sprintf("plugin: load %q: %s", e.Plugin, e.Reason)
}

// Unwrap returns the underlying error.
func (e *LoadError) Unwrap() error { return e.Err }

// TrapError is a guest that failed while running a function: a Wasm trap (unreachable, out-of-bounds access,
// stack overflow), a guest runtime crash (Go: out of memory, panic outside the SDK) or an exit. The instance is
// discarded and replaced.
type TrapError struct {
	Plugin string // the plugin's name
	Func   string // the export that was running
	Stderr string // what the guest wrote to stderr during the call (bounded), if anything
	Err    error  // wazero's error
}

func (e *TrapError) Error() string {
	// wazero appends the whole wasm stack trace to the message: keep its first line (Unwrap has the rest).
	msg := fmt.Sprintf("plugin: %s: %s trapped: %s", e.Plugin, e.Func, firstLines(e.Err.Error(), 1))
	if e.Stderr != "" {
		msg += "; guest stderr: " + firstLines(e.Stderr, 2)
	}
	return msg
}

// Unwrap returns wazero's error.
func (e *TrapError) Unwrap() error { return e.Err }

// TimeoutError is a sandboxed call stopped at its wall-clock limit (or by the caller's deadline). It matches
// context.DeadlineExceeded with errors.Is. The instance is discarded and replaced.
type TimeoutError struct {
	Plugin string
	Func   string
	Limit  time.Duration // the module's per-call limit
}

func (e *TimeoutError) Error() string {
	fix := "raise the entry's timeout in runtime.toml (agent.tools.timeout, agent.hooks.timeout or agent.reward.timeout) if the plugin needs longer"
	if e.Func == abi.FuncInitialize || e.Func == abi.FuncInit {
		// start-up runs under the host's own limit, which no key changes
		fix = "instantiating and initialising a plugin has a fixed limit: make its start-up cheaper"
	}
	return fmt.Sprintf("plugin: %s: %s stopped after the %v limit (%s)", e.Plugin, e.Func, e.Limit, fix)
}

// Is matches context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// LimitError is a guest that exceeded a limit other than time: output size, or memory it could not get.
type LimitError struct {
	Plugin string
	Func   string
	What   string // "output", "memory"
	Limit  int64  // bytes
	Got    int64  // bytes (0 when unknown)
}

func (e *LimitError) Error() string {
	if e.Got > 0 {
		return fmt.Sprintf("plugin: %s: %s: %s of %d bytes exceeds the limit of %d bytes", e.Plugin, e.Func, e.What, e.Got, e.Limit)
	}
	return fmt.Sprintf("plugin: %s: %s: %s limit of %d bytes exceeded", e.Plugin, e.Func, e.What, e.Limit)
}

// ProtocolError is a guest that broke the ABI while running: an output outside its memory, an empty output, output
// that is not a valid envelope, or an ok value of the wrong shape. The instance is discarded and replaced.
type ProtocolError struct {
	Plugin string
	Func   string
	Msg    string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("plugin: %s: %s broke the ABI: %s (see plugins/ABI.md)", e.Plugin, e.Func, e.Msg)
}

// GuestError is an error envelope returned by a parser or hook (for tools it is a [ToolResult] with IsError), or by
// agentrt_init. The instance stays in service.
type GuestError struct {
	Plugin  string
	Func    string
	Code    string
	Message string
}

func (e *GuestError) Error() string {
	return fmt.Sprintf("plugin: %s: %s returned error %s: %s", e.Plugin, e.Func, e.Code, e.Message)
}

// firstLines returns the first n lines of s, joined by " | ", with " ..." if there was more.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, " | ")
	}
	return strings.Join(lines[:n], " | ") + " ..."
}
