#!/usr/bin/env bash
# Measures agentrt's own cost per turn: `agentrt emulate` (a separate process, so its CPU is not counted) and
# `agentrt run` at a given concurrency. Prints one JSON line: episodes, turns, wall, episodes/s, CPU-seconds of
# agentrt run per episode and per turn, peak RSS, and the per-turn client gap from the emulator's request log
# (time from a response leaving the emulator to the episode's next request arriving: decode, parse, hooks,
# calculator tool, template delta, tokenization, HTTP; on a shared 2-core box it includes waiting for a core),
# and agentrt's own in-process measure of it (overhead_us, from each trajectory's per-turn overhead_ms).
# cpu_us_per_turn_steady leaves out the process's start-up, measured by a run of one prompt first (startup_cpu_s).
#
# usage: bench/agent_loop.sh EPISODES CONCURRENCY [LATENCY]   e.g. bench/agent_loop.sh 2000 1000
#        LATENCY is the emulator's latency model (agentrt emulate --latency), e.g. "1s" or "20ms,0,100us".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
episodes=${1:?episodes}
conc=${2:?concurrency}
latency=${3:-}
bin=${AGENTRT_BIN:-$root/bin/agentrt}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
work=$(mktemp -d)
trap 'kill $emu_pid 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" --log "$work/emu.log" \
  --max-running-requests 0 > "$work/addr" 2> "$work/emu.err" &
emu_pid=$!
for _ in $(seq 100); do [[ -s "$work/addr" ]] && break; sleep 0.1; done
url=$(head -1 "$work/addr")
[[ -n "$url" ]] || { cat "$work/emu.err" >&2; exit 1; }

python3 - "$episodes" > "$work/prompts.jsonl" <<'PY'
import sys
tasks = ["What is {a}*{b}+{c}?", "Compute ({a}+{b})*{c} and {d}/4.", "Add {a}+{b}, {c}-{d} and {a}*{d}.",
         "What is {a}*{b}?"]
for i in range(int(sys.argv[1])):
    a, b, c, d = 3 + i % 17, 5 + i % 13, 7 + i % 11, 8 + i % 7
    print('{"id": "b%d", "prompt": "%s"}' % (i, tasks[i % len(tasks)].format(a=a, b=b, c=c, d=d)))
PY

sed -e "s#^workers = .*#workers = [\"$url\"]#" -e "s#^concurrency = .*#concurrency = $conc#" \
    -e "s#^max_in_flight_per_worker = .*#max_in_flight_per_worker = $((conc + 16))#" \
    -e "s#^model = .*#model = \"$model\"#" "$root/runtime.toml" > "$work/bench.toml"

# The process's start-up (tokenizer, template self-test, plugins: ~1 s of CPU) is measured by a run of the first
# prompt alone and reported apart: cpu_us_per_turn counts it, cpu_us_per_turn_steady does not.
head -1 "$work/prompts.jsonl" > "$work/one.jsonl"
/usr/bin/time -f '%e %U %S %M' -o "$work/time1" "$bin" run "$work/bench.toml" --prompts "$work/one.jsonl" \
  --out "$work/one.out.jsonl" --quiet --concurrency "$conc" -n "${BENCH_SAMPLES:-1}" 2> "$work/run1.err" || { cat "$work/run1.err" >&2; exit 1; }
logged=$(wc -l < "$work/emu.log")
/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$bin" run "$work/bench.toml" --prompts "$work/prompts.jsonl" \
  --out "$work/out.jsonl" --quiet --concurrency "$conc" -n "${BENCH_SAMPLES:-1}" ${AGENTRT_CPUPROFILE:+--cpuprofile "$AGENTRT_CPUPROFILE"} 2> "$work/run.err" || { cat "$work/run.err" >&2; exit 1; }
read -r wall user sys rss_kb < "$work/time"
tail -n +$((logged + 1)) "$work/emu.log" > "$work/emu.run.log"
gaps=$(python3 "$here/turn_gaps.py" "$work/emu.run.log")
read -r _ user1 sys1 _ < "$work/time1"
python3 - "$work/out.jsonl" "$wall" "$user" "$sys" "$rss_kb" "$conc" "$gaps" "$latency" "$work/one.out.jsonl" "$user1" "$sys1" <<'PY'
import json, sys
out, wall, user, sys_, rss, conc, gaps, lat, out1, user1, sys1 = sys.argv[1:]
trajs = [json.loads(l) for l in open(out)]
turns = sum(int(t["metrics"].get("turns", 0)) for t in trajs)
turns1 = sum(int(json.loads(l)["metrics"].get("turns", 0)) for l in open(out1))
cpu1 = float(user1) + float(sys1)
status = {}
for t in trajs:
    status[t["status"]] = status.get(t["status"], 0) + 1
cpu = float(user) + float(sys_)
# The runtime's own time per turn, measured in process (TurnInfo.overhead_ms: everything but waiting on SGLang
# and tools), for turns after the first (the first also renders the whole first prompt).
over = sorted(1000 * s["info"]["overhead_ms"] for t in trajs for s in t["segments"] if s.get("info") and s["turn"] > 0)
first = sorted(1000 * s["info"]["overhead_ms"] for t in trajs for s in t["segments"] if s.get("info") and s["turn"] == 0)
pct = lambda xs, q: round(xs[min(len(xs) - 1, int(q * len(xs)))], 1) if xs else None
print(json.dumps({"episodes": len(trajs), "concurrency": int(conc), "latency": lat, "turns": turns, "status": status,
                  "wall_s": float(wall), "episodes_per_s": round(len(trajs) / float(wall), 1),
                  "cpu_s": round(cpu, 2), "cpu_ms_per_episode": round(1000 * cpu / len(trajs), 3),
                  "cpu_us_per_turn": round(1e6 * cpu / max(turns, 1), 1),
                  "startup_cpu_s": round(cpu1, 2),
                  "cpu_us_per_turn_steady": round(1e6 * (cpu - cpu1) / max(turns - turns1, 1), 1),
                  "peak_rss_mb": round(int(rss) / 1024, 1),
                  "overhead_us": {"later_turns": len(over), "p50": pct(over, 0.5), "p90": pct(over, 0.9), "p99": pct(over, 0.99),
                                  "first_turn_p50": pct(first, 0.5)},
                  "turn_gap": json.loads(gaps)}))
PY
