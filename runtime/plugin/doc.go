// Package plugin is the WebAssembly plugin host: it compiles, pools and sandboxes parser, tool and hook modules
// written against the agentrt plugin ABI (plugins/ABI.md, version 1) and exposes them through typed facades. It is
// the only package that imports wazero, and it knows nothing about SGLang, tokenizers or the agent loop.
//
// A [Host] owns the wazero runtimes (trusted modules run without per-call interruption; sandboxed ones with
// CloseOnContextDone, a memory limit, a wall-clock limit per call and an output limit) and one compilation cache,
// on disk when [Config].CacheDir is set. [Host.Load] checks a module's exports, imports, ABI version and manifest,
// initialises it with its config and returns a [Module]: a pool of pre-warmed instances, one call in flight per
// instance, where a broken instance (trap, timeout, limit, protocol violation) is closed and replaced. Guest
// failures are typed errors ([TrapError], [TimeoutError], [LimitError], [ProtocolError], [GuestError],
// [LoadError]); they never crash the host.
//
// Use a module through its facade: [Module.Parser] (Parse), [Module.Tool] (Specs, Call) or [Module.Hook] (Events,
// Wants, Handle). Each loaded module is identified by [Module.SHA256], which trajectories record.
//
// Host, Module and the facades are safe for concurrent use. Read Example_tool first.
package plugin
