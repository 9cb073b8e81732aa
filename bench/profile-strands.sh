#!/usr/bin/env bash
# cProfile of bench/strands_driver.py (where strands-sglang's CPU goes), against a fresh zero-latency emulator.
# usage: bench/profile-strands.sh OUT_DIR [EPISODES] [CONCURRENCY]   writes OUT_DIR/strands-profile.txt
# Needs bin/agentrt-like binary at OUT_DIR/agentrt (bench/run.sh builds it) and the bench venv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?out dir}; eps=${2:-500}; conc=${3:-64}
py=${BENCH_VENV:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-bench}/bin/python
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
work=$(mktemp -d)
"$out/agentrt" emulate --model "$model" --addr 127.0.0.1:0 --seed "${BENCH_SEED:-1}" > "$work/addr" 2> "$work/emu.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do [[ -s "$work/addr" ]] && break; sleep 0.1; done
url=$(head -1 "$work/addr")
python3 -c "
import sys
for i in range($eps // 4): print('{\"id\": \"p%d\", \"prompt\": \"Add %d+%d, %d-3, %d*4 and 7*%d.\"}' % (i, i, i + 1, i + 2, i + 3, i))
" > "$work/prompts.jsonl"
"$py" -m cProfile -o "$work/prof" "$here/strands_driver.py" --url "$url" --model "$model" --prompts "$work/prompts.jsonl" \
  --out "$work/out.jsonl" --concurrency "$conc" --n 4 2> "$work/driver.err" || { cat "$work/driver.err" >&2; exit 1; }
"$py" - "$work/prof" > "$out/strands-profile.txt" <<'PY'
import pstats, sys, io
s = io.StringIO()
p = pstats.Stats(sys.argv[1], stream=s)
p.sort_stats("cumulative").print_stats(40)
lines = s.getvalue().splitlines()
start = next(i for i, l in enumerate(lines) if "ncalls" in l)
print("\n".join(l.replace("/root/.cache/agentrt/venv-bench/lib/python3.12/site-packages/", "") for l in lines[start - 3:]))
PY
echo "wrote $out/strands-profile.txt" >&2
