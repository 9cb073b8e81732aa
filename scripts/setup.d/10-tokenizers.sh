#!/usr/bin/env bash
# Builds libtokenizers.a (Hugging Face tokenizers, Rust) from github.com/daulet/tokenizers' own sources with cargo.
# v1.22.1 is pinned: later versions pull a Rust dependency from a git repository, which CI cannot reach.
# Cargo.lock carries the crates' checksums; --locked makes cargo refuse anything else.
set -euo pipefail
version=v1.22.1
out="$AGENTRT_CACHE/lib/libtokenizers.a"
stamp="$AGENTRT_CACHE/lib/libtokenizers.version"
if [[ -f "$out" && "$(cat "$stamp" 2>/dev/null)" == "$version" ]]; then exit 0; fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
dir=$(cd "$AGENTRT_ROOT" && go mod download -json "github.com/daulet/tokenizers@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[[ -d "$dir" ]] || { echo "setup: go mod download github.com/daulet/tokenizers@$version failed" >&2; exit 1; }
work="$AGENTRT_CACHE/build/tokenizers-$version"
rm -rf "$work" && mkdir -p "$work" && cp -r "$dir"/. "$work" && chmod -R u+w "$work"
(cd "$work" && cargo build --release --locked)
mkdir -p "$AGENTRT_CACHE/lib"
cp "$work/target/release/libtokenizers.a" "$out"
echo "$version" > "$stamp"
rm -rf "$work/target"
