package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: no TOML input panics the loader, and every refusal is an *Error that names the file, with a line
// inside the file (or 0 when unknown). Seeds: the shipped runtime.toml files, this package's good config, and
// broken ones.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 30s ./runtime/config/
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../runtime.toml", "../../examples/math-python/runtime.toml", "../../examples/web-agent/runtime.toml", "../../examples/frontdoor/runtime.toml", "../../examples/environments/runtime.toml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{
		good,
		"[sglang]\nworkers = [\"http://x\"]\n[[agent]]\nname = \"a\"\nmodel = \"m\"\n[[agent.tools]]\nplugin = 7\n",
		"[server]\nconcurency = 3\n",
		"[[agent]]\nname = \"a\"\n[agent.sampling]\ntemperature = -1e400\n",
		"[[agent]]\n[[agent]]\nname = 'x'\n[agent.\"quoted.key\"]\n",
		"a = [[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]\n",
		"[server]\nspool_dir = \"~/$HOME/${X\"\n",
		"\xff\xfe[sglang]\x00",
		"[[agent]]\ntool_timeout = \"5 parsecs\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse("fuzz.toml", src)
		if err == nil {
			if cfg == nil {
				t.Fatal("Parse returned neither a config nor an error")
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("error %v (%T) is not a *config.Error", err, err)
		}
		if ce.File != "fuzz.toml" || !strings.HasPrefix(err.Error(), "fuzz.toml") {
			t.Fatalf("error %q does not name the file", err)
		}
		if lines := strings.Count(src, "\n") + 1; ce.Line < 0 || ce.Line > lines {
			t.Fatalf("error %q names line %d of a %d-line file", err, ce.Line, lines)
		}
	})
}
