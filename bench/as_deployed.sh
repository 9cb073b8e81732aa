#!/usr/bin/env bash
# history = "as-deployed", checked independently: for Qwen3 (thinking), DeepSeek-R1 (SGLang's tool template, the
# file SGLang serves R1 with) and gpt-oss, agentic episodes whose every reply reasons first run against the emulator,
# every turn a sample whose prompt is the full render of the conversation so far, and bench/check.py --model proves
# each sample against the emulator's log and each later sample's prompt against transformers' apply_chat_template of
# its recorded messages (R1: a model folder of DeepSeek V3's tokenizer with SGLang's template as its chat template;
# gpt-oss: its tokenizer with the reference chat template). gpt-oss runs twice: the agentic emulator (an analysis
# message, then a call written as the template writes it, or the final channel's answer), and scripted replies
# that write each call as gpt-oss models do ("<|channel|>commentary to=functions.NAME <|constrain|>json", arguments
# without spaces), which the template writes back in its own form: there no later prompt extends the tokens as
# generated.
#
# usage: bench/as_deployed.sh [--out DIR]     Knobs: AD_EPISODES (per run, default 4); AD_RUNS (the runs, default
# all: qwen3 deepseek-r1 gpt-oss gpt-oss-own-calls).
# Needs: make setup (the model folders; venv-bench for transformers), env.sh sourced.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) echo "bench/as_deployed.sh: unknown argument $1 (usage: bench/as_deployed.sh [--out DIR])" >&2; exit 2 ;;
  esac
done
qwen=${AGENTRT_QWEN3_MODEL:?bench/as_deployed.sh: source ~/.cache/agentrt/env.sh first}
dsv3=${AGENTRT_DEEPSEEK_V3_MODEL:?bench/as_deployed.sh: source ~/.cache/agentrt/env.sh first}
gptoss_tok=${AGENTRT_GPTOSS_MODEL:?bench/as_deployed.sh: source ~/.cache/agentrt/env.sh first}
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
py=${BENCH_VENV:-$cache/venv-bench}/bin/python
[[ -x "$py" ]] || { echo "bench/as_deployed.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
episodes=${AD_EPISODES:-4}
runs=" ${AD_RUNS:-qwen3 deepseek-r1 gpt-oss gpt-oss-own-calls} "
[[ -n "$out" ]] || out=$(mktemp -d /tmp/agentrt-as-deployed.XXXXXX)
mkdir -p "$out"
bin=$out/agentrt
(cd "$root" && go build -o "$bin" ./cmd/agentrt)
# DeepSeek-R1 as SGLang serves it: V3's tokenizer files, SGLang's tool template as the folder's chat template.
r1=$out/deepseek-r1
mkdir -p "$r1"
for f in "$dsv3"/*; do [[ $(basename "$f") == chat_template.jinja ]] || ln -sf "$f" "$r1/"; done
rm -f "$r1/tokenizer_config.json"
python3 - "$dsv3/tokenizer_config.json" "$r1/tokenizer_config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("chat_template", None)
json.dump(c, open(sys.argv[2], "w"))
PY
cp "$root/runtime/family/testdata/sglang-templates/tool_chat_template_deepseekv3.jinja" "$r1/chat_template.jinja"
# gpt-oss: the set-up folder has its tokenizer only; the reference chat template (gpt-oss-20b's) goes beside it.
gptoss=$out/gpt-oss
mkdir -p "$gptoss"
for f in "$gptoss_tok"/*; do [[ $(basename "$f") == chat_template.jinja ]] || ln -sf "$f" "$gptoss/"; done
cp "$root/tito/testdata/families/gpt-oss/chat_template.jinja" "$gptoss/chat_template.jinja"

python3 - "$out/prompts.jsonl" "$episodes" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"q{i}", "prompt": f"Compute ({i}+25)*3 and 144/{i + 2} and {i}*9 and 7-{i}."}) + "\n")
PY
# The scripted gpt-oss replies: per episode 3 calls (an analysis message, then the call as gpt-oss models write it),
# then the final channel's answer. The scripted policy counts assistant messages after the task, and a harmony turn
# is two (its analysis and its call), so turn t's reply is the script's reply 2t.
python3 - "$out/harmony-prompts.jsonl" "$out/harmony-script.jsonl" "$episodes" <<'PY'
import json, sys
with open(sys.argv[1], "w") as p, open(sys.argv[2], "w") as s:
    for i in range(int(sys.argv[3])):
        key = f"h{i}"
        replies = [""] * 8
        for t in range(3):
            replies[2 * t] = (f"<|channel|>analysis<|message|>Part {t} of task {i} needs the calculator.<|end|>"
                              f"<|start|>assistant<|channel|>commentary to=functions.calculator <|constrain|>json"
                              f"<|message|>{{\"expression\":\"{i + t}*7\"}}<|call|>")
        replies[6] = ("<|channel|>analysis<|message|>All parts are done.<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>The answer is 42.<|return|>")
        s.write(json.dumps({"key": key, "replies": replies}) + "\n")
        p.write(json.dumps({"id": key, "prompt": f"[script:{key}] Work through the three parts of task {i}."}) + "\n")
PY
emu_pid=""
stop_emu() {
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi
}
trap stop_emu EXIT
failed=0
# RUN FAMILY MODEL PROMPTS EMULATOR-FLAGS...
for spec in "qwen3 qwen3 $qwen prompts --format hermes --think-rate 1" \
    "deepseek-r1 deepseek-r1 $r1 prompts --format deepseekv3 --think-rate 1" \
    "gpt-oss gpt-oss $gptoss prompts --format gpt-oss --think-rate 1" \
    "gpt-oss-own-calls gpt-oss $gptoss harmony-prompts --policy scripted --script $out/harmony-script.jsonl"; do
  read -r run fam model prompts flags <<< "$spec"
  [[ $runs == *" $run "* ]] || continue
  rm -f "$out/$run.addr" "$out/$run.log"
  # shellcheck disable=SC2086 # flags are words
  "$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 3 $flags --log "$out/$run.log" \
    > "$out/$run.addr" 2> "$out/$run.emu.err" &
  emu_pid=$!
  for _ in $(seq 600); do [[ -s "$out/$run.addr" ]] && break; sleep 0.1; done
  url=$(head -1 "$out/$run.addr")
  cat > "$out/$run.toml" <<EOF
[server]
concurrency = 4
[sglang]
workers = ["$url"]
[plugins]
cache_dir = "$cache/wazero"
[[agent]]
name = "as-deployed"
model = "$model"
family = "$fam"
system_prompt = "You are a careful assistant. Use the calculator tool for arithmetic, then give the final answer."
history = "as-deployed"
[agent.sampling]
max_new_tokens = 1024
[[agent.tools]]
plugin = "builtin:calculator"
[[agent.hooks]]
plugin = "builtin:limiter"
config = { max_tool_iters = 20, max_tool_calls = 40, max_messages = 100 }
EOF
  "$bin" run "$out/$run.toml" --prompts "$out/$prompts.jsonl" --out "$out/$run.jsonl" --quiet 2> "$out/$run.err" || {
    tail -5 "$out/$run.err" >&2; failed=1; stop_emu; continue; }
  stop_emu
  if chk=$("$py" "$here/check.py" --log "$out/$run.log" --trajs "$out/$run.jsonl" --model "$model" --system "$run" 2>/dev/null); then
    echo "$chk"
  else
    echo "bench/as_deployed.sh: $run FAILED the check: $chk" >&2; failed=1
  fi
  python3 - "$out/$run.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    t = json.loads(l)
    ss = t.get("samples") or [t]
    ext = 0
    for s in ss[1:]:
        p = ss[s["parent"]]["token_ids"]
        ext += s["token_ids"][:len(p)] == p
    print(f"  {t['id']}: {t['status']}, {int(t['metrics']['turns'])} turns, {len(ss)} samples, "
          f"{ext} of {len(ss) - 1} later prompts extend their parent's tokens as generated")
PY
done
exit $failed
