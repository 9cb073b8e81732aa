#!/usr/bin/env bash
# Prints the path of a working Python >= 3.12 (strands-sglang >= 0.5.0 needs it), preferring 3.12:
# $BENCH_PYTHON, then python3.12 / python3.13 on PATH (pyenv shims included, if they actually run), then pyenv's
# installed versions. Exits 1 (with what it tried) if there is none.
set -uo pipefail
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
cands=()
[[ -n "${BENCH_PYTHON:-}" ]] && cands+=("$BENCH_PYTHON")
for v in python3.12 python3.13 python3; do c=$(command -v "$v" 2>/dev/null) && cands+=("$c"); done
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for c in "$root"/versions/3.12*/bin/python3 "$root"/versions/3.1[3-9]*/bin/python3; do [[ -x "$c" ]] && cands+=("$c"); done
for c in "${cands[@]}"; do
  if ok "$c"; then echo "$c"; exit 0; fi
done
echo "bench: no Python >= 3.12 found (tried: ${cands[*]:-nothing}); set BENCH_PYTHON" >&2
exit 1
