#!/usr/bin/env bash
# Prometheus's own PromQL grammar, @prometheus-io/lezer-promql (the parser of Prometheus's web UI), from npm with
# `npm ci` from deploy/grafana/promql/package-lock.json (sha512 integrity for every package) into
# $AGENTRT_CACHE/npm-promql. cmd/agentrt's TestGrafanaDashboardMetrics parses every query of
# deploy/grafana/agentrt.json with it (deploy/grafana/promql/names.mjs) and checks each metric against /metrics.
set -euo pipefail
cache=${AGENTRT_CACHE:?AGENTRT_CACHE must be set (scripts/setup.sh sets it)}
root=${AGENTRT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
src="$root/deploy/grafana/promql"
dest="$cache/npm-promql"
want=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [[ -f "$dest/.lock-sha256" && "$(cat "$dest/.lock-sha256")" == "$want" && -d "$dest/node_modules/@prometheus-io/lezer-promql" ]]; then
	exit 0
fi
command -v npm >/dev/null || { echo "setup: npm not found; install Node.js >= 20 (Debian: apt-get install nodejs npm)" >&2; exit 1; }
rm -rf "$dest" && mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
echo "$want" > "$dest/.lock-sha256"
