#!/usr/bin/env bash
# Measures SGLang radix-cache reuse per group of n samples: `agentrt emulate` (a separate process; its cache
# applies SGLang's match limit, Req._compute_max_prefix_len) and `agentrt run` over GROUPS arithmetic prompts with
# N samples each. Prints bench/prefix_cache.py's table: per group, the first turn's prompt and cached tokens
# (the prompt every sample of the group shares) and all turns'.
#
# usage: bench/prefix_cache.sh GROUPS N [LATENCY] [CONCURRENCY]   e.g. bench/prefix_cache.sh 16 8 20ms,20us,1ms
#        LATENCY is the emulator's latency model (agentrt emulate --latency); AGENTRT_BIN picks the binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
groups=${1:?groups}
n=${2:?samples per group}
latency=${3:-}
conc=${4:-256}
bin=${AGENTRT_BIN:-$root/bin/agentrt}
model=${AGENTRT_QWEN3_MODEL:?source ~/.cache/agentrt/env.sh first}
work=$(mktemp -d)
emu_pid=
trap '[[ -n "$emu_pid" ]] && kill "$emu_pid" 2>/dev/null; rm -rf "$work"' EXIT

"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --latency "$latency" --max-running-requests 0 \
  > "$work/addr" 2> "$work/emu.err" &
emu_pid=$!
for _ in $(seq 100); do [[ -s "$work/addr" ]] && break; sleep 0.1; done
url=$(head -1 "$work/addr")
[[ -n "$url" ]] || { cat "$work/emu.err" >&2; exit 1; }

python3 - "$groups" "$n" > "$work/prompts.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"id": f"g{i:03d}", "prompt": f"What is {17 * i + 23} * {i + 11}?", "n": int(sys.argv[2])}))
PY
# weight_version_warn_after is dropped so that binaries from before it (the "before" figure) read the file too.
sed -e "s|^workers = .*|workers = [\"$url\"]|" -e "s|^spool_dir = .*|spool_dir = \"$work/spool\"|" \
  -e "/^weight_version_warn_after/,+1d" "$root/runtime.toml" > "$work/runtime.toml"
sed -i "s|^model = \"~/.cache/agentrt/models/qwen3\"|model = \"$model\"|" "$work/runtime.toml"
"$bin" run "$work/runtime.toml" --prompts "$work/prompts.jsonl" --out "$work/out.jsonl" --concurrency "$conc" --quiet >&2
python3 "$here/prefix_cache.py" "$work/out.jsonl"
