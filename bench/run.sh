#!/usr/bin/env bash
# Side-by-side benchmark: agentrt vs strands-sglang on the same workload against the same emulator, every
# output checked, plus the emulator's own capacity (physical limit) and the cost of drift for a text path.
#
# usage: bench/run.sh [--smoke] [--out DIR]
#   --smoke   tiny N (a minute or two): proves the harness works and the checker passes; what CI runs
#   --out     where raw results go (default: a temp dir); the report is always bench/results/side-by-side.md
#             and the plots bench/side-by-side-*.png, unless --smoke (then only DIR/report.md)
# Knobs (environment): BENCH_EPISODES (per run, default 1000), BENCH_EPISODES_C1 (at C=1, default 200),
#   BENCH_SAMPLES (n per prompt, default 4), BENCH_CONC ("1 64 512"), BENCH_AGENTRT_CONC ("2048 10000": agentrt
#   alone), BENCH_LATENCIES ("0 20ms,0,100us"), BENCH_DRIFT_RATES ("0 0.01 0.05"), BENCH_SEED (1).
# Needs: make setup (the bench venv from scripts/setup.d/70-bench.sh), env.sh sourced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
smoke=0
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "bench/run.sh: unknown argument $1 (usage: bench/run.sh [--smoke] [--out DIR])" >&2; exit 2 ;;
  esac
done
model=${AGENTRT_QWEN3_MODEL:?bench/run.sh: source ~/.cache/agentrt/env.sh first}
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
venv=${BENCH_VENV:-$cache/venv-bench}
py=$venv/bin/python
[[ -x "$py" ]] || { echo "bench/run.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
if [[ $smoke == 1 ]]; then
  episodes=${BENCH_EPISODES:-24}; episodes_c1=${BENCH_EPISODES_C1:-8}; samples=${BENCH_SAMPLES:-2}
  concs=${BENCH_CONC:-"1 8"}; extra=${BENCH_AGENTRT_CONC:-""}; lats=${BENCH_LATENCIES:-"0"}
  rates=${BENCH_DRIFT_RATES:-"0.05"}
else
  episodes=${BENCH_EPISODES:-1000}; episodes_c1=${BENCH_EPISODES_C1:-200}; samples=${BENCH_SAMPLES:-4}
  concs=${BENCH_CONC:-"1 64 512"}; extra=${BENCH_AGENTRT_CONC:-"2048 10000"}; lats=${BENCH_LATENCIES:-"0 20ms,0,100us"}
  rates=${BENCH_DRIFT_RATES:-"0 0.01 0.05"}
fi
seed=${BENCH_SEED:-1}
[[ -n "$out" ]] || out=$(mktemp -d /tmp/agentrt-bench.XXXXXX)
mkdir -p "$out"
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

bin=$out/agentrt
(cd "$root" && go build -o "$bin" ./cmd/agentrt)
(cd "$here/loadgen" && go build -o "$out/loadgen" .)

emu_pid=""
emu_cpu=0
# stop_emu: stops the emulator, leaving its CPU seconds (user + system, from /proc) in $emu_cpu.
stop_emu() {
  emu_cpu=0
  if [[ -n "$emu_pid" && -r /proc/$emu_pid/stat ]]; then
    emu_cpu=$(awk -v t="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) / t}' "/proc/$emu_pid/stat" 2>/dev/null || echo 0)
  fi
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi; }
trap stop_emu EXIT
# start_emu LOG LATENCY [extra flags...]: sets $url.
start_emu() {
  local log=$1 lat=$2; shift 2
  rm -f "$log" "$out/addr"
  local latflag=()
  [[ "$lat" != 0 ]] && latflag=(--latency "$lat")
  # --ignore-rid: replies depend on the prompts alone, so both systems (whose rids differ) get the same workload.
  "$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed "$seed" --ignore-rid --log "$log" "${latflag[@]}" "$@" \
    > "$out/addr" 2> "$out/emu.err" &
  emu_pid=$!
  for _ in $(seq 300); do [[ -s "$out/addr" ]] && break; sleep 0.1; done
  url=$(head -1 "$out/addr")
  [[ -n "$url" ]] || { cat "$out/emu.err" >&2; exit 1; }
}

# prompts FILE EPISODES: EPISODES/samples arithmetic tasks with 2 to 5 expressions, so episodes have one to five
# tool turns (the emulator's plan decides: all calls at once, two batches, or one call per turn; five single
# calls reach the limiter's max_tool_iters).
prompts() {
  python3 - "$2" "$samples" > "$1" <<'PY'
import sys
e, n = int(sys.argv[1]), int(sys.argv[2])
tasks = ["What is {a}*{b}+{c}? Also compute {d}-{a}.", "Compute ({a}+{b})*{c}, {d}/4 and {a}*{d}.",
         "Add {a}+{b}, {c}-{d}, {a}*{d} and {b}*{c}.", "Work out {a}*{b}, {c}+{d}, {a}-{c}, {b}/2 and {d}*{d}."]
for i in range(max(1, e // n)):
    a, b, c, d = 3 + i % 17, 5 + i % 13, 7 + i % 11, 8 + i % 7
    print('{"id": "b%d", "prompt": "%s"}' % (i, tasks[i % len(tasks)].format(a=a, b=b, c=c, d=d)))
PY
}

config() {  # config URL CONC > toml
  sed -e "s#^workers = .*#workers = [\"$1\"]#" -e "s#^concurrency = .*#concurrency = $2#" \
      -e "s#^max_in_flight_per_worker = .*#max_in_flight_per_worker = $(($2 + 16))#" \
      -e "s#^model = .*#model = \"$model\"#" "$root/runtime.toml"
}

results=$out/results.jsonl
: > "$results"
failed=0
# measure SYSTEM LATENCY CONC EPISODES
measure() {
  local sys=$1 lat=$2 conc=$3 eps=$4 kind=${5:-}
  local tag="$sys-${lat//[,]/_}-c$conc${kind:+-$kind}"
  local p=$out/prompts-$eps.jsonl
  [[ -s "$p" ]] || prompts "$p" "$eps"
  start_emu "$out/$tag.log" "$lat" --max-running-requests 0
  local traj=$out/$tag.jsonl rc=0
  rm -f "$traj"
  if [[ $sys == agentrt ]]; then
    config "$url" "$conc" > "$out/$tag.toml"
    /usr/bin/time -f '%e %U %S %M' -o "$out/$tag.time" "$bin" run "$out/$tag.toml" --prompts "$p" --out "$traj" \
      --quiet --concurrency "$conc" -n "$samples" --cpuprofile "$out/$tag.pprof" 2> "$out/$tag.err" || rc=$?
  else
    /usr/bin/time -f '%e %U %S %M' -o "$out/$tag.time" "$py" "$here/strands_driver.py" --url "$url" --model "$model" \
      --prompts "$p" --out "$traj" --concurrency "$conc" --n "$samples" 2> "$out/$tag.err" || rc=$?
  fi
  stop_emu
  local cmp=()
  [[ $sys == strands && -s "$out/agentrt-${lat//[,]/_}-c$conc.jsonl" ]] && cmp=(--compare "$out/agentrt-${lat//[,]/_}-c$conc.jsonl")
  local chk
  chk=$(python3 "$here/check.py" --log "$out/$tag.log" --trajs "$traj" --system "$sys" "${cmp[@]}") || rc=1
  read -r wall user sys_ rss < <(tail -1 "$out/$tag.time")
  python3 - "$sys" "$lat" "$conc" "$wall" "$user" "$sys_" "$rss" "$rc" "$chk" "$kind" "$emu_cpu" >> "$results" <<'PY'
import json, sys
s, lat, conc, wall, user, sys_, rss, rc, chk, kind, emu_cpu = sys.argv[1:]
c = json.loads(chk)
eps, turns = c["trajectories"], c["turns"]
cpu = float(user) + float(sys_)
ok = rc == "0" and c["ok"]
print(json.dumps({"system": s, "kind": kind or "run", "latency": lat, "concurrency": int(conc), "ok": ok, "episodes": eps, "turns": turns,
                  "status": c["status"], "wall_s": float(wall), "episodes_per_s": eps / float(wall) if ok else None,
                  "cpu_s": cpu, "cpu_ms_per_episode": 1000 * cpu / max(eps, 1) if ok else None,
                  "peak_rss_mb": int(rss) / 1024, "emulator_cpu_s": float(emu_cpu), "turn_gap_us": c["turn_gap_us"],
                  "identical_to_agentrt": c.get("identical_to_compare"), "check": c}))
PY
  if [[ $rc != 0 ]] || ! grep -q '"ok": true' <<< "$chk"; then
    echo "bench: $tag FAILED the check or exited $rc: $chk" >&2; tail -5 "$out/$tag.err" >&2; failed=1
  else
    echo "bench: $tag ok: $(tail -1 "$results" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%d episodes, %.1f ep/s, %.2f CPU-ms/episode, %.0f MB" % (r["episodes"], r["episodes_per_s"], r["cpu_ms_per_episode"], r["peak_rss_mb"]))')" >&2
  fi
}

uptime > "$out/load-before.txt"
# Start-up cost (imports, tokenizer, plugins) with the smallest run, so the report can give the marginal CPU per
# episode too: (CPU of a run - CPU of this one) / (episodes - its episodes).
# Three each, the report takes the cheapest (the first run after a build also fills caches).
for k in 1 2 3; do
  measure agentrt 0 1 1 "startup$k"
  measure strands 0 1 1 "startup$k"
done
for lat in $lats; do
  for c in $concs; do
    eps=$episodes; [[ $c == 1 ]] && eps=$episodes_c1
    (( eps < c )) && eps=$c
    measure agentrt "$lat" "$c" "$eps"
    measure strands "$lat" "$c" "$eps"
  done
  for c in $extra; do
    eps=$episodes; (( eps < c )) && eps=$c
    measure agentrt "$lat" "$c" "$eps"
  done
done

# The physical limit: the emulator's capacity for the requests agentrt sent at the highest common concurrency
# (zero latency), replayed by a minimal load generator (precomputed bodies, keep-alive, no parsing).
top=$(tr ' ' '\n' <<< "$concs" | sort -n | tail -1)
src=$out/agentrt-0-c$top.log
if [[ -s "$src" ]]; then
  for c in $top; do
    start_emu "$out/loadgen-c$c.log" 0 --max-running-requests 0
    "$out/loadgen" --url "$url" --requests "$src" --concurrency "$c" --repeat "${BENCH_LOADGEN_REPEAT:-3}" \
      > "$out/loadgen-c$c.json" 2> "$out/loadgen.err" || { cat "$out/loadgen.err" >&2; failed=1; }
    stop_emu
    rm -f "$out/loadgen-c$c.log"
  done
fi

# The cost of drift: agentrt's episodes with non-canonical replies, re-tokenized as a text (OpenAI-style) client.
: > "$out/drift.jsonl"
for r in $rates; do
  p=$out/prompts-$episodes.jsonl
  [[ -s "$p" ]] || prompts "$p" "$episodes"
  start_emu "$out/drift-$r.log" 0 --noncanonical-rate "$r" --max-running-requests 0
  config "$url" 64 > "$out/drift.toml"
  "$bin" run "$out/drift.toml" --prompts "$p" --out "$out/drift-$r.jsonl" --quiet --concurrency 64 -n "$samples" \
    2> "$out/drift-$r.err" || failed=1
  stop_emu
  python3 "$here/check.py" --log "$out/drift-$r.log" --trajs "$out/drift-$r.jsonl" --system "agentrt drift $r" \
    > "$out/drift-$r.check" || { echo "bench: drift $r FAILED the check: $(cat "$out/drift-$r.check")" >&2; failed=1; }
  "$py" "$here/drift.py" --model "$model" --trajs "$out/drift-$r.jsonl" --rate "$r" >> "$out/drift.jsonl" || failed=1
done
# Where strands-sglang's CPU goes (cProfile), for the report.
[[ $smoke == 1 ]] || bash "$here/profile-strands.sh" "$out" 500 64 || failed=1
uptime > "$out/load-after.txt"

report=$root/bench/results/side-by-side.md
plots=$root/bench
if [[ $smoke == 1 ]]; then report=$out/report.md; plots=$out; fi
"$py" "$here/report.py" --dir "$out" --report "$report" --plots "$plots" --smoke "$smoke" \
  --command "BENCH_EPISODES=$episodes BENCH_EPISODES_C1=$episodes_c1 BENCH_SAMPLES=$samples BENCH_CONC='$concs' BENCH_AGENTRT_CONC='$extra' BENCH_LATENCIES='$lats' BENCH_DRIFT_RATES='$rates' BENCH_SEED=$seed bench/run.sh $([[ $smoke == 1 ]] && echo --smoke)" || failed=1
echo "bench: raw results in $out; report $report" >&2
if [[ $failed != 0 ]]; then
  echo "bench: FAILED (a run failed the checker or exited non-zero; its numbers are not reported)" >&2
  exit 1
fi
