#!/usr/bin/env bash
# The long-horizon benchmark's smoke mode (bench/long_horizon.sh --smoke: one 40-turn episode per variant, both
# systems, the checker, the CPU sampler, the per-turn analysis, the report and its plots), so the harness cannot
# rot. The C documents tool and its Python port must agree: the strands-sglang trajectories must be token-identical
# to agentrt's.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${BENCH_VENV:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-bench}"
[[ -x "$venv/bin/python" ]] || { echo "long-horizon smoke: $venv is missing: run make setup (scripts/setup.d/70-bench.sh; it needs Python >= 3.12)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
BENCH_VENV="$venv" bash "$root/bench/long_horizon.sh" --smoke --out "$out"
python3 - "$out/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in runs if not r["ok"] or (r["system"] == "strands" and r["identical_to_agentrt"] != r["episodes"])]
turns = {(r["variant"], r["system"]): r["turns"] for r in runs}
if bad or len(runs) != 5 or turns.get(("grow32k", "agentrt")) != 40:
    sys.exit("long-horizon smoke: runs %s" % json.dumps(runs)[:2000])
PY
for p in cpu overhead gap bytes; do
  [[ -s "$out/long-horizon-$p.png" ]] || { echo "long-horizon smoke: plot $p missing" >&2; exit 1; }
done
grep -q '| grow32k | strands | 1 |' "$out/report.md" || { echo "long-horizon smoke: report without the strands row" >&2; cat "$out/report.md" >&2; exit 1; }
echo "long-horizon smoke: ok"
