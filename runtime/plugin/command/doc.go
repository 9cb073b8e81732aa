// Package command runs WASI preview 1 *command* modules (modules that export _start, such as CPython compiled for
// WASI) as agent tools: each call instantiates a fresh instance of one compiled module, passes the call's arguments
// as argv and/or stdin, and returns what the program wrote to stdout and stderr as the tool result.
//
// Every call is sandboxed: a wall-clock limit (wazero's CloseOnContextDone kills a runaway guest), a linear-memory
// limit, a cap on captured output, no network (WASI preview 1 has no sockets), no environment beyond what the
// [Config] sets, a fake clock and deterministic randomness unless granted, and no files except read-only mounts and,
// when [Config].Scratch is set, a writable directory at /tmp: one per episode by default ([ScopeEpisode]: the calls
// of an episode share it, [Tool.EndEpisode] removes it), or a fresh one per call ([ScopeCall]). A program that
// fails (non-zero exit, timeout, out of memory, crash) yields an error result the model sees, never a Go error;
// Go errors are reserved for the caller's context ending and host-side failures.
//
// Modules are compiled once per [Tool] through an on-disk compilation cache (the plugin host's directory, see
// plugin.Host.CacheDir), so a process that finds the cache warm loads a 26 MB interpreter in well under a second.
// This package does not implement the plugin ABI (plugins/ABI.md): a command module is a plain program.
//
// A [Tool] is safe for concurrent use; calls beyond [Config].MaxConcurrent wait. Read ExampleTool first;
// [Python] is the configuration of the execute_python_code tool.
package command
