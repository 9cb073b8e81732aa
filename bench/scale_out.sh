#!/usr/bin/env bash
# Scale-out figures of agentrt serve on the NATS bus (docs/scale-out.md), on one machine over loopback:
#
#   bench/scale_out.sh throughput   trajectories/s through 1 node (embedded bus) and through 3 (cluster mode, R3),
#                                   the trainer on the first node, one shared `agentrt emulate`
#   bench/scale_out.sh failover     3 nodes; once a quarter of the samples are stored, kill -9 a node (the work
#                                   stream's leader, then a follower); prints the time from the kill to the first
#                                   sample stored on a later claim by a survivor, and to the request's end
#   bench/scale_out.sh cpu          tool CPU as the bottleneck: every episode makes TURNS calls of the CPython Wasm
#                                   tool (execute_python_code), each a fixed pure-Python loop of LOOP iterations,
#                                   then answers (the emulator's scripted policy, latency 1ms); 1 node pinned to
#                                   core 0 (taskset, embedded bus) vs 2 nodes (cluster) pinned to cores 0 and 1; the
#                                   emulator and the trainer are not pinned (their CPU is printed); per run:
#                                   trajectories/s, tool calls/s, each node's tool calls and CPU (/proc/PID/stat),
#                                   and the CPU other processes on the machine took meanwhile (/proc/stat)
#
# Knobs (environment): PROMPTS (64; cpu 16), N samples per prompt (8), LATENCY of the emulator per call (20ms;
# failover 100ms; cpu 1ms), CONCURRENCY episode slots per node (16; failover 8; cpu 4), NODES for throughput
# ("1 3"), ACK_WAIT a claim (4s; cpu 30s), TURNS tool calls per episode for cpu (2, at most 5: the limiter's
# max_tool_iters), LOOP iterations of the cpu tool's loop (10000: ~30 ms of a call's ~180 ms CPU, the rest
# CPython's start), CORES for cpu ("0 1": node i is pinned to the i-th), REPEAT runs of each (1), KEEP=1 keeps
# the nodes' logs, AGENTRT_BIN (bin/agentrt). A cluster of fewer than 3 nodes keeps that many stream replicas.
# Needs `source ~/.cache/agentrt/env.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
throughput | failover | cpu) mode=$1 ;;
-h | --help)
	sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "usage: bench/scale_out.sh throughput|failover|cpu (see --help)" >&2
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
elif [[ $mode == cpu ]]; then
	latency=${LATENCY:-1ms} conc=${CONCURRENCY:-4} prompts=${PROMPTS:-16}
	turns=${TURNS:-2} loop=${LOOP:-10000}
	read -r -a cores <<< "${CORES:-0 1}"
	pywasm=${AGENTRT_PYTHON_WASM:?source ~/.cache/agentrt/env.sh first}
	[[ $turns =~ ^[1-5]$ ]] || { echo "scale_out: TURNS must be 1..5 (the limiter's max_tool_iters is 5)" >&2; exit 2; }
	[[ $loop =~ ^[0-9]+$ ]] || { echo "scale_out: LOOP must be a number" >&2; exit 2; }
	[[ ${#cores[@]} -ge 2 ]] || { echo "scale_out: CORES needs two cores" >&2; exit 2; }
else
	latency=${LATENCY:-20ms} conc=${CONCURRENCY:-16}
fi
ack_wait=${ACK_WAIT:-4s}
[[ $mode == cpu ]] && ack_wait=${ACK_WAIT:-30s} # no claim runs out on a busy core: each episode runs once
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

emu_args=()
if [[ $mode == cpu ]]; then
	# One script line for every conversation ("*"): TURNS calls of the Python tool, each running the same loop
	# (pure Python, no sleeps or I/O), then the answer.
	"$py" - "$turns" "$loop" > "$work/script.jsonl" <<'EOF'
import json, sys
turns, loop = int(sys.argv[1]), int(sys.argv[2])
code = f"s = 0\nfor i in range({loop}):\n    s += i * i % 7\nprint(s)"
call = "<tool_call>\n" + json.dumps({"name": "execute_python_code", "arguments": {"code": code}}) + "\n</tool_call>"
print(json.dumps({"key": "*", "replies": [call] * turns + ["The loop printed its sum each time; done."]}))
EOF
	emu_args=(--policy scripted --script "$work/script.jsonl")
fi
"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" "${emu_args[@]}" > "$work/emu" 2> "$work/emu.err" &
pids+=($!)
emu_pid=$!
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
			# Streams keep min(3, nodes) replicas (3, the default, needs three nodes to place them).
			[[ $k -lt 3 ]] && bus+="replicas = $k\n"
		fi
		sed -e "s#^workers = .*#workers = [\"$emu_url\"]#" -e "s#^spool_dir = .*#spool_dir = \"$d/spool\"#" \
			-e "s#^model = .*#model = \"$model\"#" -e "s#^concurrency = 256 #concurrency = $conc #" \
			-e "s#^mode = \"embedded\" #$bus#" -e "s#^ack_wait = \"30s\"#ack_wait = \"$ack_wait\"#" \
			"$root/runtime.toml" > "$d/runtime.toml"
		grep -q "^concurrency = $conc " "$d/runtime.toml" || { echo "scale_out: runtime.toml has no 'concurrency = 256 '" >&2; exit 1; }
		local pin=()
		if [[ $mode == cpu ]]; then
			# The agent's one tool becomes the CPython Wasm tool; the node runs on one core.
			sed -i "s#^plugin = \"builtin:calculator\"\$#plugin = \"$pywasm\"\ntimeout = \"60s\"\n[agent.tools.command]\npreset = \"python\"#" "$d/runtime.toml"
			grep -q '^preset = "python"' "$d/runtime.toml" || { echo "scale_out: runtime.toml has no 'plugin = \"builtin:calculator\"' line" >&2; exit 1; }
			pin=(taskset -c "${cores[$i]}")
		fi
		"${pin[@]}" "$bin" serve "$d/runtime.toml" --addr 127.0.0.1:0 --log-level debug > "$d/out" 2> "$d/log" &
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

if [[ $mode == cpu ]]; then
	tck=$(getconf CLK_TCK)
	# cpu_s PID: the process's user+system CPU seconds so far (/proc/PID/stat fields 14 and 15).
	cpu_s() { awk -v t="$tck" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t}' "/proc/$1/stat"; }
	# box_s: CPU seconds the whole machine has been busy (/proc/stat: all but idle and iowait).
	box_s() { awk -v t="$tck" '/^cpu /{printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / t}' /proc/stat; }
	# children_s: CPU seconds of this script's reaped children (its /proc/PID/stat fields 16 and 17).
	children_s() { awk -v t="$tck" '{sub(/.*\) /, ""); printf "%.2f", ($14 + $15) / t}' "/proc/$$/stat"; }
	# tool_calls URL: the node's agentrt_tool_calls_total by outcome, "ok=N other=M".
	tool_calls() {
		"$py" - "$1" <<'EOF'
import re, sys, urllib.request
url = re.sub(r"^ws://([^/]+)/.*", r"http://\1/metrics", sys.argv[1])
ok = other = 0
for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
    m = re.match(r'agentrt_tool_calls_total\{outcome="([a-z_]+)"\} (\S+)', line)
    if m:
        if m.group(1) == "ok":
            ok += int(float(m.group(2)))
        else:
            other += int(float(m.group(2)))
print(f"ok={ok} other={other}")
EOF
	}
	echo "scale_out cpu: $prompts prompts x $n samples, $turns Python tool calls per episode (a loop of $loop iterations each), emulator latency $latency (scripted), $conc slots per node, ack_wait $ack_wait, nodes pinned to cores ${cores[*]:0:2}, $(uptime | sed 's/.*load/load/')"
	echo "| nodes | run | trajectories/s | tool calls/s | tool calls per node | node CPU s (% of one core) | emulator CPU s | trainer CPU s | others' CPU s | load before |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	want=$((prompts * n))
	declare -A tps
	for r in $(seq "$repeat"); do
		for k in 1 2; do
			run="c$k-$r"
			start_nodes "$run" "$k"
			load=$(awk '{print $1}' /proc/loadavg)
			before=() calls=() cpus=()
			for p in "${node_pids[@]}"; do before+=("$(cpu_s "$p")"); done
			emu0=$(cpu_s "$emu_pid") ch0=$(children_s) box0=$(box_s)
			t0=$(date +%s%N)
			trainer "${urls[0]}" "$work/$run/trainer"
			t1=$(date +%s%N)
			ch1=$(children_s) emu1=$(cpu_s "$emu_pid") box1=$(box_s)
			wall=$("$py" -c "print(($t1 - $t0) / 1e9)")
			total=0 ours="$emu1 - $emu0 + $ch1 - $ch0"
			for i in $(seq 0 $((k - 1))); do
				c=$(cpu_s "${node_pids[$i]}")
				ours+=" + $c - ${before[$i]}"
				cpus+=("n$i $("$py" -c "d = $c - ${before[$i]}; print(f'{d:.1f} ({100 * d / $wall:.0f}%)')")")
				tc=$(tool_calls "${urls[$i]}")
				[[ $tc == *" other=0" ]] || { echo "scale_out: node n$i: tool calls that were not ok: $tc" >&2; exit 1; }
				ok=${tc%% *} ok=${ok#ok=}
				calls+=("n$i $ok")
				total=$((total + ok))
			done
			stop_nodes
			x=$(rate "$work/$run/trainer")
			[[ -n $x ]] || { cat "$work/$run/trainer.err" >&2; exit 1; }
			# Every sample ran its episode once: exactly TURNS ok calls each, none run again elsewhere.
			[[ $total -eq $((want * turns)) ]] || { echo "scale_out: $total tool calls, want $((want * turns)) ($want episodes x $turns)" >&2; exit 1; }
			tps[$k-$r]=$x
			echo "| $k | $r | $x | $("$py" -c "print(f'{$x * $turns:.1f}')") | ${calls[*]} | ${cpus[*]} | $("$py" -c "print(f'{$emu1 - $emu0:.1f}')") | $("$py" -c "print(f'{$ch1 - $ch0:.1f}')") | $("$py" -c "print(f'{$box1 - $box0 - ($ours):.1f}')") | $load |"
		done
	done
	for r in $(seq "$repeat"); do
		echo "run $r: 2 nodes / 1 node = $("$py" -c "print(f'{${tps[2-$r]} / ${tps[1-$r]}:.2f}')")x"
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
