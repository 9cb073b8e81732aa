//go:build !linux

package main

import "time"

// threadCPU is not measured on this platform.
func threadCPU() time.Duration { return 0 }
