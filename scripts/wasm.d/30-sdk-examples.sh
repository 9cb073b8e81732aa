#!/usr/bin/env bash
# Builds the example plugins of the AssemblyScript, C and Rust SDKs into .wasm files committed next to their sources.
# The output is byte-reproducible (`make wasm-check`): fixed toolchain versions (scripts/setup.d/40-wasm-toolchains.sh),
# repo-relative source paths (Rust and AssemblyScript embed them in panic/abort messages), no debug info, no timestamps;
# checked by building in two different directories.
set -euo pipefail
cd "$(dirname "$0")/../.."
env_file="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/wasm-toolchains.env"
[[ -f "$env_file" ]] || { echo "wasm: $env_file is missing: run 'make setup' (scripts/setup.d/40-wasm-toolchains.sh)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$env_file"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build_c OUT SRC...: a C plugin with plugins/sdk/c.
build_c() {
  local out=$1; shift
  "$AGENTRT_WASM_CLANG" --target=wasm32-wasi --sysroot="$AGENTRT_WASM_SYSROOT" -O2 -Wall -Wextra -Werror \
    -mexec-model=reactor -Wl,--strip-all -I plugins/sdk/c -o "$out" "$@" plugins/sdk/c/agentrt.c
}

# build_rust OUT SRC: a Rust plugin with plugins/sdk/rust (compiled once into an rlib).
# --remap-path-prefix: rustc makes an extern crate's source paths absolute in panic locations; strip the checkout path.
rust_flags=(--edition 2021 --target wasm32-wasi -C opt-level=s -C panic=abort --remap-path-prefix "$PWD/=")
build_rust() {
  local out=$1 src=$2 name
  name=$(basename "$out" .wasm)
  if [[ ! -f "$tmp/libagentrt.rlib" ]]; then
    "$AGENTRT_WASM_RUSTC" "${rust_flags[@]}" --crate-type rlib --crate-name agentrt \
      -o "$tmp/libagentrt.rlib" plugins/sdk/rust/src/lib.rs
  fi
  "$AGENTRT_WASM_RUSTC" "${rust_flags[@]}" --crate-type cdylib --crate-name "$name" -C lto -C strip=symbols \
    --extern agentrt="$tmp/libagentrt.rlib" -o "$out" "$src"
}

# build_as OUT ENTRY: an AssemblyScript plugin with plugins/sdk/assemblyscript.
build_as() {
  "$AGENTRT_WASM_ASC" "$2" -O3 --runtime incremental --exportStart _initialize \
    --use abort=plugins/sdk/assemblyscript/assembly/index/agentrtAbort -o "$1"
}

build_c plugins/examples/c-string-tools/string_tools.wasm plugins/examples/c-string-tools/string_tools.c
build_rust plugins/examples/rust-unit-convert/unit_convert.wasm plugins/examples/rust-unit-convert/unit_convert.rs
build_as plugins/examples/as-word-count/word_count.wasm plugins/examples/as-word-count/assembly/index.ts
build_rust plugins/examples/rust-reward/reward.wasm plugins/examples/rust-reward/reward.rs

# Test plugins of plugins/examples TestSDKFaults (crashes and logging in each SDK).
build_c plugins/examples/testdata/fault_c.wasm plugins/examples/testdata/fault.c
build_rust plugins/examples/testdata/fault_rust.wasm plugins/examples/testdata/fault.rs
build_as plugins/examples/testdata/fault_as.wasm plugins/examples/testdata/fault-as/assembly/index.ts
# Test plugins of plugins/examples TestSDKHooks (the hook side of each SDK).
build_c plugins/examples/testdata/hook_c.wasm plugins/examples/testdata/hook.c
build_rust plugins/examples/testdata/hook_rust.wasm plugins/examples/testdata/hook.rs
build_as plugins/examples/testdata/hook_as.wasm plugins/examples/testdata/hook-as/assembly/index.ts
