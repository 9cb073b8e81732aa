#!/usr/bin/env bash
# Installs everything agentrt needs to build and test, from the package registries only.
# Idempotent; everything lands in the cache ($AGENTRT_CACHE, default ~/.cache/agentrt), never in the repo.
# Each step is one file in scripts/setup.d, run in name order; each skips work that is already done.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export AGENTRT_ROOT=$(cd "$here/.." && pwd)
export AGENTRT_CACHE=${AGENTRT_CACHE:-$HOME/.cache/agentrt}
mkdir -p "$AGENTRT_CACHE"
for step in "$here"/setup.d/*.sh; do
  echo "setup: $(basename "$step")" >&2
  bash "$step"
done
# env.sh is what the Makefile and scripts source: cgo link flags, model folders, tool paths.
bash "$here/env.sh" --print > "$AGENTRT_CACHE/env.sh"
