#!/usr/bin/env bash
# Ray (PyPI `ray` 2.60.0, CPU, hash-pinned) in its own venv with the trainer client's dependencies and pytest:
# scripts/test.d/65-ray.sh starts a local Ray and runs agentrt nodes as Ray actors (agentrt_client.ray).
set -euo pipefail
venv="$AGENTRT_CACHE/venv-ray"
req="$AGENTRT_ROOT/scripts/requirements-ray.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
