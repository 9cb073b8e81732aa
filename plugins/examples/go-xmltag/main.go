//go:build wasip1

// Command xmltag is the Go SDK's example parser (plugins/sdk/go/README.md): it finds tool calls written as JSON
// inside a pair of tags (the C, Rust and AssemblyScript examples xmltag are the same parser), by default
// Hermes-style
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// Config (optional): {"open": "<tool_call>", "close": "</tool_call>"}. It is strict, like the built-in parsers:
// nothing is repaired; malformed calls become errors with a reason and the raw text, and a call to a tool the
// agent does not have is an unknown_tool error. It shows config at init, the agent's tools at init, and the
// ParseOutput API. The built-in parsers (parsers/) are the production ones.
//
// Build: scripts/wasm.d/10-go-plugins.sh (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o xmltag.wasm).
// Try:   agentrt plugin test plugins/examples/go-xmltag/xmltag.wasm --input '"<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>"'
package main

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

// Set once per instance by init (configuration, not per-episode state).
var (
	open, closeTag = "<tool_call>", "</tool_call>"
	known          map[string]bool // nil: no tool list given, every name is accepted
)

func init() {
	sdk.RegisterParser(sdk.Parser{
		Info: sdk.Info{
			Name:         "xmltag",
			Version:      "1.0.0",
			Description:  "Tool calls as JSON between two tags (Hermes-style by default).",
			ConfigSchema: sdk.RawJSON(`{"type":"object","properties":{"open":{"type":"string"},"close":{"type":"string"}}}`),
		},
		Init:  configure,
		Parse: parse,
	})
}

func configure(cfg sdk.Value, tools []sdk.ToolSpec) error {
	for _, t := range []struct {
		key string
		dst *string
	}{{"open", &open}, {"close", &closeTag}} {
		if v := cfg.Get(t.key); v.Exists() {
			if s, err := v.Str(); err != nil || s == "" {
				return sdk.Errorf("bad_config", "open and close must be non-empty strings")
			} else {
				*t.dst = s
			}
		}
	}
	known = nil
	if len(tools) > 0 {
		known = make(map[string]bool, len(tools))
		for _, t := range tools {
			known[t.Name] = true
		}
	}
	return nil
}

func parse(text string, out *sdk.ParseOutput) {
	pos := 0
	for {
		i := strings.Index(text[pos:], open)
		if i < 0 {
			out.AppendNormal(text[pos:])
			return
		}
		start := pos + i
		out.AppendNormal(text[pos:start])
		bodyStart := start + len(open)
		j := strings.Index(text[bodyStart:], closeTag)
		if j < 0 {
			out.AddError(abi.ReasonUnclosedTag, "no "+closeTag+" after "+open, text[start:], start, len(text))
			return
		}
		end := bodyStart + j + len(closeTag)
		call(text[bodyStart:bodyStart+j], text[start:end], start, end, out)
		pos = end
	}
}

func call(body, raw string, start, end int, out *sdk.ParseOutput) {
	b := []byte(body)
	if err := fastjson.Check(b); err != nil {
		out.AddError(abi.ReasonMalformedJSON, err.Error(), raw, start, end)
		return
	}
	v := sdk.Value(b)
	name, err := v.Get("name").Str()
	if err != nil || name == "" {
		out.AddError(abi.ReasonMissingName, `the call has no "name" string`, raw, start, end)
		return
	}
	if known != nil && !known[name] {
		out.AddError(abi.ReasonUnknownTool, fmt.Sprintf("the agent has no tool %q", name), raw, start, end)
		return
	}
	args := v.Get("arguments")
	if !args.Exists() {
		args = sdk.Value(`{}`)
	}
	if err := out.AddCall("", name, args, start, end); err != nil {
		out.AddError(abi.ReasonBadArguments, `"arguments" is not a JSON object`, raw, start, end)
	}
}

func main() {}
