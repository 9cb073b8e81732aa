#!/usr/bin/env bash
# Builds every committed Wasm module from source: each scripts/wasm.d/*.sh builds one family.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in scripts/wasm.d/*.sh; do
  [[ -e "$b" ]] || continue
  echo "wasm: $(basename "$b")" >&2
  bash "$b"
done
