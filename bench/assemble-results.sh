#!/usr/bin/env bash
# Writes bench/RESULTS.md from the per-area figures in bench/results/*.md (each names the command that made it).
set -euo pipefail
cd "$(dirname "$0")"
{
  cat <<'HDR'
# agentrt benchmark results

Every figure below names the command that produced it. Machine: the project's 2-core, 24 GiB Debian 12 box
(`nproc` = 2), shared with other builds while most of these ran: load averages are given where they were
recorded; ratios are taken within one run. Regenerate this file with `bench/assemble-results.sh`.

## Targets (DESIGN.md) at a glance

| target | result | where |
|---|---|---|
| runtime overhead per turn p50 <= 100 µs, p99 <= 1 ms at 1,000 concurrent episodes | **not met**: ~500 µs CPU per turn at C=1000 (0.7 ms wall gap at C=1); profile and next steps in the agent-loop section | agent loop |
| >= 20x strands-sglang episodes/s at equal concurrency | **not met**: 2.6x (C=1), 5.9x (C=64), 6.7x (C=512) at zero latency, 4.6-7.0x with latency; at zero latency two cores cap client+emulator at ~728 ep/s and agentrt reaches 96% of that, so 20x (2,075 ep/s) is out of reach on this box | side by side |
| <= 1/10 strands-sglang CPU-seconds per episode | **not met**: 0.18-0.21 at C=64-512 (start-up excluded 0.17 at C=512: 1.54 vs 8.96 ms) | side by side |
| 10,000 concurrent episodes (~1 s per turn) under 2 GB RSS | **met**: 1,576 MB | agent loop |
| parser call p50 <= 20 µs (2 KB, two calls) | **met at the margin**: 19.8-20.2 µs through the host (15.7 µs example parser) | parsers, plugin host |
| host<->guest tool call overhead <= 20 µs | **met**: 2.1 µs trusted, 10.4 µs sandboxed | plugin host |
| trajectory stream >= 5,000 trajectories/s of 4k tokens | **not met on this box**: ~1,460/s with fsync, 1,700/s without (240 µs CPU per trajectory) | stream |

HDR
  for f in agent-loop side-by-side stream plugin-host parsers sdk-examples sglang-client emulator tito-tokenizer tito-template python-tool; do
    [[ -f "results/$f.md" ]] || continue
    echo
    echo "---"
    echo
    echo "<!-- from bench/results/$f.md -->"
    sed -e 's/^# /## /' "results/$f.md"
  done
} > RESULTS.md
