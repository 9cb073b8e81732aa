#!/usr/bin/env bash
# End-to-end episodes/s through `agentrt serve`: a separate `agentrt emulate` (zero latency unless LATENCY is
# given), `agentrt serve` on the shipped runtime.toml pointed at it, and examples/trainer.py submitting
# PROMPTS x N episodes over one WebSocket and acking each trajectory. Prints the trainer's summary line.
#
# usage: bench/serve_throughput.sh [PROMPTS] [N] [LATENCY]     e.g. bench/serve_throughput.sh 256 8
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prompts=${1:-256}
n=${2:-8}
latency=${3:-}
bin=${AGENTRT_BIN:-$root/bin/agentrt}
py=${AGENTRT_CLIENT_PYTHON:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-client/bin/python}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
work=$(mktemp -d)
trap 'kill $emu_pid $srv_pid 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT

"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" > "$work/emu" 2> "$work/emu.err" &
emu_pid=$!
for _ in $(seq 200); do [[ -s "$work/emu" ]] && break; sleep 0.1; done
emu_url=$(head -1 "$work/emu")
sed -e "s#^workers = .*#workers = [\"$emu_url\"]#" -e "s#^spool_dir = .*#spool_dir = \"$work/spool\"#" \
    -e "s#^model = .*#model = \"$model\"#" "$root/runtime.toml" > "$work/runtime.toml"
"$bin" serve "$work/runtime.toml" --addr 127.0.0.1:0 --log-level warn > "$work/srv" 2> "$work/srv.err" &
srv_pid=$!
for _ in $(seq 600); do grep -q listening "$work/srv" 2>/dev/null && break; sleep 0.1; done
ws=$(sed -n 's/.*WebSocket \(ws:[^)]*\)).*/\1/p' "$work/srv")
[[ -n "$ws" ]] || { cat "$work/srv.err" >&2; exit 1; }
"$py" "$root/examples/trainer.py" --url "$ws" --count "$prompts" -n "$n" 2> /dev/null
