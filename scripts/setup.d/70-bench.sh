#!/usr/bin/env bash
# The side-by-side benchmark's Python side (bench/run.sh): strands-sglang 0.6.2 + strands-agents 1.62.0 (the
# system agentrt is compared with), matplotlib and numpy, hash-pinned (bench/requirements.txt), in a venv on
# Python >= 3.12 (strands-sglang >= 0.5.0 requires it). Without such a Python this step says so and skips: only
# the benchmark needs the venv, and its smoke test then fails loudly naming this step.
set -euo pipefail
venv="$AGENTRT_CACHE/venv-bench"
req="$AGENTRT_ROOT/bench/requirements.txt"
sum=$(sha256sum "$req" | cut -d' ' -f1)
[[ -f "$venv/.req" && "$(cat "$venv/.req")" == "$sum" ]] && exit 0
if ! py=$(bash "$AGENTRT_ROOT/bench/find-python.sh"); then
  echo "setup: 70-bench: skipped (no Python >= 3.12 for strands-sglang; set BENCH_PYTHON and re-run make setup)" >&2
  exit 0
fi
rm -rf "$venv" && "$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$req"
"$venv/bin/python" -c 'import strands, strands_sglang, matplotlib, numpy, transformers' 
{ "$venv/bin/python" --version; "$venv/bin/pip" freeze --disable-pip-version-check; } > "$venv/versions.txt"
echo "$sum" > "$venv/.req"
