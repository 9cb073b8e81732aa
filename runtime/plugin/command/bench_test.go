package command_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentrt/agentrt/runtime/plugin/command"
)

// Benchmarks of the Python tool (see bench/results/python-tool.md):
//
//	go test -run '^$' -bench . -benchtime 10x ./runtime/plugin/command/

func benchPython(b *testing.B) []byte {
	b.Helper()
	path := os.Getenv("AGENTRT_PYTHON_WASM")
	if path == "" {
		b.Skip("AGENTRT_PYTHON_WASM is not set")
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return wasm
}

// BenchmarkLoadCold compiles the 26 MB interpreter with an empty cache.
func BenchmarkLoadCold(b *testing.B) {
	wasm := benchPython(b)
	for b.Loop() {
		cfg := command.Python()
		cfg.CacheDir = b.TempDir()
		t, err := command.New(context.Background(), wasm, cfg)
		if err != nil {
			b.Fatal(err)
		}
		t.Close(context.Background())
	}
}

// BenchmarkLoadWarm is a new process's start-up with a warm on-disk cache.
func BenchmarkLoadWarm(b *testing.B) {
	wasm := benchPython(b)
	cfg := command.Python()
	cfg.CacheDir = cacheDir()
	t, err := command.New(context.Background(), wasm, cfg) // warm the cache
	if err != nil {
		b.Fatal(err)
	}
	t.Close(context.Background())
	for b.Loop() {
		t, err := command.New(context.Background(), wasm, cfg)
		if err != nil {
			b.Fatal(err)
		}
		t.Close(context.Background())
	}
}

func benchCall(b *testing.B, code string) {
	wasm := benchPython(b)
	cfg := command.Python()
	cfg.CacheDir = cacheDir()
	t, err := command.New(context.Background(), wasm, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close(context.Background())
	args := codeArgs(code)
	b.ReportAllocs()
	for b.Loop() {
		r, err := t.Call(context.Background(), "execute_python_code", args)
		if err != nil || r.IsError {
			b.Fatalf("%v %v", err, *r.Text)
		}
	}
}

// BenchmarkCallPrint is one call of a trivial program: a fresh interpreter, scratch directory and all.
func BenchmarkCallPrint(b *testing.B) { benchCall(b, `print(6*7)`) }

// BenchmarkCallImports imports what math answers typically use.
func BenchmarkCallImports(b *testing.B) {
	benchCall(b, "import math, fractions, itertools, collections, json, re\nprint(fractions.Fraction(7, 8) + math.comb(10, 3))")
}

// BenchmarkCallCompute is CPU-bound: fib(20) and a 10^5 sum.
func BenchmarkCallCompute(b *testing.B) {
	benchCall(b, "def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)\nprint(fib(20), sum(i*i for i in range(10**5)))")
}

// BenchmarkCallParallel runs calls from GOMAXPROCS goroutines.
func BenchmarkCallParallel(b *testing.B) {
	wasm := benchPython(b)
	cfg := command.Python()
	cfg.CacheDir = cacheDir()
	t, err := command.New(context.Background(), wasm, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close(context.Background())
	args := codeArgs(`print(6*7)`)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r, err := t.Call(context.Background(), "execute_python_code", args); err != nil || r.IsError {
				b.Errorf("%v", err)
			}
		}
	})
}
