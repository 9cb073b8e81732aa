#!/usr/bin/env bash
# Sub-agents (bench/subagent.sh, small): a lead agent runs a coder agent as a tool twice per episode; every sample
# (the coder's episodes are samples of the lead's trajectory) passes bench/check.py with transformers' render of
# each sample's first prompt with its own tools. The checker is not vacuous: a sub-agent sample without its tools
# (rendered with the lead's), one with a wrong parent, a changed token, and a sub-agent sample left out must each
# fail it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${BENCH_VENV:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-bench}"
[[ -x "$venv/bin/python" ]] || { echo "subagent smoke: $venv is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
SB_EPISODES=2 BENCH_VENV="$venv" bash "$root/bench/subagent.sh" --out "$out" > "$out/stdout"
python3 - "$out/summary.txt" <<'PY'
import json, sys
last = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
if not last["ok"] or last["episodes"] != 2 or last["samples"] != 6 or last["subagent_samples"] != 4 \
        or last["renders_checked"] != 4 or last["status"] != {"completed": 2}:
    sys.exit("subagent smoke: %s" % json.dumps(last))
PY
for kind in tools parent token drop; do
  python3 - "$out/trajs.jsonl" "$out/bad-$kind.jsonl" "$kind" <<'PY'
import json, sys
src, dst, kind = sys.argv[1:]
ts = [json.loads(l) for l in open(src)]
s = ts[0]["samples"][0]
if kind == "tools":
    del s["tools"]
elif kind == "parent":
    s["parent"] = 1
elif kind == "token":
    s["token_ids"][s["segments"][0]["length"] + 1] += 1
else:
    ts[0]["samples"] = ts[0]["samples"][1:]
    for i, x in enumerate(ts[0]["samples"]):
        x["index"] = i
        if x.get("parent", -1) > 0:
            x["parent"] -= 1
open(dst, "w").write("".join(json.dumps(x) + "\n" for x in ts))
PY
  if "$venv/bin/python" "$root/bench/check.py" --log "$out/emu.log" --trajs "$out/bad-$kind.jsonl" \
      --model "$AGENTRT_QWEN3_MODEL" > "$out/bad-$kind.check" 2>/dev/null; then
    echo "subagent smoke: the checker passed a corrupted ($kind) trajectory" >&2; cat "$out/bad-$kind.check" >&2; exit 1
  fi
done
echo "subagent smoke: ok ($(tail -1 "$out/summary.txt"))"
