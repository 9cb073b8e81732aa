#!/usr/bin/env bash
# The official Kubernetes Python client (PyPI `kubernetes`, hash-pinned) in its own venv: scripts/test.d's
# 80-k8s-manifests.sh validates deploy/k8s/agentrt.yaml against its models (the Kubernetes API's schema; no
# cluster needed).
set -euo pipefail
venv="$AGENTRT_CACHE/venv-k8s"
req="$AGENTRT_ROOT/scripts/requirements-k8s.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
