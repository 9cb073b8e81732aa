#!/usr/bin/env bash
# Compaction benchmark and proof: an agent whose context window is 4k tokens runs long scripted tasks (60 turns by
# default) through [agent.context] policy = "keep_last", against the scripted emulator with the real Qwen3 tokenizer
# (thinking on); every episode must complete, and every sample of every episode must pass bench/check.py: each
# /generate request claimed by exactly one sample's turn, the prefix invariant within each sample, verbatim
# responses and logprobs, and each later sample's first prompt equal to transformers' full render of its messages.
#
# usage: bench/compaction.sh [--out DIR]
# Knobs (environment): CB_EPISODES (default 4), CB_TURNS (default 60), CB_MAX_TOKENS (the threshold, default 3000),
#   CB_KEEP (keep_turns, default 3), CB_WINDOW (context_window, default 4096), CB_HISTORY (the agent's history:
#   as-generated, the default, or as-deployed: every turn a sample whose prompt is the full render), CB_POLICY
#   (keep_last, the default, or summarize: the summary call a sample of its own), CB_MASK_SUMMARY (with summarize:
#   true gives the summary calls loss mask 0, each summary sample marked "masked"; unset: the summaries train).
# Needs: make setup (the Qwen3 model folder; venv-bench for transformers), env.sh sourced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) echo "bench/compaction.sh: unknown argument $1 (usage: bench/compaction.sh [--out DIR])" >&2; exit 2 ;;
  esac
done
model=${AGENTRT_QWEN3_MODEL:?bench/compaction.sh: source ~/.cache/agentrt/env.sh first}
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
py=${BENCH_VENV:-$cache/venv-bench}/bin/python
[[ -x "$py" ]] || { echo "bench/compaction.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
episodes=${CB_EPISODES:-4}; turns=${CB_TURNS:-60}; maxtok=${CB_MAX_TOKENS:-3000}; keep=${CB_KEEP:-3}; window=${CB_WINDOW:-4096}
history=${CB_HISTORY:-as-generated}
policy=${CB_POLICY:-keep_last}
[[ -n "$out" ]] || out=$(mktemp -d /tmp/agentrt-compaction.XXXXXX)
mkdir -p "$out"
bin=$out/agentrt
(cd "$root" && go build -o "$bin" ./cmd/agentrt)

# The workload: per episode a [script:KEY] task and its replies. Each reply thinks (~90 words), says its [turn:N]
# (the scripted emulator goes on after the last marker when old turns are dropped) and calls the calculator; the
# last reply answers.
python3 - "$out" "$episodes" "$turns" <<'PY'
import json, sys
out, episodes, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
words = "the agent reads the long task again and plans its next step with care before it calls the tool".split()
with open(f"{out}/script.jsonl", "w") as s, open(f"{out}/prompts.jsonl", "w") as p:
    for e in range(episodes):
        key = f"compact{e}"
        replies = []
        for i in range(turns - 1):
            think = ", then ".join([" ".join(words)] * 4) + ", then " + " ".join(words[:8 + (i + e) % (len(words) - 8)])
            call = json.dumps({"name": "calculator", "arguments": {"expression": f"{i + 2}*7+{e}"}})
            replies.append(f"<think>\nStep {i}: {think}.\n</think>\n\n[turn:{i}] Working on part {i} of task {e}.\n"
                           f"<tool_call>\n{call}\n</tool_call>")
        replies.append(f"<think>\nAll parts are done.\n</think>\n\n[turn:{turns - 1}] The answer to task {e} is 42.")
        s.write(json.dumps({"key": key, "replies": replies}) + "\n")
        p.write(json.dumps({"id": key, "prompt": f"[script:{key}] Work through all {turns} parts of task {e}."}) + "\n")
PY

emu_pid=""
stop_emu() {
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi
}
trap stop_emu EXIT
"$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 1 --policy scripted --script "$out/script.jsonl" \
  --context-length "$window" --log "$out/emu.log" > "$out/addr" 2> "$out/emu.err" &
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
name = "compacting"
model = "$model"
parser = "hermes"
system_prompt = "You are a careful assistant. Use the calculator tool, then give the final answer."
chat_template_kwargs = { enable_thinking = true }
context_window = $window
history = "$history"
[agent.context]
policy = "$policy"
max_tokens = $maxtok
keep_turns = $keep
${CB_MASK_SUMMARY:+mask_summary = $CB_MASK_SUMMARY}
[agent.sampling]
max_new_tokens = 512
temperature = 1.0
[[agent.tools]]
plugin = "builtin:calculator"
[[agent.hooks]]
plugin = "builtin:limiter"
config = { max_tool_iters = 1000, max_tool_calls = 1000, max_messages = 4000 }
EOF
t0=$(date +%s.%N)
"$bin" run "$out/agent.toml" --prompts "$out/prompts.jsonl" --out "$out/trajs.jsonl" --quiet 2> "$out/run.err" || {
  tail -5 "$out/run.err" >&2; exit 1; }
t1=$(date +%s.%N)
stop_emu
chk=$("$py" "$here/check.py" --log "$out/emu.log" --trajs "$out/trajs.jsonl" --model "$model" --system agentrt) || {
  echo "bench/compaction.sh: FAILED the check: $chk" >&2; exit 1; }
python3 - "$out/trajs.jsonl" "$chk" "$t0" "$t1" > "$out/summary.txt" <<'PY'
import json, sys
trajs, chk, t0, t1 = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(l) for l in open(trajs) if l.strip()]
for t in rows:
    ss = t.get("samples") or [t]
    print(f"{t['id']}: {t['status']}, {int(t['metrics']['turns'])} turns, {len(ss)} samples, "
          f"sample tokens {[len(s['token_ids']) for s in ss]}, masked samples {[s['index'] for s in ss if s.get('masked')]}, "
          f"reward {t['reward']}")
print(json.dumps({"ok": chk["ok"], "episodes": chk["trajectories"], "samples": chk["samples"],
                  "renders_checked": chk["renders_checked"], "turns": chk["turns"],
                  "logged_requests": chk["logged_requests"], "status": chk["status"], "wall_s": round(t1 - t0, 2)}))
PY
cat "$out/summary.txt"
