#!/usr/bin/env bash
# The side-by-side benchmark's smoke mode (bench/run.sh --smoke: tiny N, both systems, the checker, the load
# generator, the drift path, the report), so the harness cannot rot. Fails if any run fails the checker.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${BENCH_VENV:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-bench}"
[[ -x "$venv/bin/python" ]] || { echo "bench smoke: $venv is missing: run make setup (scripts/setup.d/70-bench.sh; it needs Python >= 3.12)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
BENCH_VENV="$venv" bash "$root/bench/run.sh" --smoke --out "$out"
grep -q 'All runs passed' "$out/report.md" || { echo "bench smoke: the report does not say all runs passed" >&2; cat "$out/report.md" >&2; exit 1; }
[[ -s "$out/side-by-side-episodes-per-s.png" && -s "$out/side-by-side-cpu-per-episode.png" ]] || { echo "bench smoke: plots missing" >&2; exit 1; }
echo "bench smoke: ok"
