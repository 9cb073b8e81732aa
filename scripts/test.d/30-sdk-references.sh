#!/usr/bin/env bash
# Keeps the SDK reference pages (plugins/sdk/{c,rust,assemblyscript,go}/README.md) true. For each page, in a fresh
# folder outside the checkout, as a new plugin author would work from the page alone:
#   1. writes every code block tagged `file=PATH` to PATH; each must equal the example it names (`example=` under
#      plugins/examples), so the page, the committed example and what CI builds are one text;
#   2. runs every `bash run` block, in order (`make -C "$AGENTRT" plugin ...`, `agentrt plugin test ...`, Go's
#      go.mod), which must succeed;
#   3. loads the tool, hook and reward it built through the plugin host and checks them (plugins/examples
#      TestReferencePlugins: typed arguments and config, a hook's state and stop, a reward and its metrics).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export AGENTRT=$root
# `agentrt` for the pages' commands: bin/agentrt (make test-extra builds it).
agentrt_bin=${AGENTRT_BIN:-$root/bin/agentrt}
[[ -x "$agentrt_bin" ]] || { echo "sdk-references: $agentrt_bin is missing: make build" >&2; exit 1; }
mkdir -p "$tmp/bin"
ln -s "$agentrt_bin" "$tmp/bin/agentrt"
export PATH="$tmp/bin:$PATH"

# blocks FILE: each fenced block as "INFO<TAB>INDEX" lines; block FILE INDEX prints block INDEX (1-based).
blocks() { awk '/^```/ { if (inb) { inb = 0; next } n++; inb = 1; sub(/^```/, ""); print $0 "\t" n; next }' "$1"; }
block() { awk -v want="$2" '/^```/ { if (inb) { inb = 0; next } n++; inb = 1; next } inb && n == want { print }' "$1"; }

pass=0 fail=0 modules=()
declare -A kind_of=([repeat]=tool [stop-phrase]=hook [reward]=reward)
for sdk in c rust assemblyscript go; do
  page=$root/plugins/sdk/$sdk/README.md
  w=$tmp/$sdk
  mkdir -p "$w"
  ok=1 files=0 runs=0
  while IFS=$'\t' read -r info idx; do
    file=$(sed -n 's/.* file=\([^ ]*\).*/\1/p' <<<"$info")
    example=$(sed -n 's/.* example=\([^ ]*\).*/\1/p' <<<"$info")
    if [[ -n "$file" ]]; then
      mkdir -p "$w/$(dirname "$file")"
      block "$page" "$idx" >"$w/$file"
      files=$((files + 1))
      if [[ -z "$example" ]] || ! diff -u "$root/plugins/examples/$example" "$w/$file" >"$tmp/diff"; then
        echo "FAIL $sdk: the block for $file differs from plugins/examples/$example:"; head -20 "$tmp/diff"; ok=0
      fi
    elif [[ "$info" == "bash run" ]]; then
      runs=$((runs + 1))
      if ! out=$(cd "$w" && bash -euo pipefail -c "$(block "$page" "$idx")" 2>&1); then
        echo "FAIL $sdk: run block $runs:"; block "$page" "$idx" | sed 's/^/    /'; echo "$out" | tail -20; ok=0
      fi
    fi
  done < <(blocks "$page")
  if [[ $files -lt 3 || $runs -lt 3 ]]; then
    echo "FAIL $sdk: $files file blocks and $runs run blocks, want a tool, a hook and a reward"; ok=0
  fi
  for d in "${!kind_of[@]}"; do
    m=$w/$d/${d//-/_}.wasm
    if [[ -f "$m" ]]; then modules+=("${kind_of[$d]}=$m"); else echo "FAIL $sdk: $m was not built"; ok=0; fi
  done
  if [[ $ok -eq 1 ]]; then echo "ok   $sdk reference: $files blocks equal their examples, $runs commands ran"; pass=$((pass + 1)); else fail=$((fail + 1)); fi
done

# The modules built from the pages, loaded and checked through the plugin host.
if (cd "$root" && AGENTRT_REFERENCE_WASM="${modules[*]}" go test -count=1 -run '^TestReferencePlugins$' ./plugins/examples/); then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
fi
echo "sdk-references: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
