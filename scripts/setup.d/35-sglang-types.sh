#!/usr/bin/env bash
# SGLang's own request/response contract: PyPI sglang (--no-deps: only its pure-Python sources are read, never
# torch) plus msgspec, which sglang/api/v1/api_types.py imports; hash-pinned, in a venv. sglang/contract_test.go
# validates the client's requests and the emulator's responses with these types.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-sglang"
req="$AGENTRT_ROOT/sglang/testdata/contract/requirements.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: --no-deps -r "$req"
echo "$sum" > "$venv/.req"
