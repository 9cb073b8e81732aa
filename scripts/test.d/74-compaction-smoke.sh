#!/usr/bin/env bash
# Compaction (bench/compaction.sh, small): a 4k-window agent runs 30-turn scripted tasks through keep_last, and
# every sample of every episode passes bench/check.py with transformers' render of each new sample's prompt. The
# checker is not vacuous: a kept message changed after the fact (its render no longer the sample's prompt), a
# sample's token changed, and a sample left out must each fail it. Then gpt-oss as-deployed (bench/as_deployed.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${BENCH_VENV:-${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-bench}"
[[ -x "$venv/bin/python" ]] || { echo "compaction smoke: $venv is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CB_EPISODES=2 CB_TURNS=30 BENCH_VENV="$venv" bash "$root/bench/compaction.sh" --out "$out" > "$out/stdout"
python3 - "$out/summary.txt" <<'PY'
import json, sys
last = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
if not last["ok"] or last["episodes"] != 2 or last["samples"] < 4 or last["renders_checked"] != last["samples"] - 2 \
        or last["turns"] != 60 or last["status"] != {"completed": 2}:
    sys.exit("compaction smoke: %s" % json.dumps(last))
PY
for kind in render token drop; do
  python3 - "$out/trajs.jsonl" "$out/bad-$kind.jsonl" "$kind" <<'PY'
import json, sys
src, dst, kind = sys.argv[1:]
ts = [json.loads(l) for l in open(src)]
s = ts[0]["samples"][1]
if kind == "render":
    m = next(m for m in s["messages"][:s["prompt_messages"]] if m["role"] == "tool")
    m["content"] += " (edited)"
elif kind == "token":
    s["token_ids"][s["segments"][0]["length"] + 1] += 1
else:
    ts[0]["samples"] = [x for x in ts[0]["samples"] if x["index"] != 0]
open(dst, "w").write("".join(json.dumps(x) + "\n" for x in ts))
PY
  if "$venv/bin/python" "$root/bench/check.py" --log "$out/emu.log" --trajs "$out/bad-$kind.jsonl" \
      --model "$AGENTRT_QWEN3_MODEL" > "$out/bad-$kind.check" 2>/dev/null; then
    echo "compaction smoke: the checker passed a corrupted ($kind) trajectory" >&2; cat "$out/bad-$kind.check" >&2; exit 1
  fi
done
# gpt-oss with history = "as-deployed" (bench/as_deployed.sh, small): scripted episodes whose calls the template
# rewrites, every sample checked with transformers' render; an edited analysis (reasoning_content) of a rendered
# turn must fail the check.
AD_EPISODES=2 AD_RUNS=gpt-oss-own-calls BENCH_VENV="$venv" bash "$root/bench/as_deployed.sh" --out "$out/ad" > "$out/ad.stdout" ||
  { echo "compaction smoke: bench/as_deployed.sh (gpt-oss) failed" >&2; cat "$out/ad.stdout" >&2; exit 1; }
python3 - "$out/ad/gpt-oss-own-calls.jsonl" "$out/ad/bad.jsonl" <<'PY'
import json, sys
ts = [json.loads(l) for l in open(sys.argv[1])]
if len(ts) != 2 or any(t["status"] != "completed" or len(t.get("samples", [])) != 4 for t in ts):
    sys.exit("compaction smoke: gpt-oss as-deployed: %s" % [(t["status"], len(t.get("samples", []))) for t in ts])
s = ts[0]["samples"][1]
m = next(m for m in s["messages"][:s["prompt_messages"]] if m["role"] == "assistant")
m["reasoning_content"] += " (edited)"
open(sys.argv[2], "w").write("".join(json.dumps(x) + "\n" for x in ts))
PY
if "$venv/bin/python" "$root/bench/check.py" --log "$out/ad/gpt-oss-own-calls.log" --trajs "$out/ad/bad.jsonl" \
    --model "$out/ad/gpt-oss" > "$out/ad-bad.check" 2>/dev/null; then
  echo "compaction smoke: the checker passed an edited gpt-oss analysis" >&2; cat "$out/ad-bad.check" >&2; exit 1
fi
echo "compaction smoke: ok ($(tail -1 "$out/summary.txt")); gpt-oss as-deployed ok"
