#!/usr/bin/env bash
# Every Go fuzz target for a few seconds (FUZZTIME, default 3s): new inputs beyond the committed corpora, on every
# CI run. `make fuzz` runs them longer.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
FUZZTIME=${FUZZTIME:-3s} bash "$root/scripts/fuzz.sh"
