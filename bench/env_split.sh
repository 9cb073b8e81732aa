#!/usr/bin/env bash
# How a cluster-wide environment max_concurrent is used when the live nodes split it (docs/scale-out.md, "Limits
# across nodes"), on one machine over loopback: one `agentrt emulate`, one counting environment service
# (bench/counting_env.py), the trainer on the first node. Each run prints trajectories/s, the most live
# environments at once and their time-weighted mean (first create to last close) against max_concurrent.
#
#   bench/env_split.sh        runs: 1 node (embedded) with all the slots; 3 nodes with even slots; 3 nodes with
#                             uneven slots (one node has most of them: the others cannot fill their parts)
#
# Knobs (environment): MAX (max_concurrent, 6), PROMPTS (16), N samples per prompt (8), LATENCY of the emulator
# per call (20ms), RUNS ("1:12 3:4,4,4 3:10,1,1": nodes:slots per node), ACK_WAIT (4s), KEEP=1 keeps the logs,
# AGENTRT_BIN (bin/agentrt). Needs `source ~/.cache/agentrt/env.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
-h | --help)
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
bin=${AGENTRT_BIN:-$root/bin/agentrt}
py=${AGENTRT_CLIENT_PYTHON:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-client/bin/python}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
max=${MAX:-6} prompts=${PROMPTS:-16} n=${N:-8} latency=${LATENCY:-20ms} ack_wait=${ACK_WAIT:-4s}
runs=${RUNS:-1:12 3:4,4,4 3:10,1,1}
[[ -x $bin ]] || { echo "env_split: $bin is missing (make build)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${KEEP:-} ]]; then echo "env_split: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# wait_for FILE PATTERN WHAT: waits (up to 120 s) for a line matching PATTERN in FILE; fails naming WHAT.
wait_for() {
	for _ in $(seq 1200); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "env_split: waited 120 s for $3 (no '$2' in $1)" >&2
	tail -20 "$1" >&2 || true
	exit 1
}

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" > "$work/emu" 2> "$work/emu.err" &
pids+=($!)
wait_for "$work/emu" http "the emulator's address"
emu_url=$(head -1 "$work/emu")

echo "env_split: max_concurrent $max, $prompts prompts x $n samples, emulator latency $latency, $(uptime | sed 's/.*load/load/')"
echo "| nodes | slots per node | trajectories/s | most live | mean live | mean / max_concurrent |"
echo "|---|---|---|---|---|---|"
for spec in $runs; do
	k=${spec%%:*}
	IFS=, read -r -a slots <<< "${spec#*:}"
	[[ ${#slots[@]} -eq $k ]] || { echo "env_split: '$spec' gives ${#slots[@]} slot counts for $k nodes" >&2; exit 1; }
	run="$work/r${spec//[:,]/_}"
	mkdir -p "$run"
	"$py" "$root/bench/counting_env.py" > "$run/env" 2> "$run/env.err" &
	env_pid=$!
	pids+=($env_pid)
	wait_for "$run/env" http "the environment service's address"
	env_url=$(head -1 "$run/env")
	seed="127.0.0.1:$(free_port)"
	urls=() node_pids=()
	for i in $(seq 0 $((k - 1))); do
		d="$run/n$i" listen=127.0.0.1:0
		mkdir -p "$d"
		[[ $i -eq 0 ]] && listen=$seed
		bus='mode = "embedded" '
		if [[ $k -gt 1 ]]; then
			bus="mode = \"cluster\"\nname = \"n$i\"\ncluster = \"bench\"\nlisten = \"$listen\"\nroutes = [\"nats-route://$seed\"]\n"
		fi
		sed -e "s#^workers = .*#workers = [\"$emu_url\"]#" -e "s#^spool_dir = .*#spool_dir = \"$d/spool\"#" \
			-e "s#^model = .*#model = \"$model\"#" -e "s#^concurrency = 256 #concurrency = ${slots[$i]} #" \
			-e "s#^mode = \"embedded\" #$bus#" -e "s#^ack_wait = \"30s\"#ack_wait = \"$ack_wait\"#" \
			"$root/runtime.toml" > "$d/runtime.toml"
		grep -q "^concurrency = ${slots[$i]} " "$d/runtime.toml" || { echo "env_split: runtime.toml has no 'concurrency = 256 '" >&2; exit 1; }
		printf '\n[[agent.tools]]\nenv = { url = "%s", max_concurrent = %d }\n' "$env_url" "$max" >> "$d/runtime.toml"
		"$bin" serve "$d/runtime.toml" --addr 127.0.0.1:0 > "$d/out" 2> "$d/log" &
		pids+=($!) node_pids+=($!)
	done
	for i in $(seq 0 $((k - 1))); do
		wait_for "$run/n$i/out" listening "node n$i to listen"
		urls+=("$(sed -n 's/.*WebSocket \(ws:[^)]*\)).*/\1/p' "$run/n$i/out")")
	done
	"$py" "$root/examples/trainer.py" --url "${urls[0]}" --count "$prompts" -n "$n" > "$run/trainer" 2> "$run/trainer.err" ||
		{ cat "$run/trainer.err" >&2; exit 1; }
	x=$(sed -n 's/.*(\([0-9.]*\)\/s).*/\1/p' "$run/trainer" | head -1)
	[[ -n $x ]] || { cat "$run/trainer" "$run/trainer.err" >&2; exit 1; }
	stats=$("$py" -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + "/stats").read().decode())' "$env_url")
	"$py" - "$stats" "$k" "${spec#*:}" "$x" "$max" <<'PY'
import json, sys
s, k, slots, x, mx = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
print(f"| {k} | {slots} | {x} | {s['most']} | {s['mean_live']:.2f} | {s['mean_live'] / mx:.0%} |")
PY
	for p in "${node_pids[@]}" "$env_pid"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${node_pids[@]}" "$env_pid"; do wait "$p" 2>/dev/null || true; done
done
echo "(load after: $(uptime | sed 's/.*load average: //'))"
