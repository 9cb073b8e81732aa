package abi

// Version is the ABI version this package describes; guests return it from [FuncABIVersion].
const Version = 1

// HostModule is the name of the host-import module. The major ABI version is part of the name (like WASI), so a
// guest built for another major version fails to link with a clear message instead of misbehaving.
const HostModule = "agentrt_v1"

// WASIModule is the only other import module a guest may use.
const WASIModule = "wasi_snapshot_preview1"

// Host functions in [HostModule] (ABI.md section 3).
const (
	// FuncLog is `(func (param $level i32) (param $ptr i32) (param $len i32))`: write a log line.
	FuncLog = "log"
)

// Guest exports (ABI.md section 2.1).
const (
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
	// FuncInitialize is the optional reactor start-up function `(func)`.
	FuncInitialize = "_initialize"
	// FuncABIVersion is `(func (result i32))`: returns [Version].
	FuncABIVersion = "agentrt_abi_version"
	// FuncAlloc is `(func (param $size i32) (result i32))`: a buffer for the host to write an input into.
	FuncAlloc = "agentrt_alloc"
	// FuncFree is `(func (param $ptr i32))`: releases an alloc'd buffer that was never passed to a handler.
	FuncFree = "agentrt_free"
	// FuncDescribe is `(func (result i64))`: the packed manifest JSON.
	FuncDescribe = "agentrt_describe"
	// FuncInit is `(func (param $ptr i32) (param $len i32) (result i64))`: init input -> packed envelope.
	FuncInit = "agentrt_init"
	// FuncCall is `(func (param $ptr i32) (param $len i32) (result i64))`: kind-specific input -> packed envelope.
	FuncCall = "agentrt_call"
)

// Kinds of plugin (manifest field "kind").
const (
	KindParser = "parser"
	KindTool   = "tool"
	KindHook   = "hook"
)

// Hook events (ABI.md section 5.3).
const (
	EventBeforeInvocation = "before_invocation"
	EventAfterInvocation  = "after_invocation"
	EventBeforeModelCall  = "before_model_call"
	// EventBeforeGenerate comes before each model call after the first, with the context's size and the
	// conversation: a hook may answer with the conversation that replaces it (compaction; ABI.md section 5.3).
	EventBeforeGenerate = "before_generate"
	EventAfterModelCall = "after_model_call"
	EventMessageAdded   = "message_added"
	EventBeforeToolCall = "before_tool_call"
	EventAfterToolCall  = "after_tool_call"
	EventEpisodeEnd     = "episode_end"
)

// Events lists every hook event of ABI version 1, in the order an episode meets them.
func Events() []string {
	return []string{EventBeforeInvocation, EventBeforeGenerate, EventBeforeModelCall, EventAfterModelCall, EventMessageAdded,
		EventBeforeToolCall, EventAfterToolCall, EventAfterInvocation, EventEpisodeEnd}
}

// KnownEvent reports whether name is a hook event of ABI version 1.
func KnownEvent(name string) bool {
	for _, e := range Events() {
		if e == name {
			return true
		}
	}
	return false
}

// Parse error reasons (ABI.md section 5.1). Parsers may add codes; the runtime counts errors by code.
const (
	ReasonMalformedJSON = "malformed_json"
	ReasonUnknownTool   = "unknown_tool"
	ReasonMissingName   = "missing_name"
	ReasonBadArguments  = "bad_arguments"
	ReasonUnclosedTag   = "unclosed_tag"
	ReasonInvalidFormat = "invalid_format"
)

// Stop reasons of the built-in loop limiter; they match the trajectory status taxonomy.
const (
	StopMaxToolIters = "max_tool_iters"
	StopMaxToolCalls = "max_tool_calls"
	StopMaxMessages  = "max_messages"
)

// Episode statuses as hooks see them (episode_end, after_invocation).
const (
	StatusCompleted = "completed"
	StatusTruncated = "truncated"
	StatusAborted   = "aborted"
)

// Common error codes of error envelopes (free-form; these are conventions).
const (
	CodeBadInput    = "bad_input"
	CodeBadConfig   = "bad_config"
	CodeUnknownTool = "unknown_tool"
	CodeInternal    = "internal"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Log levels of [FuncLog].
const (
	LogDebug int32 = 0
	LogInfo  int32 = 1
	LogWarn  int32 = 2
	LogError int32 = 3
)

// Packed is a pointer and a length in guest memory packed into one u64, the result type of [FuncDescribe],
// [FuncInit] and [FuncCall]:
//
//	 63                32 31                 0
//	┌────────────────────┬────────────────────┐
//	│     ptr (u32)      │     len (u32)      │
//	└────────────────────┴────────────────────┘
//
// For example, 27 bytes at 0x12340 pack to 0x0001_2340_0000_001B.
type Packed uint64

// Pack packs ptr and length into a [Packed].
func Pack(ptr, length uint32) Packed { return Packed(uint64(ptr)<<32 | uint64(length)) }

// Ptr is the pointer half (the high 32 bits).
func (p Packed) Ptr() uint32 { return uint32(p >> 32) }

// Len is the length half (the low 32 bits).
func (p Packed) Len() uint32 { return uint32(p) }
