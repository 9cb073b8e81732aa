//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// The guest is one module instance: its registration and buffers are necessarily package state.
var (
	mod   module
	inBuf = make([]byte, 0, 64<<10) // the one input buffer agentrt_alloc hands out, reused call after call
)

// RegisterParser makes this module a parser plugin. Call it once, from init.
func RegisterParser(p Parser) { mod.register(&p, nil, nil) }

// RegisterTools makes this module a tool plugin. Call it once, from init.
func RegisterTools(t Tools) { mod.register(nil, &t, nil) }

// RegisterHook makes this module a hook plugin. Call it once, from init.
func RegisterHook(h Hook) { mod.register(nil, nil, &h) }

//go:wasmimport agentrt_v1 log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

// Log writes msg to the runtime's log at level (abi.LogDebug … abi.LogError).
func Log(level int32, msg string) {
	if len(msg) == 0 {
		return
	}
	hostLog(level, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

func ptrOf(b []byte) uint32 {
	if cap(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func packed(b []byte) uint64 { return uint64(abi.Pack(ptrOf(b), uint32(len(b)))) }

//go:wasmexport agentrt_abi_version
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport agentrt_alloc
func exportAlloc(size uint32) uint32 {
	if int(size) > cap(inBuf) {
		inBuf = make([]byte, 0, int(size)+int(size)/4)
	}
	if cap(inBuf) == 0 {
		inBuf = make([]byte, 0, 64)
	}
	return ptrOf(inBuf)
}

//go:wasmexport agentrt_free
func exportFree(ptr uint32) {}

// input returns the bytes the host wrote at ptr, which must be the buffer agentrt_alloc handed out.
func input(ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	if ptr != ptrOf(inBuf) || int(n) > cap(inBuf) {
		return nil, false
	}
	return inBuf[:n], true
}

//go:wasmexport agentrt_describe
func exportDescribe() uint64 { return packed(mod.describe()) }

//go:wasmexport agentrt_init
func exportInit(ptr, n uint32) uint64 {
	in, ok := input(ptr, n)
	if !ok {
		return packed(mod.errEnv(abi.CodeBadInput, "input not from agentrt_alloc"))
	}
	return packed(mod.init(in))
}

//go:wasmexport agentrt_call
func exportCall(ptr, n uint32) uint64 {
	in, ok := input(ptr, n)
	if !ok {
		return packed(mod.errEnv(abi.CodeBadInput, "input not from agentrt_alloc"))
	}
	return packed(mod.call(in))
}
