// Package config loads runtime.toml into a runtime.Config: strict decoding (an unknown or mistyped key is an
// error naming the file, line and key), defaults, path expansion and validation. It is the only package that
// imports the TOML decoder.
package config
