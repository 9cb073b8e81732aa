#!/usr/bin/env bash
# The adapters inside the real trainers: verl 0.9.1 (AgentLoopWorker.generate_sequences) and TorchRL 0.14.1 (GRPOLoss)
# on CPU, each in its venv from scripts/setup.d/65-trainers.sh, against agentrt serve on the emulator. The client is
# installed into each venv from a copy of the working tree, as pip users would.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="${AGENTRT_CACHE:-$HOME/.cache/agentrt}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/clients/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
for name in verl torchrl; do
  venv="$cache/venv-$name"
  [[ -x "$venv/bin/pytest" ]] || { echo "trainers: $venv is missing; run make setup" >&2; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall "$tmp/src"
  cd "$root/clients/python"
  set +e
  AGENTRT_BIN="${AGENTRT_BIN:-$root/bin/agentrt}" "$venv/bin/pytest" -q -p no:cacheprovider "trainer_tests/test_$name.py"
  rc=$?
  set -e
  [[ $rc -eq 5 ]] && { echo "trainers: pytest collected no $name tests" >&2; exit 1; }
  [[ $rc -eq 0 ]] || exit $rc
done
