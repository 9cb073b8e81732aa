#!/usr/bin/env bash
# history = "as-deployed", checked independently: for Qwen3 (thinking) and DeepSeek-R1 (SGLang's tool template, the
# file SGLang serves R1 with), agentic episodes whose every reply reasons first run against the emulator, every turn
# a sample whose prompt is the full render of the conversation so far, and bench/check.py --model proves each sample
# against the emulator's log and each later sample's prompt against transformers' apply_chat_template of its
# recorded messages (R1: a model folder of DeepSeek V3's tokenizer with SGLang's template as its chat template).
#
# usage: bench/as_deployed.sh [--out DIR]     Knobs: AD_EPISODES (per family, default 4).
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
cache=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
py=${BENCH_VENV:-$cache/venv-bench}/bin/python
[[ -x "$py" ]] || { echo "bench/as_deployed.sh: $py is missing: run make setup (scripts/setup.d/70-bench.sh)" >&2; exit 1; }
episodes=${AD_EPISODES:-4}
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

python3 - "$out/prompts.jsonl" "$episodes" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"q{i}", "prompt": f"Compute ({i}+25)*3 and 144/{i + 2} and {i}*9 and 7-{i}."}) + "\n")
PY
emu_pid=""
stop_emu() {
  if [[ -n "$emu_pid" ]]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; emu_pid=""; fi
}
trap stop_emu EXIT
failed=0
# family MODEL FORMAT FAMILY
for spec in "qwen3 $qwen hermes" "deepseek-r1 $r1 deepseekv3"; do
  read -r fam model format <<< "$spec"
  rm -f "$out/$fam.addr" "$out/$fam.log"
  "$bin" emulate --model "$model" --addr 127.0.0.1:0 --seed 3 --format "$format" --think-rate 1 --log "$out/$fam.log" \
    > "$out/$fam.addr" 2> "$out/$fam.emu.err" &
  emu_pid=$!
  for _ in $(seq 600); do [[ -s "$out/$fam.addr" ]] && break; sleep 0.1; done
  url=$(head -1 "$out/$fam.addr")
  cat > "$out/$fam.toml" <<EOF
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
  "$bin" run "$out/$fam.toml" --prompts "$out/prompts.jsonl" --out "$out/$fam.jsonl" --quiet 2> "$out/$fam.err" || {
    tail -5 "$out/$fam.err" >&2; failed=1; stop_emu; continue; }
  stop_emu
  if chk=$("$py" "$here/check.py" --log "$out/$fam.log" --trajs "$out/$fam.jsonl" --model "$model" --system "$fam" 2>/dev/null); then
    echo "$chk"
  else
    echo "bench/as_deployed.sh: $fam FAILED the check: $chk" >&2; failed=1
  fi
  python3 - "$out/$fam.jsonl" <<'PY'
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
