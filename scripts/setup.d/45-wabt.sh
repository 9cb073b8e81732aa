#!/usr/bin/env bash
# Installs wabt (wat2wasm), which scripts/wasm.d/10-go-plugins.sh uses to rebuild the hand-written WAT test guests of
# the plugin host (runtime/plugin/testdata/wat). Debian bookworm's original build, pinned, so rebuilds are exact.
set -euo pipefail
want="wabt=1.0.32-1"
have=$(dpkg-query -W -f='${Status} ${Version}' wabt 2>/dev/null || true)
[[ "$have" == "install ok installed 1.0.32-1" ]] && exit 0
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)
echo "setup: apt-get install $want" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$want" >/dev/null
