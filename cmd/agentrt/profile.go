package main

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile written to path (--cpuprofile of run and serve). The returned stop
// ends it and closes the file; its error is the close's (a profile cut short by a full disk).
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
