#!/usr/bin/env bash
# The scale-out benchmark's cpu mode at its smallest (bench/scale_out.sh cpu: 8 episodes of 2 CPython Wasm tool
# calls through 1 node, then through a 2-node cluster), so the harness cannot rot. It asserts correctness only:
# every episode delivered to the trainer once (the trainer's count and request status) and each ran its tool calls
# exactly once across the nodes (the nodes' agentrt_tool_calls_total), never a speed. Both nodes are pinned to the
# first CPU this process may use, so it runs on a one-core machine too.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
out=$(PROMPTS=2 N=4 TURNS=2 LOOP=0 CORES="$cpu $cpu" bash "$root/bench/scale_out.sh" cpu) || {
  echo "scale-out cpu smoke: bench/scale_out.sh cpu failed" >&2; echo "$out" >&2; exit 1; }
grep -q '^| 1 | 1 | [0-9.]* | [0-9.]* | n0 16 |' <<< "$out" && grep -q '^| 2 | 1 | [0-9.]* | [0-9.]* | n0 [0-9]* n1 [0-9]* |' <<< "$out" ||
  { echo "scale-out cpu smoke: rows missing:" >&2; echo "$out" >&2; exit 1; }
echo "scale-out cpu smoke: ok"
