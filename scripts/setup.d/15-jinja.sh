#!/usr/bin/env bash
# Builds libagentrt_jinja.a (tito/jinja: our C ABI around minijinja, pinned in Cargo.toml, checksummed in
# Cargo.lock; --locked makes cargo refuse anything else) into $AGENTRT_CACHE/lib, where cgo finds it.
# Rebuilt only when the crate's sources change (their sha256 is the stamp).
set -euo pipefail
crate="$AGENTRT_ROOT/tito/jinja"
out="$AGENTRT_CACHE/lib/libagentrt_jinja.a"
stamp="$AGENTRT_CACHE/lib/libagentrt_jinja.version"
sum=$(cd "$crate" && cat Cargo.toml Cargo.lock src/*.rs | sha256sum | cut -d' ' -f1)
if [[ -f "$out" && "$(cat "$stamp" 2>/dev/null)" == "$sum" ]]; then exit 0; fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
target="$AGENTRT_CACHE/build/jinja-target"
(cd "$crate" && CARGO_TARGET_DIR="$target" cargo build --release --locked)
mkdir -p "$AGENTRT_CACHE/lib"
cp "$target/release/libagentrt_jinja.a" "$out.tmp" && mv "$out.tmp" "$out"
echo "$sum" > "$stamp"
