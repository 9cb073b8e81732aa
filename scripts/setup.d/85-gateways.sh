#!/usr/bin/env bash
# The real SGLang Model Gateway, in two venvs: PyPI `smg` 1.13.0 and its earlier name `sglang-router` 0.3.2 (Rust
# binaries in the wheels), hash-pinned. cmd/agentrt's gateway test runs agentrt through each in front of emulators.
set -euo pipefail
py=$(command -v python3.11 || command -v python3)
for pair in "venv-smg:requirements-smg.txt" "venv-sglang-router:requirements-sglang-router.txt"; do
	venv="$AGENTRT_CACHE/${pair%%:*}"
	req="$AGENTRT_ROOT/scripts/${pair##*:}"
	sum=$(sha256sum "$req" | cut -d' ' -f1)
	[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && continue
	rm -rf "$venv" && "$py" -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
	echo "$sum" > "$venv/.req"
done
