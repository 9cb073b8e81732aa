// Package plugin is the WebAssembly plugin host: it compiles, pools and sandboxes parser, tool and hook modules
// (wazero) and exposes them through typed facades. It is the only package that imports wazero.
package plugin
