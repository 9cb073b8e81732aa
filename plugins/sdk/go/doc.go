// Package sdk is the Go guest SDK of the agentrt plugin ABI (plugins/ABI.md): it turns a Go program built with
// `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` into a parser, tool or hook plugin, and hides every ABI
// detail (exports, memory, packed results, envelopes, JSON) behind idiomatic types.
//
// A plugin registers exactly one of [Parser], [Tools] or [Hook] from an init function: a c-shared (reactor) Go
// module runs package initialisation but never calls main, so main stays empty:
//
//	func init() {
//		sdk.RegisterTools(sdk.Tools{
//			Info:  sdk.Info{Name: "echo"},
//			Specs: []sdk.ToolSpec{{Name: "echo", Parameters: sdk.RawJSON(`{"type":"object"}`)}},
//			Call:  func(name string, args sdk.Value) (sdk.Result, error) { return sdk.JSON(args), nil },
//		})
//	}
//
//	func main() {}
//
// The SDK reads and writes JSON with package fastjson, not encoding/json, because reflection-based JSON inside
// a Wasm guest costs ~200 us per KB: inputs are handed over as raw [Value]s that are only scanned where asked,
// and outputs are appended directly. A plugin may of course use encoding/json itself.
//
// The registration state is per module instance and the host makes one call at a time per instance, so nothing
// here is synchronised. Plugins must not keep per-episode state in memory (the host pools instances); hooks use
// [Response] State instead. The exported wasm functions live in exports_wasip1.go; everything else also builds
// natively, so the encoders are unit-tested on the host. Read plugins/sdk/go/README.md (the reference: building,
// a tool, a hook, a reward, every function) first; the examples are plugins/examples/go-*.
package sdk
