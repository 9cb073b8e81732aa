#!/usr/bin/env bash
# Sub-agent proof: a "lead" agent hands sub-tasks to a "coder" agent through a sub-agent tool (runtime.toml
# `agent = { name = "coder", ... }`), against the scripted emulator with the real Qwen3 tokenizer (thinking on).
# Per episode the lead calls the coder twice (the first sub-task uses the calculator, the second asks the coder to
# split the work: its call of itself is past max_depth and gets an error result) and answers. Every sample of every
# episode (the coder's episodes are samples of the lead's trajectory, reason "subagent") must pass bench/check.py:
# each /generate request claimed by exactly one sample's turn, the prefix invariant within each sample, verbatim
# responses and logprobs, first_turn per episode, the sub-agent links, and each sample's first prompt (the lead's
# first one aside) equal to transformers' full render of its messages with its own tools.
#
# usage: bench/subagent.sh [--out DIR]
# Knobs (environment): SB_EPISODES (default 4).
# Needs: make setup (the Qwen3 model folder; venv-bench for transformers), env.sh sourced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) echo "bench/subagent.sh: unknown argument $1 (usage: bench/subagent.sh [--out DIR])" >&2; exit 2 ;;
  esac
done
model=${AGENTRT_QWEN3_MODEL:?bench/subagent.sh: source ~/.cache/agentrt/env.sh first}
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
py=${BENCH_VENV:-$cache/venv-bench}/bin/python
[[ -x "$py" ]] || { echo "bench/subagent.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
episodes=${SB_EPISODES:-4}
[[ -n "$out" ]] || out=$(mktemp -d /tmp/agentrt-subagent.XXXXXX)
mkdir -p "$out"
bin=$out/agentrt
(cd "$root" && go build -o "$bin" ./cmd/agentrt)

python3 - "$out" "$episodes" <<'PY'
import json, sys
out, episodes = sys.argv[1], int(sys.argv[2])
def call(name, args):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"
with open(f"{out}/script.jsonl", "w") as s, open(f"{out}/prompts.jsonl", "w") as p:
    for e in range(episodes):
        lines = {
            f"lead{e}": [
                f"<think>\nThe coder can compute part one.\n</think>\n\nDelegating part one.\n" + call("coder", {"task": f"[script:calc{e}] Compute {e + 6}*7."}),
                f"<think>\nNow part two.\n</think>\n\nDelegating part two.\n" + call("coder", {"task": f"[script:split{e}] Split part two further."}),
                f"<think>\nBoth parts are back.\n</think>\n\nTask {e} is done: {(e + 6) * 7}.",
            ],
            f"calc{e}": [
                f"<think>\nUse the calculator.\n</think>\n\n" + call("calculator", {"expression": f"{e + 6}*7"}),
                f"<think>\nThe tool answered.\n</think>\n\nThe result is {(e + 6) * 7}.",
            ],
            f"split{e}": [
                f"<think>\nTry handing half to another coder.\n</think>\n\n" + call("coder", {"task": f"[script:never{e}] Half of part two."}),
                f"<think>\nThat was refused.\n</think>\n\nI did part two myself.",
            ],
        }
        for k, r in lines.items():
            s.write(json.dumps({"key": k, "replies": r}) + "\n")
        p.write(json.dumps({"id": f"lead{e}", "prompt": f"[script:lead{e}] Do task {e} in two parts."}) + "\n")
PY

emu_pid=""
stop_emu() {
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi
}
trap stop_emu EXIT
"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --policy scripted --script "$out/script.jsonl" \
  --context-length 8192 --log "$out/emu.log" > "$out/addr" 2> "$out/emu.err" &
emu_pid=$!
for _ in $(seq 600); do [[ -s "$out/addr" ]] && break; sleep 0.1; done
url=$(head -1 "$out/addr")
[[ -n "$url" ]] || { cat "$out/emu.err" >&2; exit 1; }

cat > "$out/agent.toml" <<EOF
[server]
concurrency = $episodes
[sglang]
workers = ["$url"]
[plugins]
cache_dir = "$cache/wazero"

[[agent]]
name = "lead"
model = "$model"
parser = "hermes"
system_prompt = "You lead. Hand sub-tasks to the coder, then give the final answer."
chat_template_kwargs = { enable_thinking = true }
context_window = 8192
[agent.sampling]
max_new_tokens = 512
[[agent.tools]]
agent = { name = "coder", max_depth = 1, max_turns = 8, max_tokens = 4096 }

[[agent]]
name = "coder"
model = "$model"
parser = "hermes"
system_prompt = "You are the coder. Use the calculator for arithmetic."
chat_template_kwargs = { enable_thinking = true }
context_window = 8192
[agent.sampling]
max_new_tokens = 512
[[agent.tools]]
plugin = "builtin:calculator"
[[agent.tools]]
agent = { name = "coder", max_depth = 1 }
EOF
t0=$(date +%s.%N)
"$bin" run "$out/agent.toml" --agent lead --prompts "$out/prompts.jsonl" --out "$out/trajs.jsonl" --quiet 2> "$out/run.err" || {
  tail -5 "$out/run.err" >&2; exit 1; }
t1=$(date +%s.%N)
stop_emu
chk=$("$py" "$here/check.py" --log "$out/emu.log" --trajs "$out/trajs.jsonl" --model "$model" --system agentrt) || {
  echo "bench/subagent.sh: FAILED the check: $chk" >&2; exit 1; }
python3 - "$out/trajs.jsonl" "$chk" "$t0" "$t1" > "$out/summary.txt" <<'PY'
import json, sys
trajs, chk, t0, t1 = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(l) for l in open(trajs) if l.strip()]
status = {}
for t in rows:
    status[t["status"]] = status.get(t["status"], 0) + 1
sub = sum(1 for t in rows for s in t.get("samples", []) if s.get("reason") == "subagent")
print(json.dumps({"ok": chk["ok"], "episodes": len(rows), "samples": chk["samples"], "subagent_samples": sub,
                  "renders_checked": chk.get("renders_checked"), "status": status, "wall_s": round(t1 - t0, 2)}))
PY
cat "$out/summary.txt"
