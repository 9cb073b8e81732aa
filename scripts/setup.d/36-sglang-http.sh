#!/usr/bin/env bash
# SGLang's /generate receive path on CPU, for bench/sglang_wire.py: PyPI sglang 0.5.23 (--no-deps: only its
# pure-Python sources are read, never torch) and the packages of its HTTP server path (FastAPI, uvicorn with uvloop
# and httptools, pydantic, orjson, msgspec, pyzmq), hash-pinned (bench/sglang-http-requirements.txt), in a venv.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-sglang-http"
req="$AGENTRT_ROOT/bench/sglang-http-requirements.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
py=$(command -v python3.11 || command -v python3)
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: --no-deps -r "$req"
# sglang's own __init__ needs torch: bench/sglang_wire.py loads the modules it uses by path, as this check does
"$venv/bin/python" -c 'import fastapi, uvicorn, uvloop, httptools, orjson, pydantic, msgspec, zmq, importlib.util as u
s = u.spec_from_file_location("t", u.find_spec("sglang").submodule_search_locations[0] + "/api/v1/api_types.py")
s.loader.exec_module(u.module_from_spec(s))'
echo "$sum" > "$venv/.req"
