//go:build wasip1

package fetch

import "unsafe"

//go:wasmimport agentrt_v1 http_request
func hostRequest(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport agentrt_v1 http_result
func hostResult(ptr unsafe.Pointer, n uint32)

func call(in []byte) ([]byte, error) {
	n := hostRequest(unsafe.Pointer(unsafe.SliceData(in)), uint32(len(in)))
	out := make([]byte, n)
	if n > 0 {
		hostResult(unsafe.Pointer(unsafe.SliceData(out)), n)
	}
	return out, nil
}
