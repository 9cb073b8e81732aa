#!/usr/bin/env bash
# The Python trainer client's venv (websockets, numpy, pytest), hash-pinned; the client itself is installed
# into it by scripts/test.d/50-python-client.sh, from the working tree.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-client"
req="$AGENTRT_ROOT/clients/python/requirements.lock"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
