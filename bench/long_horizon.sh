#!/usr/bin/env bash
# Long-horizon benchmark: agentrt and strands-sglang side by side on 40-turn episodes whose context grows to 32k and
# 128k tokens (thinking replies, tool outputs of 2-16 KB, one variant with the CPython tool), against the same
# scripted emulator, every trajectory checked; per turn, against the context length: the client's CPU, the bytes it
# sends to SGLang, its overhead (agentrt's own measure, and the gap the emulator sees). Plus agentrt alone on 30-turn
# episodes at a fixed ~2k and ~118k context, with CPU profiles (what grows with the context).
#
# usage: bench/long_horizon.sh [--smoke] [--out DIR]
#   --smoke   one episode of grow32k, python and flat2k: proves the harness (what CI runs); the report
#             goes to DIR/report.md
#   --out     where raw results go (default: a temp dir); the report is bench/results/long-horizon.md with its plots
#             beside it (bench/results/long-horizon-*.png), unless --smoke
# Knobs (environment): LH_VARIANTS ("grow32k grow128k python flat2k flat118k"), LH_EPISODES (per variant,
#   default 12; grow128k gets half), LH_SYSTEMS ("agentrt strands"; the flat variants run agentrt alone),
#   LH_LATENCY (the emulator's fixed latency per request, default 4ms: the client is idle then, which is where the
#   CPU sampler reads the turn boundary).
# Needs: make setup (venv-bench from scripts/setup.d/70-bench.sh; python-wasi from 60-python-wasi.sh), env.sh sourced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
smoke=0
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "bench/long_horizon.sh: unknown argument $1 (usage: bench/long_horizon.sh [--smoke] [--out DIR])" >&2; exit 2 ;;
  esac
done
model=${AGENTRT_QWEN3_MODEL:?bench/long_horizon.sh: source ~/.cache/agentrt/env.sh first}
pywasm=${AGENTRT_PYTHON_WASM:?bench/long_horizon.sh: source ~/.cache/agentrt/env.sh first}
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
py=${BENCH_VENV:-$cache/venv-bench}/bin/python
[[ -x "$py" ]] || { echo "bench/long_horizon.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
if [[ $smoke == 1 ]]; then
  variants=${LH_VARIANTS:-"grow32k python flat2k"}; episodes=${LH_EPISODES:-1}
else
  variants=${LH_VARIANTS:-"grow32k grow128k python flat2k flat118k"}; episodes=${LH_EPISODES:-12}
fi
systems=${LH_SYSTEMS:-"agentrt strands"}
latency=${LH_LATENCY:-4ms}
[[ -n "$out" ]] || out=$(mktemp -d /tmp/agentrt-long-horizon.XXXXXX)
mkdir -p "$out"

bin=$out/agentrt
(cd "$root" && go build -o "$bin" ./cmd/agentrt)

emu_pid=""
stop_emu() {
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi
}
trap stop_emu EXIT
# start_emu LOG SCRIPT CONTEXT_LENGTH: sets $url.
start_emu() {
  rm -f "$1" "$out/addr"
  "$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --policy scripted --script "$2" --context-length "$3" \
    --latency "$latency" --log "$1" --max-running-requests 0 > "$out/addr" 2> "$out/emu.err" &
  emu_pid=$!
  for _ in $(seq 600); do [[ -s "$out/addr" ]] && break; sleep 0.1; done
  url=$(head -1 "$out/addr")
  [[ -n "$url" ]] || { cat "$out/emu.err" >&2; exit 1; }
}

system_prompt="You are a careful assistant. Use the tools, then give the final answer."
limits='{"max_tool_iters": 100, "max_tool_calls": 200, "max_parallel_tool_calls": 4, "max_messages": 400}'
# config URL TOOLS > toml: the long-horizon agent (Qwen3 with thinking on, the variant's tools, a limiter that
# lets 40 turns run).
config() {
  cat <<EOF
[server]
concurrency = 1
[sglang]
workers = ["$1"]
max_in_flight_per_worker = 64
[plugins]
cache_dir = "$cache/wazero"
[[agent]]
name = "long-horizon"
model = "$model"
parser = "hermes"
system_prompt = "$system_prompt"
chat_template_kwargs = { enable_thinking = true }
max_tool_result_bytes = 65536
tool_timeout = "60s"
episode_timeout = "30m"
[agent.sampling]
max_new_tokens = 8192
temperature = 1.0
top_p = 1.0
[[agent.tools]]
plugin = "builtin:calculator"
[[agent.tools]]
plugin = "$here/tools/documents/documents.wasm"
EOF
  if [[ $2 == *execute_python_code* ]]; then
    cat <<EOF
[[agent.tools]]
plugin = "$pywasm"
timeout = "60s"
[agent.tools.command]
preset = "python"
max_output_bytes = 65536
EOF
  fi
  cat <<EOF
[[agent.hooks]]
plugin = "builtin:limiter"
config = { max_tool_iters = 100, max_tool_calls = 200, max_parallel_tool_calls = 4, max_messages = 400 }
EOF
}

runs=$out/runs.jsonl
: > "$runs"
failed=0
# measure VARIANT SYSTEM
measure() {
  local v=$1 sys=$2 dir=$out/$1 tag=$1-$2
  local ctx tools rc=0
  ctx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["context_length"])' "$dir/variant.json")
  tools="calculator,read_document"
  [[ $v == python* ]] && tools="calculator,read_document,execute_python_code"
  start_emu "$out/$tag.log" "$dir/script.jsonl" "$ctx"
  rm -f "$out/$tag.jsonl"
  local t0 t1 pid
  t0=$(date +%s.%N)
  if [[ $sys == agentrt ]]; then
    config "$url" "$tools" > "$out/$tag.toml"
    "$bin" run "$out/$tag.toml" --prompts "$dir/prompts.jsonl" --out "$out/$tag.jsonl" --quiet --concurrency 1 \
      --cpuprofile "$out/$tag.pprof" 2> "$out/$tag.err" &
  else
    (cd "$here" && exec "$py" strands_driver.py --url "$url" --model "$model" --prompts "$dir/prompts.jsonl" \
      --out "$out/$tag.jsonl" --concurrency 1 --tools "$tools" --enable-thinking --max-new-tokens 8192 \
      --limits "$limits" --system-prompt "$system_prompt") 2> "$out/$tag.err" &
  fi
  pid=$!
  python3 "$here/long_horizon.py" sample --pid "$pid" --out "$out/$tag.cpu" &
  local sampler=$!
  wait "$pid" || rc=$?
  t1=$(date +%s.%N)
  wait "$sampler" || true
  stop_emu
  local cmp=()
  [[ $sys == strands && -s "$out/$v-agentrt.jsonl" ]] && cmp=(--compare "$out/$v-agentrt.jsonl")
  local chk
  chk=$(python3 "$here/check.py" --log "$out/$tag.log" --trajs "$out/$tag.jsonl" --system "$sys" "${cmp[@]}") || rc=1
  python3 "$here/long_horizon.py" analyse --log "$out/$tag.log" --cpu "$out/$tag.cpu" --trajs "$out/$tag.jsonl" \
    --out "$out/$tag.turns.jsonl" || rc=1
  python3 - "$v" "$sys" "$rc" "$chk" "$t0" "$t1" "$out/$tag.cpu" >> "$runs" <<'PY'
import json, sys
v, s, rc, chk, t0, t1, cpu = sys.argv[1:]
c = json.loads(chk)
last = [l.split() for l in open(cpu) if l.strip()]
print(json.dumps({"variant": v, "system": s, "ok": rc == "0" and c["ok"], "episodes": c["trajectories"],
                  "turns": c["turns"], "wall_s": float(t1) - float(t0), "cpu_s": int(last[-1][1]) / 1e9 if last else None,
                  "identical_to_agentrt": c.get("identical_to_compare"), "check": c}))
PY
  if [[ $rc != 0 ]] || ! grep -q '"ok": true' <<< "$chk"; then
    echo "long-horizon: $tag FAILED the check or exited $rc: $chk" >&2; tail -5 "$out/$tag.err" >&2; failed=1
  else
    echo "long-horizon: $tag ok: $(python3 -c 'import json,sys; c=json.loads(sys.argv[1]); print(c["trajectories"], "episodes,", c["turns"], "turns", "" if c.get("identical_to_compare") is None else "(%d identical to agentrt)" % c["identical_to_compare"])' "$chk")" >&2
  fi
  rm -f "$out/$tag.log" # hundreds of MB at 128k; the per-turn records keep what the report needs
}

uptime > "$out/load-before.txt"
for v in $variants; do
  eps=$episodes
  [[ $v == grow128k ]] && eps=$(( (episodes + 1) / 2 ))
  python3 "$here/long_horizon.py" gen --variant "$v" --episodes "$eps" --out "$out/$v"
  for sys in $systems; do
    [[ $v == flat* && $sys != agentrt ]] && continue
    measure "$v" "$sys"
  done
done
uptime > "$out/load-after.txt"

# Where agentrt's CPU goes per turn at a fixed ~2k and ~118k context: the profiles' top functions by cumulative CPU
# without what an episode does once (its first prompt, rendered and tokenized whole, and its end: audit, output), and
# what the larger context adds (118k minus 2k: both runs have the same number of turns).
once='firstPrompt|episode..end|runRun.func'
for v in flat2k flat118k; do
  [[ -s "$out/$v-agentrt.pprof" ]] || continue
  go tool pprof -top -cum -nodecount=30 -ignore "$once" "$bin" "$out/$v-agentrt.pprof" 2>/dev/null | sed 1,4d > "$out/$v.top.txt"
done
if [[ -s "$out/flat2k-agentrt.pprof" && -s "$out/flat118k-agentrt.pprof" ]]; then
  go tool pprof -top -cum -nodecount=30 -ignore "$once" -diff_base "$out/flat2k-agentrt.pprof" "$bin" \
    "$out/flat118k-agentrt.pprof" 2>/dev/null | sed 1,4d > "$out/flat-diff.top.txt"
fi

report=$root/bench/results/long-horizon.md
plots=$root/bench/results
if [[ $smoke == 1 ]]; then report=$out/report.md; plots=$out; fi
"$py" "$here/long_horizon_report.py" --dir "$out" --report "$report" --plots "$plots" --notes "$here/results/long-horizon.notes.md" \
  --command "LH_VARIANTS='$variants' LH_EPISODES=$episodes LH_SYSTEMS='$systems' LH_LATENCY=$latency bench/long_horizon.sh$([[ $smoke == 1 ]] && echo ' --smoke')" || failed=1
echo "long-horizon: raw results in $out; report $report" >&2
if [[ $failed != 0 ]]; then
  echo "long-horizon: FAILED (a run failed the checker or exited non-zero)" >&2
  exit 1
fi
