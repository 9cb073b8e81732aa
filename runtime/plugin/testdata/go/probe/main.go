//go:build wasip1

// Command probe is a Go guest for the plugin host's tests: a tool module whose tools misbehave on purpose (spin
// forever, eat memory, exit, overflow the stack, panic, answer huge output) or probe capabilities (read a host
// file, read the clock, read randomness, sleep), next to a well-behaved echo.
//
// Rebuild: scripts/wasm.d/10-go-plugins.sh.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

var (
	hog  [][]byte // memory kept alive by "grow"
	sink int
)

func init() {
	names := []string{"noop", "echo", "spin", "grow", "exit", "stackoverflow", "panic", "huge", "readfile", "now", "random", "log", "config", "sleep", "symlink", "link", "writefile", "env"}
	specs := make([]sdk.ToolSpec, len(names))
	for i, n := range names {
		specs[i] = sdk.ToolSpec{Name: n, Parameters: sdk.RawJSON(`{"type":"object"}`)}
	}
	var cfg []byte
	sdk.RegisterTools(sdk.Tools{
		Info:  sdk.Info{Name: "probe", Version: "0.0.1"},
		Specs: specs,
		Init: func(c sdk.Value) ([]sdk.ToolSpec, error) {
			cfg = append([]byte(nil), c...)
			if c.Get("refuse").Exists() {
				return nil, fmt.Errorf("refusing config: %s", c.Get("refuse").StrOr("?"))
			}
			return nil, nil
		},
		Call: func(name string, args sdk.Value) (sdk.Result, error) {
			switch name {
			case "noop":
				return sdk.Text("ok"), nil
			case "echo":
				return sdk.JSON(append([]byte(nil), args...)), nil
			case "spin":
				for {
					sink++
				}
			case "grow":
				fmt.Fprintln(os.Stderr, "probe: growing")
				for {
					hog = append(hog, make([]byte, 1<<20))
				}
			case "exit":
				os.Exit(3)
			case "stackoverflow":
				return sdk.Text(strconv.Itoa(recurse(1))), nil
			case "panic":
				panic("boom")
			case "huge":
				return sdk.Text(strings.Repeat("x", int(args.Get("bytes").IntOr(2<<20)))), nil
			case "readfile":
				b, err := os.ReadFile(args.Get("path").StrOr(""))
				if err != nil {
					return sdk.Result{}, err
				}
				return sdk.Text(string(b)), nil
			case "symlink", "link", "writefile": // file-system writes: refused in read-only mounts
				var err error
				switch name {
				case "symlink":
					err = os.Symlink(args.Get("target").StrOr(""), args.Get("path").StrOr(""))
				case "link":
					err = os.Link(args.Get("target").StrOr(""), args.Get("path").StrOr(""))
				default:
					err = os.WriteFile(args.Get("path").StrOr(""), []byte("written"), 0o644)
				}
				if err != nil {
					return sdk.Result{}, err
				}
				return sdk.Text("done"), nil
			case "env":
				return sdk.Text(strings.Join(os.Environ(), "\n")), nil
			case "now":
				return sdk.Text(strconv.FormatInt(time.Now().UnixNano(), 10)), nil
			case "random":
				var b [8]byte
				_, _ = rand.Read(b[:])
				return sdk.Text(hex.EncodeToString(b[:])), nil
			case "log":
				sdk.Log(1, "probe says "+args.Get("msg").StrOr(""))
				return sdk.Text("logged"), nil
			case "sleep": // needs the clock grant; an hour unless told
				time.Sleep(time.Duration(args.Get("ms").IntOr(3600_000)) * time.Millisecond)
				return sdk.Text("slept"), nil
			case "config":
				if len(cfg) == 0 {
					return sdk.Text("null"), nil
				}
				return sdk.JSON(cfg), nil
			}
			return sdk.Result{}, sdk.Errorf("unknown_tool", "no tool %q", name)
		},
	})
}

func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func main() {}
