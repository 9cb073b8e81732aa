//go:build wasip1

package main

import (
	"fmt"

	"github.com/agentrt/agentrt/parsers"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

// Per instance: the host initialises each instance once with the config and the agent's tools.
var (
	parser *parsers.Parser
	tools  *parsers.Tools
	result parsers.Result // reused call after call: the SDK copies everything out before the next call
)

func init() {
	sdk.RegisterParser(sdk.Parser{
		Info: sdk.Info{
			Name:         parsers.WasmName,
			Version:      "1.0.0",
			Description:  "agentrt's built-in strict tool-call parsers; config {\"parser\": NAME} selects the format.",
			ConfigSchema: sdk.RawJSON(parsers.WasmConfigSchema()),
		},
		Init:  initParser,
		Parse: parse,
	})
}

func initParser(cfg sdk.Value, specs []sdk.ToolSpec) error {
	name, err := cfg.Get("parser").Str()
	if err != nil {
		return fmt.Errorf(`config: want {"parser": NAME} with NAME one of %v`, parsers.Names())
	}
	p, err := parsers.New(name)
	if err != nil {
		return err
	}
	ts, err := parsers.ToolsFromSpecs(specs) // once per instance, not per call
	if err != nil {
		return err
	}
	parser, tools = p, ts
	return nil
}

func parse(text string, out *sdk.ParseOutput) {
	parser.ParseInto(&result, text, tools)
	r := &result
	for _, c := range r.Calls {
		// Arguments are compact JSON objects, checked by the parser (parsers.Call): no second scan here.
		out.AddCheckedCall(c.ID, c.Name, c.Arguments, c.Span[0], c.Span[1])
	}
	for _, e := range r.Errors {
		out.AddCallError(e.Name, string(e.Reason), e.Message, e.Raw, e.Span[0], e.Span[1])
	}
	out.AppendNormal(r.NormalText)
}
