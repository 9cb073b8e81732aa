#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target in the repository (each `func FuzzX(f *testing.F)` in a tracked _test.go) for a
# bounded time, one after the other.
#   FUZZTIME       time per target (default 10s; `make test` uses 3s through scripts/test.d/40-fuzz.sh)
#   FUZZ_MATCH     only targets whose "dir:FuzzX" matches this extended regex (default: all)
#   FUZZ_PARALLEL  fuzz workers per target (default: go's, one per core)
# A failing input is written by `go test` to <package>/testdata/fuzz/FuzzX/<hash>: commit it with the fix, and it
# runs as a regression test in every plain `go test` from then on. Exits 1 if any target failed.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
match=${FUZZ_MATCH:-}
par=()
[[ -n "${FUZZ_PARALLEL:-}" ]] && par=(-parallel "$FUZZ_PARALLEL")

mapfile -t targets < <(git ls-files '*_test.go' | xargs grep -oE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1:\2#' | sort -u)
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }

# new_inputs lists the inputs go test has written (untracked files) under a target's corpus directory.
new_inputs() { git ls-files --others --exclude-standard -- "$1/testdata/fuzz/$2" 2>/dev/null | sort; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
ran=0
for t in "${targets[@]}"; do
	[[ -z "$match" || "$t" =~ $match ]] || continue
	dir=${t%%:*} name=${t##*:}
	ran=$((ran + 1))
	start=$SECONDS
	# -fuzzminimizetime bounds the minimisation of each new input (unbounded, multi-KB seeds stall a loaded box).
	ok=false
	for try in 1 2 3; do
		before=$(new_inputs "$dir" "$name")
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5x "${par[@]}" "./$dir" >"$log" 2>&1; then
			ok=true
			break
		fi
		# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a failure when a worker is starved at
		# that moment (go.dev/issue/75804, fixed in Go 1.27): a bare "context deadline exceeded" with no input
		# written is that race, not a finding, so run the target again (at most twice).
		if grep -qx '[[:space:]]*context deadline exceeded' "$log" &&
			[[ "$(new_inputs "$dir" "$name")" == "$before" ]] && [[ $try -lt 3 ]]; then
			echo "fuzz: again $dir $name: the coordinator's deadline race (go.dev/issue/75804), no input written"
			continue
		fi
		break
	done
	if $ok; then
		echo "fuzz: ok   $dir $name ($((SECONDS - start))s)"
	else
		echo "fuzz: FAIL $dir $name ($((SECONDS - start))s)"
		tail -40 "$log" | sed 's/^/    /'
		failed+=("$t")
	fi
done
[[ $ran -gt 0 ]] || { echo "fuzz: FUZZ_MATCH=$match matches no target (have: ${targets[*]})" >&2; exit 1; }
if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz: ${#failed[@]} of $ran targets failed: ${failed[*]} (inputs in <package>/testdata/fuzz/)" >&2
	exit 1
fi
echo "fuzz: all $ran targets ran $fuzztime each without a failure"
