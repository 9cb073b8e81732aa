#!/usr/bin/env bash
# The official openai and anthropic Python SDKs, hash-pinned, in their own venv: the front-door tests
# (runtime/frontdoor/sdk_test.go) run agents written with them against agentrt's OpenAI/Anthropic endpoints.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-sdks"
req="$AGENTRT_ROOT/examples/frontdoor/requirements.lock"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
echo "$sum" > "$venv/.req"
