#!/usr/bin/env bash
# stress.sh runs the Go suites with -race -count=N while CPU hogs keep every core busy: a test that assumes
# timing (a fixed sleep, a short deadline, a counter read before the event it counts) fails here first.
#   STRESS_PKGS   packages to test (default ./...)
#   STRESS_COUNT  -count (default 5)
#   STRESS_HOGS   busy loops to run alongside (default: one per core)
# Used by `make test-stress`. The hogs are killed on every exit path (trap), so none outlives the run.
set -euo pipefail

pkgs=${STRESS_PKGS:-./...}
count=${STRESS_COUNT:-5}
hogs=${STRESS_HOGS:-$(nproc)}

pids=()
stop_hogs() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

for ((i = 0; i < hogs; i++)); do
	# A subshell spinning in pure bash: CPU only, no I/O, no allocation.
	( while :; do :; done ) &
	pids+=("$!")
done
echo "stress: $hogs CPU hogs (pids ${pids[*]}); go test -race -count=$count $pkgs" >&2

# -timeout covers count runs of the slowest package on a loaded machine; a hung test still fails with a
# goroutine dump earlier, from internal/testutil's waits.
# shellcheck disable=SC2086
go test -race -count="$count" -timeout 90m $pkgs
