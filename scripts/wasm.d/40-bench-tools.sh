#!/usr/bin/env bash
# Builds the benchmark's tool plugins (bench/tools/*/*.c, plugins/sdk/c) into .wasm files committed next to their
# sources, byte-reproducibly (`make wasm-check`), with the functions `make plugin` uses (scripts/lib/plugin-build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
env_file="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/wasm-toolchains.env"
[[ -f "$env_file" ]] || { echo "wasm: $env_file is missing: run 'make setup' (scripts/setup.d/40-wasm-toolchains.sh)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$env_file"
export AGENTRT_ROOT=$PWD
# shellcheck source=../lib/plugin-build.sh
source scripts/lib/plugin-build.sh
for d in bench/tools/*/; do
  d=${d%/}
  name=$(basename "$d")
  plugin_build_c "$d/$name.wasm" "$d"/*.c
done
