// Package house holds the import-boundary test: the dependency rules of docs/design.md and STYLE.md ("the house"),
// checked with `go list -deps` so that a wrong import fails CI instead of rotting the layering.
package house

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentrt/agentrt"

// The third-party libraries the rules name.
const (
	wazero    = "github.com/tetratelabs/wazero/..."
	bbolt     = "go.etcd.io/bbolt/..."
	websocket = "github.com/gorilla/websocket/..."
	mcpSDK    = "github.com/modelcontextprotocol/go-sdk/..."
	toml      = "github.com/BurntSushi/toml/..."
	natsSrv   = "github.com/nats-io/nats-server/v2/..."
	natsCli   = "github.com/nats-io/nats.go/..."
)

// loopMustNotReach is what the episode loop (runtime) and the model call (runtime/turn) never reach: no Wasm
// host, storage, WebSocket, MCP or TOML library, no emulator, and none of the runtime packages that assemble,
// serve or configure them.
var loopMustNotReach = []string{wazero, bbolt, websocket, mcpSDK, toml, natsSrv, natsCli, module + "/sglang/emulator/...",
	module + "/runtime/stream/...", module + "/runtime/plugin/...", module + "/runtime/config/...", module + "/runtime/system/...",
	module + "/runtime/rollout/...", module + "/runtime/frontdoor/...", module + "/runtime/mcptool/...", module + "/runtime/envtool/...", module + "/runtime/bus/..."}

// rules maps a package pattern (a path, or a tree ending in "/...") to what it must never reach, directly or not:
// a package path (that package only) or a tree ("/..."). Imports of test files do not count.
var rules = map[string][]string{
	module + "/tito/...":           {module + "/runtime/...", module + "/sglang/...", module + "/parsers/...", "net/http", wazero},
	module + "/sglang":             {module + "/runtime/...", module + "/tito/...", module + "/parsers/...", module + "/plugins/...", wazero, websocket, toml},
	module + "/sglang/emulator":    {module + "/runtime/...", module + "/tito/...", module + "/parsers/...", module + "/plugins/...", wazero, websocket, toml},
	module + "/runtime/plugin/...": {module + "/sglang/...", module + "/tito/..."},
	module + "/parsers/...":        {module + "/runtime/...", module + "/sglang/...", module + "/tito/...", "net/http", wazero},
	module + "/plugins/...":        {module + "/runtime/...", module + "/sglang/...", module + "/tito/...", module + "/parsers/...", wazero},
	module + "/runtime":            loopMustNotReach,
	module + "/runtime/turn":       loopMustNotReach,
	// The front door serves sessions over runtime/turn: no episodes, no stream.
	module + "/runtime/frontdoor/...": {module + "/runtime", module + "/runtime/stream/...", module + "/runtime/rollout/...", module + "/runtime/system/..."},
	// Configuration is data: it knows the components whose settings it holds, never what runs them.
	module + "/runtime/config/...": {module + "/runtime", module + "/runtime/rollout/...", module + "/runtime/system/...", module + "/runtime/stream/...", module + "/runtime/metrics/..."},
	// Metrics read trajectories and the components' counters; the service and the serve wiring feed them.
	module + "/runtime/metrics/...": {module + "/runtime", module + "/runtime/rollout/...", module + "/runtime/system/...", module + "/runtime/config/...", module + "/runtime/frontdoor/..."},
	module + "/runtime/rollout/...": {module + "/runtime/system/...", module + "/runtime/config/...", module + "/runtime/frontdoor/..."},
	// The hub resolver is a leaf: it knows the hub and its cache, not what a model folder holds.
	module + "/runtime/hfhub/...": {module + "/tito/...", module + "/sglang/...", module + "/parsers/...", module + "/plugins/...", wazero, websocket, toml},
	// The bus is a store: it moves opaque samples and trajectories, and knows neither the loop, the stream, nor what
	// runs them.
	module + "/runtime/bus/...": {module + "/runtime", module + "/runtime/turn/...", module + "/runtime/stream/...", module + "/runtime/rollout/...",
		module + "/runtime/system/...", module + "/runtime/config/...", module + "/tito/...", module + "/sglang/...", wazero, bbolt, websocket, toml},
	// The viewer reads trajectories (tito) and serves HTTP; it knows neither the loop, the stream nor SGLang.
	module + "/runtime/viewer": {module + "/runtime/stream/...", module + "/runtime/plugin/...", module + "/sglang/...", wazero, websocket},
}

// wazeroHome is the only package tree allowed to import wazero.
const wazeroHome = module + "/runtime/plugin"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T, pattern string) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", pattern).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", pattern, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// matches reports whether path is target: the package itself, or for a tree ("x/...") x or any package below it.
func matches(path, target string) bool {
	if tree, ok := strings.CutSuffix(target, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == target
}

func TestImportBoundaries(t *testing.T) {
	for pattern, bad := range rules {
		for _, p := range listPackages(t, pattern) {
			for _, d := range p.Deps {
				for _, b := range bad {
					if matches(d, b) && !matches(p.ImportPath, b) {
						t.Errorf("%s reaches %s (directly or not): the house rules forbid %s", p.ImportPath, d, b)
					}
				}
			}
		}
	}
}

// TestOnlyCmdImportsSystem: runtime/system assembles everything from a config; only the command line builds one
// (tests of other packages may, to run the whole product).
func TestOnlyCmdImportsSystem(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		for _, imp := range p.Imports {
			if matches(imp, module+"/runtime/system/...") && !matches(p.ImportPath, module+"/cmd/...") && !matches(p.ImportPath, module+"/runtime/system/...") {
				t.Errorf("%s imports %s: only cmd/ may", p.ImportPath, imp)
			}
		}
	}
}

func TestWazeroHasOneHome(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		if matches(p.ImportPath, wazeroHome+"/...") || strings.HasPrefix(p.ImportPath, module+"/cmd/") {
			continue
		}
		for _, d := range p.Deps {
			if matches(d, wazero) {
				// A package may reach wazero only through the plugin host.
				direct := true
				for _, d2 := range p.Deps {
					if matches(d2, wazeroHome+"/...") {
						direct = false
					}
				}
				if direct {
					t.Errorf("%s reaches wazero without going through %s", p.ImportPath, wazeroHome)
				}
			}
		}
	}
}

// homes gives each third-party library the one package tree allowed to import it directly (STYLE.md rule 1).
var homes = map[string]string{
	"github.com/tetratelabs/wazero":       module + "/runtime/plugin",
	"github.com/daulet/tokenizers":        module + "/tito",
	"github.com/BurntSushi/toml":          module + "/runtime/config",
	"github.com/gorilla/websocket":        module + "/runtime/stream",
	"go.etcd.io/bbolt":                    module + "/runtime/stream",
	"github.com/prometheus/client_golang": module + "/runtime/metrics",
	"github.com/schollz/progressbar":      module + "/cmd/agentrt",
	"github.com/nats-io/nats-server/v2":   module + "/runtime/bus",
	"github.com/nats-io/nats.go":          module + "/runtime/bus",
}

func TestEachLibraryHasOneHome(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		for _, imp := range p.Imports {
			for lib, home := range homes {
				if matches(imp, lib+"/...") && !matches(p.ImportPath, home+"/...") {
					t.Errorf("%s imports %s directly; only %s may (one home per library)", p.ImportPath, imp, home)
				}
			}
		}
	}
}

// TestTestutilOnlyInTests: internal/testutil (waits with goroutine dumps), internal/standin (stand-in model
// folders), internal/testmodel (the model and plugin host of tests that run episodes) and runtime/hfhub/hfhubtest
// (a loopback hub) are for tests and test tools; no shipped package imports them.
func TestTestutilOnlyInTests(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		for _, imp := range p.Imports {
			testOnly := imp == module+"/internal/testutil" || imp == module+"/internal/standin" || imp == module+"/internal/testmodel" ||
				imp == module+"/runtime/hfhub/hfhubtest"
			// fakehub is the shell tests' loopback hub: a test tool, built by scripts/test.d, never shipped.
			if testOnly && p.ImportPath != module+"/runtime/hfhub/internal/fakehub" {
				t.Errorf("%s imports %s: only tests may", p.ImportPath, imp)
			}
		}
	}
}

// stdlibOnly maps package trees to the module packages they may reach besides the standard library: guests
// (compiled to WebAssembly, docs/design.md "guest-side code"), internal/jsonw, which the parsers share with the
// host, and internal/slots, which sglang and the runtime share.
var stdlibOnly = map[string][]string{
	module + "/internal/jsonw": nil,
	module + "/internal/slots": nil,
	module + "/parsers/...":    {module + "/parsers", module + "/internal/jsonw", module + "/plugins/sdk"},
	module + "/plugins/...":    {module + "/plugins/sdk"},
}

// TestGuestsReachOnlyTheStandardLibrary checks stdlibOnly as the packages build natively and for wasip1 (a guest's
// exports sit in files built only there).
func TestGuestsReachOnlyTheStandardLibrary(t *testing.T) {
	for pattern, allowed := range stdlibOnly {
		for _, goos := range []string{"", "wasip1"} {
			cmd := exec.Command("go", "list", "-json=ImportPath,Deps", pattern)
			if goos != "" {
				cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=wasm")
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("GOOS=%s go list %s: %v", goos, pattern, err)
			}
			dec := json.NewDecoder(strings.NewReader(string(out)))
			for dec.More() {
				var p pkg
				if err := dec.Decode(&p); err != nil {
					t.Fatal(err)
				}
				for _, d := range p.Deps {
					first, _, _ := strings.Cut(d, "/")
					if !strings.Contains(first, ".") {
						continue // a standard library package
					}
					if !slices.ContainsFunc(allowed, func(a string) bool { return matches(d, a+"/...") }) {
						t.Errorf("%s (GOOS=%s) reaches %s: it may reach only the standard library and %v", p.ImportPath, goos, d, allowed)
					}
				}
			}
		}
	}
}

// modelCallInterfaces are declared once, in runtime/turn, where the loop and the front door both take them.
var modelCallInterfaces = []string{"Generator", "Tokenizer", "Template", "Parser"}

// ownInterface lists the packages that may declare one of them for themselves: leaves that the house forbids to
// import runtime/turn, whose interface is their own need (STYLE.md rule 5: interfaces live with the consumer).
var ownInterface = map[string]string{
	"sglang/emulator": "the SGLang stand-in takes a tokenizer and may not import runtime or tito",
	"runtime/viewer":  "the viewer spells tokens (Token, IsSpecial: another interface) and may not reach sglang, as runtime/turn does",
}

// TestModelCallInterfacesDeclaredOnce parses every Go file of the module (tests included) and finds each
// interface type named Generator, Tokenizer, Template or Parser: runtime/turn declares each one, and no one else.
func TestModelCallInterfacesDeclaredOnce(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{} // name -> the package folders that declare it as an interface
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if _, isInterface := ts.Type.(*ast.InterfaceType); isInterface {
				for _, name := range modelCallInterfaces {
					if ts.Name.Name == name {
						found[name] = append(found[name], filepath.ToSlash(dir))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range modelCallInterfaces {
		var others []string
		turn := 0
		for _, dir := range found[name] {
			switch {
			case dir == "runtime/turn":
				turn++
			case ownInterface[dir] != "":
			default:
				others = append(others, dir)
			}
		}
		if turn != 1 || len(others) > 0 {
			t.Errorf("interface %s: declared %d times in runtime/turn (want once) and in %v (want nowhere else: take turn.%s)", name, turn, others, name)
		}
	}
}

// TestLoopReachesNoThirdPartyPackage: the episode loop and the model call need nothing outside the standard
// library and this module (docs/design.md): every library they would reach is one a component below them owns.
func TestLoopReachesNoThirdPartyPackage(t *testing.T) {
	for _, pattern := range []string{module + "/runtime", module + "/runtime/turn"} {
		for _, p := range listPackages(t, pattern) {
			for _, d := range p.Deps {
				first, _, _ := strings.Cut(d, "/")
				if strings.Contains(first, ".") && !matches(d, module+"/...") {
					t.Errorf("%s reaches the third-party package %s", p.ImportPath, d)
				}
			}
		}
	}
}
