//go:build wasip1

package main

import (
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
)

func init() {
	sdk.RegisterTools(sdk.Tools{
		Info: sdk.Info{
			Name:        "calculator",
			Version:     "1.0.0",
			Description: "Evaluates arithmetic expressions.",
		},
		Specs: []sdk.ToolSpec{{
			Name:        "calculator",
			Description: "Evaluate an arithmetic expression with + - * / % ** (power), parentheses and decimals, e.g. \"(2 + 3) * 4.5 ** 2\".",
			Parameters:  sdk.RawJSON(`{"type":"object","properties":{"expression":{"type":"string","description":"The arithmetic expression to evaluate."}},"required":["expression"]}`),
		}},
		Call: call,
	})
}

func call(name string, args sdk.Value) (sdk.Result, error) {
	ev := args.Get("expression")
	if !ev.Exists() {
		return sdk.Result{}, sdk.Errorf(abi.CodeBadInput, "missing argument \"expression\"")
	}
	expr, err := ev.Str()
	if err != nil {
		return sdk.Result{}, sdk.Errorf(abi.CodeBadInput, "argument \"expression\" must be a string")
	}
	v, err := evaluate(expr)
	if err != nil {
		ce := err.(*calcError)
		return sdk.Result{}, sdk.Errorf(ce.code, "%s", ce.msg)
	}
	return sdk.Text(format(v)), nil
}
