#!/usr/bin/env bash
# The reference libraries that generate golden data (transformers, tokenizers, jinja2), hash-pinned, in a venv.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-golden"
req="$AGENTRT_ROOT/scripts/requirements-golden.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
