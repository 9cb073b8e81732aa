#!/usr/bin/env bash
# Builds the built-in plugins written in C (plugins/builtin/<name>/*.c -> <name>.wasm, embedded by
# plugins/builtin/embed.go) with plugins/sdk/c, the way 30-sdk-examples.sh builds the C SDK example. The output is
# byte-reproducible (`make wasm-check`): the pinned clang-14 + wasi-libc of scripts/setup.d/40-wasm-toolchains.sh, no
# debug info, symbols stripped, nothing path- or time-dependent. Generated headers are committed sources, not rebuilt
# here (limiter/isprint.h: `go run ./plugins/builtin/limiter/isprintgen`).
set -euo pipefail
cd "$(dirname "$0")/../.."
env_file="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/wasm-toolchains.env"
[[ -f "$env_file" ]] || { echo "wasm: $env_file is missing: run 'make setup' (scripts/setup.d/40-wasm-toolchains.sh)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$env_file"

for d in plugins/builtin/*/; do
  d=${d%/}
  compgen -G "$d/*.c" >/dev/null || continue
  name=$(basename "$d")
  "$AGENTRT_WASM_CLANG" --target=wasm32-wasi --sysroot="$AGENTRT_WASM_SYSROOT" -O2 -Wall -Wextra -Werror \
    -mexec-model=reactor -Wl,--strip-all -I plugins/sdk/c -I "$d" -o "$d/$name.wasm" "$d"/*.c plugins/sdk/c/agentrt.c
  chmod 644 "$d/$name.wasm" # the linker marks its output executable; the committed mode is 644
done
