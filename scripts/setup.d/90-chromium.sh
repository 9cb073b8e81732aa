#!/usr/bin/env bash
# Debian's Chromium, for the trajectory viewer's browser test (cmd/agentrt TestViewerInBrowser drives it headless
# over the DevTools protocol with chromedp). It installs system-wide (/usr/bin/chromium), the one step that does:
# the browser is a Debian package, not something a registry of ours ships into $AGENTRT_CACHE. Not pinned to an
# exact version: Debian stable ships Chromium only through its security pocket, whose mirror keeps the latest
# build alone, so a pin would stop installing at the next security release.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "90-chromium: need root (or sudo) to apt-get install chromium" >&2; exit 1; }
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version >&2
