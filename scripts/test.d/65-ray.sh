#!/usr/bin/env bash
# agentrt nodes as Ray actors (agentrt_client.ray) on a real local Ray (PyPI ray, CPU; scripts/setup.d/88-ray.sh):
# installs clients/python into the Ray venv (from a copy, as pip users would) and runs clients/python/tests_ray
# against bin/agentrt: two nodes, a trainer through both, one actor killed and restarted, nodes ending with the job.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="${AGENTRT_CACHE:-$HOME/.cache/agentrt}/venv-ray"
[[ -x "$venv/bin/pytest" ]] || { echo "ray: $venv is missing; run make setup" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/clients/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall "$tmp/src"
start=$SECONDS
set +e
# Ray on loopback only (its single-machine mode), without usage reporting.
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 \
	AGENTRT_BIN="${AGENTRT_BIN:-$root/bin/agentrt}" TMPDIR="$tmp" "$venv/bin/pytest" -q -p no:cacheprovider \
	--basetemp="$tmp/pytest" "$root/clients/python/tests_ray"
rc=$?
set -e
echo "ray: pytest took $((SECONDS - start))s"
[[ $rc -eq 5 ]] && { echo "ray: pytest collected no tests" >&2; exit 1; }
exit $rc
