#!/usr/bin/env bash
# Builds the built-in tool-call parsers (parsers/wasm) into one Wasm parser plugin, parsers/wasm/parsers.wasm,
# which package parsers embeds. Byte-reproducible: -trimpath, no build id, no VCS stamp, fixed GOFLAGS.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=parsers/wasm/parsers.wasm
tmp=$(mktemp "${TMPDIR:-/tmp}/parsers.XXXXXX.wasm")
trap 'rm -f "$tmp"' EXIT
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 \
  go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags='-s -w -buildid=' -o "$tmp" ./parsers/wasm
cp "$tmp" "$out"
echo "wasm: $out $(wc -c <"$out") bytes sha256 $(sha256sum "$out" | cut -d' ' -f1)" >&2
