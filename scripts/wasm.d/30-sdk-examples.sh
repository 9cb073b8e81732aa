#!/usr/bin/env bash
# Builds the example plugins of the AssemblyScript, C and Rust SDKs into .wasm files committed next to their sources,
# with the functions `make plugin` uses (scripts/lib/plugin-build.sh). The output is byte-reproducible (`make
# wasm-check`): fixed toolchain versions (scripts/setup.d/40-wasm-toolchains.sh), repo-relative source paths (Rust and
# AssemblyScript embed them in panic/abort messages), no debug info, no timestamps; checked by building in two
# different directories.
set -euo pipefail
cd "$(dirname "$0")/../.."
env_file="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/wasm-toolchains.env"
[[ -f "$env_file" ]] || { echo "wasm: $env_file is missing: run 'make setup' (scripts/setup.d/40-wasm-toolchains.sh)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$env_file"
export AGENTRT_ROOT=$PWD
# shellcheck source=../lib/plugin-build.sh
source scripts/lib/plugin-build.sh
PLUGIN_BUILD_TMP=$(mktemp -d)
trap 'rm -rf "$PLUGIN_BUILD_TMP"' EXIT

# One example per SDK and plugin kind (plugins/examples/README.md): the SDK references' code blocks are these files.
for d in plugins/examples/c-*/; do
  d=${d%/}; name=$(basename "$d"); name=${name#c-}; name=${name//-/_}
  plugin_build_c "$d/$name.wasm" "$d"/*.c
done
for d in plugins/examples/rust-*/; do
  d=${d%/}; name=$(basename "$d"); name=${name#rust-}; name=${name//-/_}
  plugin_build_rust "$d/$name.wasm" "$(ls "$d"/*.rs)" "$name"
done
for d in plugins/examples/as-*/; do
  d=${d%/}; name=$(basename "$d"); name=${name#as-}; name=${name//-/_}
  plugin_build_as "$d/$name.wasm" "$d/assembly/index.ts"
done

# Test plugins of plugins/examples TestSDKFaults (crashes and logging in each SDK).
plugin_build_c plugins/examples/testdata/fault_c.wasm plugins/examples/testdata/fault.c
plugin_build_rust plugins/examples/testdata/fault_rust.wasm plugins/examples/testdata/fault.rs fault_rust
plugin_build_as plugins/examples/testdata/fault_as.wasm plugins/examples/testdata/fault-as/assembly/index.ts
# Test plugins of plugins/examples TestSDKHooks (the hook side of each SDK).
plugin_build_c plugins/examples/testdata/hook_c.wasm plugins/examples/testdata/hook.c
plugin_build_rust plugins/examples/testdata/hook_rust.wasm plugins/examples/testdata/hook.rs hook_rust
plugin_build_as plugins/examples/testdata/hook_as.wasm plugins/examples/testdata/hook-as/assembly/index.ts
