package parsers

import "strings"

// WasmName is the plugin name in the manifest of the built-in parsers module.
const WasmName = "agentrt-parsers"

// WasmConfig returns the plugin config (JSON) that selects parser name in the Wasm module.
//
// # Errors
//
// ErrUnknownParser (wrapped) when name is not one of Names.
func WasmConfig(name string) ([]byte, error) {
	if _, err := New(name); err != nil {
		return nil, err
	}
	return append(appendQuoted([]byte(`{"parser":`), name), '}'), nil
}

// WasmConfigSchema returns the JSON Schema of the module's config, as its manifest declares it.
func WasmConfigSchema() string {
	return `{"type":"object","properties":{"parser":{"enum":["` + strings.Join(Names(), `","`) +
		`"]}},"required":["parser"]}`
}
