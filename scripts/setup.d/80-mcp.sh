#!/usr/bin/env bash
# The official MCP Python SDK (PyPI `mcp`, hash-pinned) in its own venv: runtime/mcptool's tests run a real MCP
# server built on it (runtime/mcptool/testdata/server.py), over stdio and streamable HTTP.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-mcp"
req="$AGENTRT_ROOT/scripts/requirements-mcp.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
