#!/usr/bin/env bash
# `make plugin DIR=path/to/plugin [OUT=file.wasm] [SDK=c|rust|assemblyscript|go]`: builds one plugin with the SDK
# its files name and the toolchains `make setup` installed (scripts/lib/plugin-build.sh: the commands agentrt's own
# examples are built with). The SDK is found from DIR's files unless SDK is set:
#   assembly/index.ts  AssemblyScript (imports "agentrt/assembly/index", re-exports "agentrt/assembly/exports")
#   lib.rs, src/lib.rs or one *.rs   Rust (the crate `agentrt`; no dependencies beyond it, no cargo)
#   *.c                C (every .c file, with agentrt.h on the include path)
#   *.go               Go (a package of agentrt's module, or of a module that requires github.com/agentrt/agentrt)
# OUT defaults to DIR/NAME.wasm, NAME being DIR's name without an as-/c-/rust-/go- prefix, dashes as underscores
# (Rust: also the crate name).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-}
out=${2:-}
usage="usage: make plugin DIR=path/to/plugin [OUT=file.wasm] [SDK=c|rust|assemblyscript|go]"
[[ -n "$dir" ]] || { echo "$usage" >&2; exit 2; }
[[ -d "$dir" ]] || { echo "plugin: DIR=$dir is not a directory" >&2; exit 2; }
dir=$(cd "$dir" && pwd)
env_file="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/wasm-toolchains.env"
[[ -f "$env_file" ]] || { echo "plugin: $env_file is missing: run 'make setup' first (it installs the SDK toolchains)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$env_file"
export AGENTRT_ROOT=$root
# shellcheck source=lib/plugin-build.sh
source "$root/scripts/lib/plugin-build.sh"
PLUGIN_BUILD_TMP=$(mktemp -d)
trap 'rm -rf "$PLUGIN_BUILD_TMP"' EXIT

sdk=${SDK:-}
rs=()
if [[ -z "$sdk" ]]; then
  if [[ -f "$dir/assembly/index.ts" ]]; then sdk=assemblyscript
  elif compgen -G "$dir/*.rs" >/dev/null || [[ -f "$dir/src/lib.rs" ]]; then sdk=rust
  elif compgen -G "$dir/*.c" >/dev/null; then sdk=c
  elif compgen -G "$dir/*.go" >/dev/null; then sdk=go
  else
    echo "plugin: no plugin sources in $dir (assembly/index.ts, *.rs, *.c or *.go); set SDK= to say which" >&2
    exit 2
  fi
fi
name=$(basename "$dir")
name=${name#assemblyscript-}; name=${name#as-}; name=${name#rust-}; name=${name#go-}; name=${name#c-}
name=${name//-/_}
[[ -n "$out" ]] || out=$dir/$name.wasm
case $out in /*) ;; *) out=$PWD/$out ;; esac
# Sources under the checkout are named relative to it (the same bytes in any checkout).
rel() { case $1 in "$root"/*) echo "${1#"$root"/}" ;; *) echo "$1" ;; esac; }

case $sdk in
  c)
    srcs=()
    for f in "$dir"/*.c; do srcs+=("$(rel "$f")"); done
    plugin_build_c "$out" "${srcs[@]}" ;;
  rust)
    if [[ -f "$dir/lib.rs" ]]; then crate=$dir/lib.rs
    elif [[ -f "$dir/src/lib.rs" ]]; then crate=$dir/src/lib.rs
    else
      rs=("$dir"/*.rs)
      [[ ${#rs[@]} -eq 1 ]] || { echo "plugin: $dir has ${#rs[@]} .rs files: name the crate root lib.rs" >&2; exit 2; }
      crate=${rs[0]}
    fi
    plugin_build_rust "$out" "$(rel "$crate")" "$name" ;;
  assemblyscript|as)
    plugin_build_as "$out" "$(rel "$dir/assembly/index.ts")" ;;
  go)
    plugin_build_go "$out" "$dir" ;;
  *)
    echo "plugin: SDK=$sdk: want c, rust, assemblyscript or go" >&2; exit 2 ;;
esac
echo "plugin: $out ($sdk, $(wc -c <"$out") bytes, sha256 $(sha256sum "$out" | cut -c1-12)); try: agentrt plugin inspect $out" >&2
