#!/usr/bin/env python3
"""Per-turn client overhead from an `agentrt emulate --log` file.

For each episode (request ids "<episode>.<turn>"), the gap between the emulator finishing turn t's response and
receiving turn t+1's request is everything the client did in between: decode, parse, hooks, tools, template
delta, tokenization, HTTP. Prints JSON: turns, gaps (count, p50, p90, p99, max in microseconds).

Usage: turn_gaps.py EMULATOR_LOG [--rid-sep .]
"""
import json
import sys
from collections import defaultdict


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[k]


def gaps(path, sep="."):
    turns = defaultdict(dict)
    n = 0
    for line in open(path):
        r = json.loads(line)
        if r.get("path") != "/generate" or r.get("status") != 200 or r.get("fault"):
            continue
        rid = r.get("rid") or ""
        ep, _, t = rid.rpartition(sep)
        if not ep or not t.isdigit():
            continue
        n += 1
        turns[ep][int(t)] = (r["recv_ns"], r["sent_ns"])
    out = []
    for ep, ts in turns.items():
        for t in sorted(ts):
            if t + 1 in ts:
                out.append((ts[t + 1][0] - ts[t][1]) / 1000.0)
    return n, out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sep = "."
    if "--rid-sep" in sys.argv:
        sep = sys.argv[sys.argv.index("--rid-sep") + 1]
    n, g = gaps(sys.argv[1], sep)
    print(json.dumps({
        "requests": n,
        "gaps": len(g),
        "p50_us": percentile(g, 50),
        "p90_us": percentile(g, 90),
        "p99_us": percentile(g, 99),
        "max_us": max(g) if g else None,
    }))


if __name__ == "__main__":
    main()
