#!/usr/bin/env bash
# The real Hugging Face Hub client (PyPI `huggingface_hub`, hash-pinned) in its own venv: runtime/hfhub's tests
# have it download from a loopback hub into a cache that agentrt's resolver then reads (and the other way round).
set -euo pipefail
venv="$AGENTRT_CACHE/venv-hf"
req="$AGENTRT_ROOT/scripts/requirements-hf.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
