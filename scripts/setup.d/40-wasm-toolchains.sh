#!/usr/bin/env bash
# Installs the guest toolchains of the non-Go plugin SDKs (plugins/sdk/{assemblyscript,c,rust}) and proves that each
# one builds a WASI reactor module that wazero instantiates and calls.
#   C:              Debian clang-14 + wasm-ld (lld-14) + wasi-libc + compiler-rt for wasm32      (apt, exact versions)
#   Rust:           Debian rustc 1.63 + its wasm32-wasi standard library, linked by rust-lld (lld-14) (apt, exact versions)
#   AssemblyScript: asc 0.28.20 from npm, installed with `npm ci` from plugins/sdk/assemblyscript/package-lock.json
#                   (sha512 integrity for every package) into $AGENTRT_CACHE/npm-as
# The Debian versions are bookworm's original main-archive builds, which a point release never replaces, so the
# committed .wasm files rebuild byte for byte (scripts/wasm.d/30-sdk-examples.sh, `make wasm-check`).
# Tool paths go to $AGENTRT_CACHE/wasm-toolchains.env, which scripts/wasm.d/30-sdk-examples.sh sources.
# rustup's toolchains are not used: their wasm32 std downloads from a host outside the package registries.
set -euo pipefail
cache=${AGENTRT_CACHE:?AGENTRT_CACHE must be set (scripts/setup.sh sets it)}
root=${AGENTRT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}

apt_pkgs=(
  clang-14=1:14.0.6-12
  lld-14=1:14.0.6-12
  libclang-rt-14-dev-wasm32=1:14.0.6-12
  wasi-libc=0.0~git20220510.9886d3d-2
  rustc=1.63.0+dfsg1-2
  libstd-rust-dev-wasm32=1.63.0+dfsg1-2
)
stamp_dir="$cache/wasm-toolchains"
stamp="$stamp_dir/ok"
want_stamp=$(printf '%s\n' "${apt_pkgs[@]}" "$(sha256sum "$root/plugins/sdk/assemblyscript/package-lock.json")" "check-v1")

missing=()
for p in "${apt_pkgs[@]}"; do
  name=${p%%=*} version=${p#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
  [[ "$have" == "install ok installed $version" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" \
      && -x "$cache/npm-as/node_modules/.bin/asc" ]]; then
  exit 0
fi

if [[ ${#missing[@]} -gt 0 ]]; then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  echo "setup: apt-get install ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# AssemblyScript: the lock file pins every package and its sha512; npm ci refuses anything else.
command -v npm >/dev/null || { echo "setup: npm not found; install Node.js >= 20 (Debian: apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$cache/npm-as"
cp "$root/plugins/sdk/assemblyscript/package.json" "$root/plugins/sdk/assemblyscript/package-lock.json" "$cache/npm-as/"
(cd "$cache/npm-as" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)

mkdir -p "$stamp_dir"
cat > "$cache/wasm-toolchains.env" <<EOT
# Written by scripts/setup.d/40-wasm-toolchains.sh: the guest toolchains of the C, Rust and AssemblyScript SDKs.
export AGENTRT_WASM_CLANG=/usr/bin/clang-14
export AGENTRT_WASM_SYSROOT=/usr
export AGENTRT_WASM_RUSTC=/usr/bin/rustc
export AGENTRT_WASM_ASC="$cache/npm-as/node_modules/.bin/asc"
EOT
# shellcheck source=/dev/null
source "$cache/wasm-toolchains.env"

# Smoke check: each toolchain builds a reactor exporting add(i32,i32) -> i32; wazero instantiates it and calls it.
chk="$stamp_dir/check"
rm -rf "$chk" && mkdir -p "$chk"
cat > "$chk/add.c" <<'EOT'
__attribute__((export_name("add"))) int add(int a, int b) { return a + b; }
EOT
"$AGENTRT_WASM_CLANG" --target=wasm32-wasi --sysroot="$AGENTRT_WASM_SYSROOT" -O2 -mexec-model=reactor \
  -o "$chk/c.wasm" "$chk/add.c"
cat > "$chk/add.rs" <<'EOT'
#[no_mangle]
pub extern "C" fn add(a: i32, b: i32) -> i32 { a + b }
EOT
"$AGENTRT_WASM_RUSTC" --target wasm32-wasi --crate-type cdylib -C opt-level=2 -o "$chk/rust.wasm" "$chk/add.rs"
cat > "$chk/add.ts" <<'EOT'
export function add(a: i32, b: i32): i32 { return a + b; }
EOT
"$AGENTRT_WASM_ASC" "$chk/add.ts" -O3 --runtime stub --use abort= --exportStart _initialize -o "$chk/as.wasm"

# A throwaway Go module (outside the repo's module) drives wazero; the repo's go.sum already pins wazero.
mkdir -p "$chk/run"
cat > "$chk/run/go.mod" <<'EOT'
module wasmcheck

go 1.24

require github.com/tetratelabs/wazero v1.12.0
EOT
grep '^github.com/tetratelabs/wazero v1.12.0' "$root/go.sum" > "$chk/run/go.sum"
cat > "$chk/run/main.go" <<'EOT'
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

func main() {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	for _, f := range os.Args[1:] {
		bin, err := os.ReadFile(f)
		if err != nil {
			fail(f, err)
		}
		cm, err := rt.CompileModule(ctx, bin)
		if err != nil {
			fail(f, err)
		}
		cfg := wazero.NewModuleConfig().WithName("")
		if _, ok := cm.ExportedFunctions()["_initialize"]; ok {
			cfg = cfg.WithStartFunctions("_initialize")
		}
		mod, err := rt.InstantiateModule(ctx, cm, cfg)
		if err != nil {
			fail(f, err)
		}
		res, err := mod.ExportedFunction("add").Call(ctx, 2, 40)
		if err != nil || len(res) != 1 || res[0] != 42 {
			fail(f, fmt.Errorf("add(2, 40) = %v, %v; want 42", res, err))
		}
		fmt.Printf("setup: %s: reactor ok (%d bytes)\n", f, len(bin))
	}
}

func fail(f string, err error) {
	fmt.Fprintf(os.Stderr, "setup: %s: %v\n", f, err)
	os.Exit(1)
}
EOT
(cd "$chk/run" && GOWORK=off GOFLAGS=-mod=mod go run . "$chk/c.wasm" "$chk/rust.wasm" "$chk/as.wasm") >&2

printf '%s' "$want_stamp" > "$stamp"
