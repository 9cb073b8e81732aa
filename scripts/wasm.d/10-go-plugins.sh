#!/usr/bin/env bash
# Builds the committed Go-guest Wasm modules of the plugin system, byte-reproducibly (same Go toolchain, -trimpath,
# no VCS stamp, stripped):
#   plugins/builtin/<name>/<name>.wasm             built-in hook and tool, embedded by plugins/builtin/embed.go
#   plugins/examples/go-<name>/<name>.wasm         Go SDK examples, tested through the host
#   runtime/plugin/testdata/go/<name>/<name>.wasm  deliberately bad / probing Go guests for the host tests
# and the hand-written WAT fixtures of the host tests (runtime/plugin/testdata/wat/*.wat -> .wasm) with wabt's
# wat2wasm (Debian wabt 1.0.32, installed by scripts/setup.d/45-wabt.sh).
# Go modules are built as `make plugin` builds them (scripts/lib/plugin-build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
export AGENTRT_ROOT=$PWD
# shellcheck source=../lib/plugin-build.sh
source scripts/lib/plugin-build.sh

for d in plugins/builtin/*/ plugins/examples/go-*/ runtime/plugin/testdata/go/*/; do
  [[ -d "$d" ]] || continue
  d=${d%/}
  ls "$d"/*.go >/dev/null 2>&1 || continue
  name=$(basename "$d")
  name=${name#go-}
  name=${name//-/_}
  plugin_build_go "$d/$name.wasm" "$d"
done

if compgen -G 'runtime/plugin/testdata/wat/*.wat' >/dev/null; then
  command -v wat2wasm >/dev/null || { echo "wasm: wat2wasm not found: run scripts/setup.d/45-wabt.sh (apt-get install wabt)" >&2; exit 1; }
  for w in runtime/plugin/testdata/wat/*.wat; do
    wat2wasm --enable-all -o "${w%.wat}.wasm" "$w"
  done
fi
