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
# The checker is not vacuous: each kind of corruption of a passing strands-sglang output must fail it.
for kind in logprob token mask drop; do
  python3 - "$out/strands-0-c8.jsonl" "$out/bad-$kind.jsonl" "$kind" <<'PY'
import json, math, sys
src, dst, kind = sys.argv[1:]
ts = [json.loads(l) for l in open(src)]
t = ts[0]
if kind == "logprob":
    t["logprobs"][7] = math.nextafter(t["logprobs"][7], 0.0)
elif kind == "token":
    t["token_ids"][-2] += 1
elif kind == "mask":
    t["loss_mask"][-1] = 0
else:
    ts = ts[1:]  # a trajectory missing: its logged requests belong to no turn
open(dst, "w").write("".join(json.dumps(x) + "\n" for x in ts))
PY
  if python3 "$root/bench/check.py" --log "$out/strands-0-c8.log" --trajs "$out/bad-$kind.jsonl" > "$out/bad-$kind.check"; then
    echo "bench smoke: the checker accepted a corrupted trajectory ($kind)" >&2; exit 1
  fi
done
echo "bench smoke: ok"
