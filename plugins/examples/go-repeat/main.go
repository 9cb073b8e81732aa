//go:build wasip1

// Command repeat is the Go SDK's example tool (plugins/sdk/go/README.md): typed arguments, a config, error
// results. repeat(text, times, upper?) writes text `times` times, joined by the configured separator.
package main

import (
	"math"
	"strings"

	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

// Set by configure from the plugin's config (the same on every call: not per-episode state).
var (
	separator = " "
	maxBytes  = 1000.0
)

func init() {
	sdk.RegisterTools(sdk.Tools{
		Info: sdk.Info{Name: "repeat", Version: "1.0.0", Description: "Repeats a text (Go SDK example).",
			ConfigSchema: sdk.RawJSON(`{"type":"object","properties":{"separator":{"type":"string"},"max_bytes":{"type":"integer","minimum":1}},"additionalProperties":false}`)},
		Specs: []sdk.ToolSpec{{Name: "repeat", Description: "Repeat a text a number of times.",
			Parameters: sdk.RawJSON(`{"type":"object","properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1,"maximum":10},"upper":{"type":"boolean"}},"required":["text","times"]}`)}},
		Init: configure,
		Call: repeat,
	})
}

// configure reads the config; an error refuses it (code bad_config). nil specs keep the tools declared above.
func configure(cfg sdk.Value) ([]sdk.ToolSpec, error) {
	if cfg.IsNull() {
		return nil, nil // no config: the defaults
	}
	if !cfg.IsObject() {
		return nil, sdk.Errorf("bad_config", "config must be a table")
	}
	var err error
	cfg.Each(func(key string, v sdk.Value) bool {
		switch key {
		case "separator":
			if separator, err = v.Str(); err != nil {
				err = sdk.Errorf("bad_config", "separator must be a string")
			}
		case "max_bytes":
			if n, ferr := v.Float(); ferr != nil || n < 1 || n != math.Trunc(n) {
				err = sdk.Errorf("bad_config", "max_bytes must be an integer >= 1")
			} else {
				maxBytes = n
			}
		default:
			err = sdk.Errorf("bad_config", `unknown key "%s" (known: separator, max_bytes)`, key)
		}
		return err == nil
	})
	return nil, err
}

func repeat(name string, args sdk.Value) (sdk.Result, error) {
	text, err := args.Get("text").Str()
	if err != nil {
		return sdk.Result{}, sdk.Errorf("bad_input", `repeat: argument "text" must be a string`)
	}
	times, err := args.Get("times").Float()
	if err != nil || times < 1 || times > 10 || times != math.Trunc(times) {
		return sdk.Result{}, sdk.Errorf("bad_input", `repeat: argument "times" must be an integer from 1 to 10`)
	}
	upper := false
	if u := args.Get("upper"); !u.IsNull() { // absent or null: false
		if upper, err = u.Bool(); err != nil {
			return sdk.Result{}, sdk.Errorf("bad_input", `repeat: argument "upper" must be a boolean`)
		}
	}
	n := int(times)
	size := n*len(text) + (n-1)*len(separator)
	if float64(size) > maxBytes {
		return sdk.Result{}, sdk.Errorf("too_long", "the result would be %d bytes, more than max_bytes (%.0f)", size, maxBytes)
	}
	out := strings.Repeat(text+separator, n)[:size]
	if upper {
		out = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, out)
	}
	return sdk.Text(out), nil // an error instead is the tool's error result, which the model reads
}

func main() {}
