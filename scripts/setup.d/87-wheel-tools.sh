#!/usr/bin/env bash
# The wheel's build tools (PyPI setuptools and auditwheel, hash-pinned) in their own venv: `make wheel` builds
# agentrt's wheel with setuptools and tags it with the manylinux policy auditwheel finds the binary meets. The
# wheel's own dependencies go to $AGENTRT_CACHE/wheelhouse, for the test that installs it into a fresh venv.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-wheel"
req="$AGENTRT_ROOT/scripts/requirements-wheel.txt"
deps="$AGENTRT_ROOT/scripts/requirements-wheel-deps.txt"
sum=$(cat "$req" "$deps" | sha256sum | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
rm -rf "$AGENTRT_CACHE/wheelhouse"
"$venv/bin/pip" download --quiet --disable-pip-version-check --require-hashes --only-binary=:all: --no-deps \
	-d "$AGENTRT_CACHE/wheelhouse" -r "$deps"
echo "$sum" > "$venv/.req"
