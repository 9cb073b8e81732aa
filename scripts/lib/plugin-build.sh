# Functions that build one plugin with an agentrt SDK and the toolchains `make setup` installed. Sourced by
# scripts/plugin.sh (`make plugin DIR=...`, what plugin authors run) and scripts/wasm.d/*.sh (agentrt's committed
# modules), so authors and agentrt's own build use the same commands.
#
# Needs AGENTRT_ROOT (the checkout), the toolchain paths of $AGENTRT_CACHE/wasm-toolchains.env (AGENTRT_WASM_CLANG,
# AGENTRT_WASM_SYSROOT, AGENTRT_WASM_RUSTC, AGENTRT_WASM_ASC) and PLUGIN_BUILD_TMP (a scratch directory the caller
# removes). Paths may be absolute or relative to AGENTRT_ROOT; the builds run there, so that the committed modules,
# built from repo-relative paths, are the same bytes in any checkout (`make wasm-check`).

# plugin_build_c OUT SRC...: a C plugin with plugins/sdk/c (clang-14, wasi-libc, reactor, symbols stripped).
plugin_build_c() {
  local out=$1; shift
  (cd "$AGENTRT_ROOT" && "$AGENTRT_WASM_CLANG" --target=wasm32-wasi --sysroot="$AGENTRT_WASM_SYSROOT" -O2 -Wall -Wextra -Werror \
    -mexec-model=reactor -Wl,--strip-all -I plugins/sdk/c -o "$out" "$@" plugins/sdk/c/agentrt.c)
  (cd "$AGENTRT_ROOT" && chmod 644 "$out") # the linker marks its output executable; the committed mode is 644
}

# plugin_build_rust OUT CRATE_ROOT NAME: a Rust cdylib with plugins/sdk/rust as the crate `agentrt` (Debian's rustc
# 1.63 and its wasm32-wasi std, no cargo). --remap-path-prefix: rustc writes an extern crate's source paths into
# panic locations; the checkout's path is left out.
plugin_build_rust() {
  local out=$1 src=$2 name=$3
  local flags=(--edition 2021 --target wasm32-wasi -C opt-level=s -C panic=abort --remap-path-prefix "$AGENTRT_ROOT/=")
  if [[ ! -f "$PLUGIN_BUILD_TMP/libagentrt.rlib" ]]; then
    (cd "$AGENTRT_ROOT" && "$AGENTRT_WASM_RUSTC" "${flags[@]}" --crate-type rlib --crate-name agentrt \
      -o "$PLUGIN_BUILD_TMP/libagentrt.rlib" plugins/sdk/rust/src/lib.rs)
  fi
  (cd "$AGENTRT_ROOT" && "$AGENTRT_WASM_RUSTC" "${flags[@]}" --crate-type cdylib --crate-name "$name" -C lto -C strip=symbols \
    --extern agentrt="$PLUGIN_BUILD_TMP/libagentrt.rlib" -o "$out" "$src" && chmod 644 "$out")
}

# plugin_build_as OUT ENTRY: an AssemblyScript plugin. The SDK is the package `agentrt` (imports
# "agentrt/assembly/index" and "agentrt/assembly/exports"), found through asc --path; its agentrtAbort replaces
# AssemblyScript's env.abort import, which the host refuses.
plugin_build_as() {
  local out=$1 entry=$2
  mkdir -p "$PLUGIN_BUILD_TMP/as-path"
  ln -sfn "$AGENTRT_ROOT/plugins/sdk/assemblyscript" "$PLUGIN_BUILD_TMP/as-path/agentrt"
  (cd "$AGENTRT_ROOT" && "$AGENTRT_WASM_ASC" "$entry" -O3 --runtime incremental --exportStart _initialize \
    --path "$PLUGIN_BUILD_TMP/as-path" --use 'abort=~lib/agentrt/assembly/index/agentrtAbort' -o "$out" && chmod 644 "$out")
}

# plugin_build_go OUT PKGDIR: a Go plugin (the Go SDK, plugins/sdk/go) built as a WASI reactor, -buildmode=c-shared.
# PKGDIR is inside agentrt's module or in a module of its own that requires github.com/agentrt/agentrt.
plugin_build_go() {
  local out=$1 dir=$2
  case $out in /*) ;; *) out=$AGENTRT_ROOT/$out ;; esac
  (cd "$AGENTRT_ROOT" && cd "$dir" && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags='-s -w -buildid=' -buildmode=c-shared -o "$out" .)
}
