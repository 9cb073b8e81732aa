package main

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time consumed by the calling OS thread (CLOCK_THREAD_CPUTIME_ID). Benchmarks lock
// the goroutine to its thread and report per-call CPU time next to wall time: on a shared, overloaded machine the
// wall-clock p50 includes time spent waiting for a core, the CPU time does not.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
