// Package house holds the import-boundary test: the dependency rules of docs/design.md and STYLE.md ("the house"),
// checked with `go list -deps` so that a wrong import fails CI instead of rotting the layering.
package house

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentrt/agentrt"

// forbidden maps a package pattern (a path, or a prefix ending in "/...") to imports it must never reach.
var forbidden = map[string][]string{
	module + "/tito/...":           {module + "/runtime", module + "/sglang", module + "/parsers", "net/http", "github.com/tetratelabs/wazero"},
	module + "/sglang":             {module + "/runtime", module + "/tito", module + "/parsers", module + "/plugins", "github.com/tetratelabs/wazero", "github.com/gorilla/websocket", "github.com/BurntSushi/toml"},
	module + "/sglang/emulator":    {module + "/runtime", module + "/tito", module + "/parsers", module + "/plugins", "github.com/tetratelabs/wazero", "github.com/gorilla/websocket", "github.com/BurntSushi/toml"},
	module + "/runtime/plugin/...": {module + "/sglang", module + "/tito"},
	module + "/parsers/...":        {module + "/runtime", module + "/sglang", module + "/tito", "net/http", "github.com/tetratelabs/wazero"},
	module + "/plugins/...":        {module + "/runtime", module + "/sglang", module + "/tito", module + "/parsers", "github.com/tetratelabs/wazero"},
}

// wazeroHome is the only package tree allowed to import wazero.
const wazeroHome = module + "/runtime/plugin"

type pkg struct {
	ImportPath string
	Deps       []string
}

func listDeps(t *testing.T, pattern string) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", pattern).Output()
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

func reaches(dep, target string) bool {
	return dep == target || strings.HasPrefix(dep, target+"/")
}

func TestImportBoundaries(t *testing.T) {
	for pattern, bad := range forbidden {
		for _, p := range listDeps(t, pattern) {
			for _, d := range p.Deps {
				for _, b := range bad {
					if reaches(d, b) && !reaches(p.ImportPath, b) {
						t.Errorf("%s imports %s (directly or not): the house rules forbid it", p.ImportPath, d)
					}
				}
			}
		}
	}
}

func TestWazeroHasOneHome(t *testing.T) {
	for _, p := range listDeps(t, module+"/...") {
		if reaches(p.ImportPath, wazeroHome) || strings.HasPrefix(p.ImportPath, module+"/cmd/") {
			continue
		}
		for _, d := range p.Deps {
			if reaches(d, "github.com/tetratelabs/wazero") && !reaches(d, wazeroHome) {
				// A package may reach wazero only through the plugin host.
				direct := true
				for _, d2 := range p.Deps {
					if reaches(d2, wazeroHome) {
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
}

func TestEachLibraryHasOneHome(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			for lib, home := range homes {
				if reaches(imp, lib) && !reaches(p.ImportPath, home) {
					t.Errorf("%s imports %s directly; only %s may (one home per library)", p.ImportPath, imp, home)
				}
			}
		}
	}
}

// TestTestutilOnlyInTests: internal/testutil (waits with goroutine dumps) and internal/standin (stand-in model
// folders) are for tests; no shipped package imports them.
func TestTestutilOnlyInTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if imp == module+"/internal/testutil" || imp == module+"/internal/standin" {
				t.Errorf("%s imports %s: only tests may", p.ImportPath, imp)
			}
		}
	}
}
