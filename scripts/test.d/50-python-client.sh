#!/usr/bin/env bash
# The Python trainer client: installs clients/python into its venv (from a copy, as pip users would), then runs
# its pytest suite against a real trajectory-stream server process (runtime/stream/internal/devserver).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-client"
[[ -x "$venv/bin/pytest" ]] || { echo "python client: $venv is missing; run make setup" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/devserver" ./runtime/stream/internal/devserver)
cp -r "$root/clients/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall "$tmp/src"
cd "$root/clients/python"
set +e
AGENTRT_DEVSERVER="$tmp/devserver" AGENTRT_BIN="${AGENTRT_BIN:-$root/bin/agentrt}" "$venv/bin/pytest" -q -p no:cacheprovider tests
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
  echo "python client: pytest collected no tests" >&2
  exit 1
fi
exit $rc
