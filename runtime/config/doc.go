// Package config is runtime.toml: the shape of every section (Config, with the components' own tables such as
// sglang.Config and frontdoor.Config), their defaults (DefaultConfig, DefaultAgent), validation, and loading (Load):
// strict decoding, where an unknown or mistyped key is an error naming the file, line and key; path expansion. An
// agent's model is a folder when one of that name exists, else a Hugging Face model id (Agent.Hub; resolved later,
// by runtime/hfhub). It is the only package that imports the TOML decoder, and it imports none of the packages that
// use a Config (the loop, runtime/rollout, runtime/system): runtime/system turns a Config into running parts.
package config
