#!/usr/bin/env bash
# Soak: DURATION seconds of episodes through `agentrt serve` against `agentrt emulate` injecting faults (5% 503s,
# 2% connection resets, 1% stalls cut by the client's attempt timeout), with a trainer (bench/soak_trainer.py)
# that drops its WebSocket abruptly every DISCONNECT_EVERY seconds and reconnects. Reports trajectories lost and
# misreported statuses (both must be 0) and the server's RSS, goroutines and open files at start, warm and end.
# Not part of CI (it is long by design).
#
# usage: bench/soak.sh [DURATION_S] [DISCONNECT_EVERY_S]       e.g. bench/soak.sh 3600 180  (the full soak)
#   LATENCY (emulator latency model, default 20ms,0,1ms), PROMPTS, N, OUTSTANDING (trainer load), OUT (report dir)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
duration=${1:-3600}
disconnect_every=${2:-180}
latency=${LATENCY:-20ms,0,1ms}
bin=${AGENTRT_BIN:-$root/bin/agentrt}
py=${AGENTRT_CLIENT_PYTHON:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-client/bin/python}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
work=$(mktemp -d)
out=${OUT:-$work}
mkdir -p "$out"
emu_pid= srv_pid= mon_pid= grep_pid=
cleanup() {
	for p in $mon_pid $srv_pid $emu_pid $grep_pid; do kill "$p" 2>/dev/null || true; done
	for p in $mon_pid $srv_pid $emu_pid $grep_pid; do wait "$p" 2>/dev/null || true; done
	[[ "$out" == "$work" ]] || rm -rf "$work"
}
trap cleanup EXIT

# The request log goes through a pipe that keeps only the injected faults (a full log is GBs an hour).
mkfifo "$work/emu.log"
grep -o '"fault":"[a-z0-9_]*"' < "$work/emu.log" > "$out/faults.raw" &
grep_pid=$!
"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 7 --latency "$latency" --log "$work/emu.log" \
	--fault-rate "503=0.05,reset=0.02,stall=0.01,stall_for=120s" > "$work/emu" 2> "$work/emu.err" &
emu_pid=$!
for _ in $(seq 300); do [[ -s "$work/emu" ]] && break; sleep 0.1; done
emu_url=$(head -1 "$work/emu")
[[ "$emu_url" == http://* ]] || { cat "$work/emu.err" >&2; exit 1; }
# The shipped runtime.toml, pointed at this emulator and a fresh spool, with an attempt timeout that cuts stalls.
sed -e "s#^workers = .*#workers = [\"$emu_url\"]#" -e "s#^spool_dir = .*#spool_dir = \"$work/spool\"#" \
	-e "s#^model = .*#model = \"$model\"#" -e 's#^\[sglang.retry\]#[sglang.retry]\nattempt_timeout = "10s"#' \
	"$root/runtime.toml" > "$work/runtime.toml"
"$bin" serve "$work/runtime.toml" --addr 127.0.0.1:0 --log-level warn > "$work/srv" 2> "$out/serve.err" &
srv_pid=$!
for _ in $(seq 600); do grep -q listening "$work/srv" 2>/dev/null && break; sleep 0.1; done
ws=$(sed -n 's/.*WebSocket \(ws:[^)]*\)).*/\1/p' "$work/srv")
[[ -n "$ws" ]] || { cat "$out/serve.err" >&2; exit 1; }
http=${ws/ws:/http:}
http=${http%/v1/stream}

# sample LABEL: one line of the server's RSS (MiB), goroutines and open files.
sample() {
	local rss fds gor
	rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$srv_pid/status")
	fds=$(ls "/proc/$srv_pid/fd" | wc -l)
	gor=$(curl -fsS "$http/metrics" | awk '/^go_goroutines / {print $2}')
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$(date -u +%H:%M:%S)" "$rss" "$gor" "$fds"
}
printf 'when\ttime\trss_mib\tgoroutines\topen_files\n' > "$out/samples.tsv"
sample start >> "$out/samples.tsv"
# A sample a minute while it runs, so a slow leak shows as a trend.
( while sleep 60; do sample running >> "$out/samples.tsv" || exit 0; done ) &
mon_pid=$!

rc=0
"$py" "$root/bench/soak_trainer.py" --url "$ws" --duration "$duration" --disconnect-every "$disconnect_every" \
	--prompts "${PROMPTS:-8}" --n "${N:-4}" --outstanding "${OUTSTANDING:-8}" --report "$out/report.json" 2> "$out/trainer.err" || rc=$?
kill "$mon_pid" 2>/dev/null || true
wait "$mon_pid" 2>/dev/null || true
mon_pid=
sample end >> "$out/samples.tsv"
# The emulator's log ends with the emulator: then the fault counts are complete.
kill "$emu_pid" && wait "$emu_pid" 2>/dev/null || true
wait "$grep_pid" 2>/dev/null || true
emu_pid= grep_pid=

echo "soak: ${duration}s, disconnect every ~${disconnect_every}s, emulator latency $latency, faults 503=5% reset=2% stall=1%"
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  requests {r['requests']} ({r['samples']} samples), trajectories {r['trajectories']}, statuses {r['statuses']}")
print(f"  disconnects {r['disconnects']}, unacked at reconnect {r['unacked_at_welcome']}, redelivered {r['redelivered']}, session failures {r['session_failures']}")
print(f"  LOST {r['lost']}  MISREPORTED {r['misreported']}  never accepted {r['never_accepted']}  (all must be 0)")
for e in r["misreported_examples"] + r["errors"]:
    print("   ", e)
PY
echo "  faults the emulator injected: $(sort "$out/faults.raw" | uniq -c | tr -s ' \n' ' ' | sed 's/"fault"://g')"
column -t "$out/samples.tsv" | sed 's/^/  /'
echo "  report: $out"
exit "$rc"
