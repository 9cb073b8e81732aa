package tito

/*
#include <malloc.h>
*/
import "C"

import "errors"

// Allocator thresholds set by TuneAllocator.
const (
	// MallocMmapThreshold: the C allocator serves a block below it from its heap rather than a fresh mapping.
	MallocMmapThreshold = 32 << 20
	// MallocTrimThreshold: the C allocator returns its heap's free top to the system only past it.
	MallocTrimThreshold = 128 << 20
)

// TuneAllocator sets the C allocator's (glibc malloc's) thresholds for the process, for the template engine and the
// tokenizer (Rust, through cgo): blocks under MallocMmapThreshold come from the allocator's heap, which keeps up to
// MallocTrimThreshold of free space instead of returning it to the system.
//
// At a long context a turn's render allocates and frees buffers of hundreds of KB to a few MB (the conversation's
// text, and the template's string concatenations over it). With glibc's defaults (a 128 KB mapping threshold that
// adapts upward, and a trim threshold twice that, applied to each thread's arena) those blocks were mapped, or the
// heap trimmed, and faulted in and zeroed again by the kernel on every turn: about half of a 118k-token delta's time
// (BenchmarkRenderDeltaLongContext). Call it once, at the start of a program (cmd/agentrt does); it affects every C
// allocation in the process. Setting the thresholds turns glibc's adaptive threshold off.
//
// # Errors
//
// An error when the C library refuses a setting (a libc other than glibc may not support them).
func TuneAllocator() error {
	if C.mallopt(C.M_MMAP_THRESHOLD, MallocMmapThreshold) == 0 || C.mallopt(C.M_TRIM_THRESHOLD, MallocTrimThreshold) == 0 {
		return errors.New("tito: the C allocator refused its thresholds (mallopt)")
	}
	return nil
}
