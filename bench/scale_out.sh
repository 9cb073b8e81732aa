#!/usr/bin/env bash
# Scale-out figures of agentrt serve on the NATS bus (docs/scale-out.md), on one machine over loopback:
#
#   bench/scale_out.sh throughput   trajectories/s through 1 node (embedded bus) and through 3 (cluster mode, R3),
#                                   the trainer on the first node, one shared `agentrt emulate`
#   bench/scale_out.sh failover     3 nodes; once a quarter of the samples are stored, kill -9 a node (the work
#                                   stream's leader, then a follower); prints the time from the kill to the first
#                                   sample stored on a later claim by a survivor, and to the request's end
#
# Knobs (environment): PROMPTS (64), N samples per prompt (8), LATENCY of the emulator per call (20ms; failover
# 100ms), CONCURRENCY episode slots per node (16; failover 8), NODES for throughput ("1 3"), ACK_WAIT for
# failover (4s), REPEAT runs of each (1), KEEP=1 keeps the nodes' logs, AGENTRT_BIN (bin/agentrt). Needs `source ~/.cache/agentrt/env.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
throughput | failover) mode=$1 ;;
-h | --help)
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "usage: bench/scale_out.sh throughput|failover (see --help)" >&2
	exit 2
	;;
esac
bin=${AGENTRT_BIN:-$root/bin/agentrt}
py=${AGENTRT_CLIENT_PYTHON:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-client/bin/python}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
prompts=${PROMPTS:-64}
n=${N:-8}
repeat=${REPEAT:-1}
if [[ $mode == failover ]]; then
	latency=${LATENCY:-100ms} conc=${CONCURRENCY:-8}
else
	latency=${LATENCY:-20ms} conc=${CONCURRENCY:-16}
fi
ack_wait=${ACK_WAIT:-4s}
[[ -x $bin ]] || { echo "scale_out: $bin is missing (make build)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${KEEP:-} ]]; then echo "scale_out: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# wait_for FILE PATTERN WHAT: waits (up to 120 s) for a line matching PATTERN in FILE; fails naming WHAT.
wait_for() {
	for _ in $(seq 1200); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "scale_out: waited 120 s for $3 (no '$2' in $1)" >&2
	tail -20 "$1" >&2 || true
	exit 1
}

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" > "$work/emu" 2> "$work/emu.err" &
pids+=($!)
wait_for "$work/emu" http "the emulator's address"
emu_url=$(head -1 "$work/emu")

# start_nodes RUN K: starts K serve processes under $work/RUN/nK (K=1: embedded; K>1: a cluster), sets urls[].
start_nodes() {
	local run=$1 k=$2 seed
	urls=() node_pids=()
	seed="127.0.0.1:$(free_port)"
	for i in $(seq 0 $((k - 1))); do
		local d="$work/$run/n$i" listen=127.0.0.1:0
		mkdir -p "$d"
		[[ $i -eq 0 ]] && listen=$seed
		local bus='mode = "embedded" '
		if [[ $k -gt 1 ]]; then
			bus="mode = \"cluster\"\nname = \"n$i\"\ncluster = \"bench\"\nlisten = \"$listen\"\nroutes = [\"nats-route://$seed\"]\n"
		fi
		sed -e "s#^workers = .*#workers = [\"$emu_url\"]#" -e "s#^spool_dir = .*#spool_dir = \"$d/spool\"#" \
			-e "s#^model = .*#model = \"$model\"#" -e "s#^concurrency = 256 #concurrency = $conc #" \
			-e "s#^mode = \"embedded\" #$bus#" -e "s#^ack_wait = \"30s\"#ack_wait = \"$ack_wait\"#" \
			"$root/runtime.toml" > "$d/runtime.toml"
		grep -q "^concurrency = $conc " "$d/runtime.toml" || { echo "scale_out: runtime.toml has no 'concurrency = 256 '" >&2; exit 1; }
		"$bin" serve "$d/runtime.toml" --addr 127.0.0.1:0 --log-level debug > "$d/out" 2> "$d/log" &
		pids+=($!) node_pids+=($!)
	done
	for i in $(seq 0 $((k - 1))); do
		local d="$work/$run/n$i"
		wait_for "$d/out" listening "node n$i to listen"
		urls+=("$(sed -n 's/.*WebSocket \(ws:[^)]*\)).*/\1/p' "$d/out")")
	done
}

stop_nodes() {
	for p in "${node_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${node_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}

# trainer URL OUT: runs examples/trainer.py against URL, its summary line in OUT.
trainer() { "$py" "$root/examples/trainer.py" --url "$1" --count "$prompts" -n "$n" > "$2" 2> "$2.err"; }

rate() { sed -n 's/.*(\([0-9.]*\)\/s).*/\1/p' "$1" | head -1; }

if [[ $mode == throughput ]]; then
	echo "scale_out throughput: $prompts prompts x $n samples, emulator latency $latency, $conc slots per node, $(uptime | sed 's/.*load/load/')"
	echo "| nodes | run | trajectories/s | per node |"
	echo "|---|---|---|---|"
	for r in $(seq "$repeat"); do
		for k in ${NODES:-1 3}; do
			start_nodes "t$k-$r" "$k"
			trainer "${urls[0]}" "$work/t$k-$r/trainer"
			stop_nodes
			x=$(rate "$work/t$k-$r/trainer")
			[[ -n $x ]] || { cat "$work/t$k-$r/trainer.err" >&2; exit 1; }
			echo "| $k | $r | $x | $("$py" -c "print(f'{$x/$k:.1f}')") |"
		done
	done
	echo "(load after: $(uptime | sed 's/.*load average: //'))"
	exit 0
fi

# failover
echo "scale_out failover: 3 nodes, $prompts prompts x $n samples, emulator latency $latency, $conc slots per node, ack_wait $ack_wait, $(uptime | sed 's/.*load/load/')"
echo "| victim | run | kill -> first sample stored on a later claim | kill -> request done | samples reclaimed |"
echo "|---|---|---|---|---|"
for r in $(seq "$repeat"); do
	for victim_kind in leader follower; do
		run="f-$victim_kind-$r"
		start_nodes "$run" 3
		# The work stream's leader, from the nodes' logs (the last node to announce it).
		for _ in $(seq 600); do grep -q "new stream leader for '\$G > AGENTRT_WORK'" "$work/$run"/n*/log && break; sleep 0.1; done
		leader=$(grep -l "new stream leader for '\$G > AGENTRT_WORK'" "$work/$run"/n*/log | head -1 | sed 's#.*/n\([0-9]\)/log#\1#')
		[[ -n $leader ]] || { echo "scale_out: no work stream leader in the logs" >&2; exit 1; }
		if [[ $victim_kind == leader ]]; then victim=$leader; else victim=$(((leader + 1) % 3)); fi
		tnode=$(((victim + 1) % 3))
		[[ $victim_kind == follower && $tnode == "$leader" ]] && tnode=$(((victim + 2) % 3))
		trainer "${urls[$tnode]}" "$work/$run/trainer" &
		tpid=$!
		want=$((prompts * n / 4))
		for _ in $(seq 1200); do
			[[ $(cat "$work/$run"/n*/log | grep -c 'msg="bus: stored"') -ge $want ]] && break
			sleep 0.05
		done
		kill -9 "${node_pids[$victim]}"
		kill_ns=$(date +%s%N)
		wait "$tpid" 2>/dev/null || { cat "$work/$run/trainer.err" >&2; exit 1; }
		done_ns=$(date +%s%N)
		"$py" - "$work/$run" "$victim" "$kill_ns" "$done_ns" "$victim_kind" "$r" <<'EOF'
import datetime, glob, re, sys
run, victim, kill_ns, done_ns, kind, rep = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
first, reclaimed = None, 0
for path in glob.glob(f"{run}/n*/log"):
    if path.endswith(f"/n{victim}/log"):
        continue
    for line in open(path, errors="replace"):
        if 'msg="bus: stored"' not in line or re.search(r"\bdelivery=1\b", line):
            continue
        reclaimed += 1
        t = re.match(r"time=(\S+)", line)
        ns = int(datetime.datetime.fromisoformat(t.group(1).replace("Z", "+00:00")).timestamp() * 1e9)
        first = ns if first is None else min(first, ns)
kill_to_first = f"{(first - kill_ns) / 1e9:.2f} s" if first else "none stored on a later claim"
print(f"| {kind} (n{victim}) | {rep} | {kill_to_first} | {(done_ns - kill_ns) / 1e9:.2f} s | {reclaimed} |")
EOF
		stop_nodes
	done
done
echo "(load after: $(uptime | sed 's/.*load average: //'))"
