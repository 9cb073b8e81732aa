// Package parsers holds the built-in, model-specific tool-call parsers. They are compiled to WebAssembly and
// embedded in the binary; the plugin host runs them like any other parser plugin.
package parsers
