"""Summarises radix-cache reuse per group of samples in an `agentrt run` output (bench/prefix_cache.sh).

Usage: prefix_cache.py TRAJECTORIES.jsonl

For each group (one prompt's n samples) it adds up meta_info.cached_tokens and prompt_tokens of the first
turn (turn 0: system prompt + tool specs + user message, the same for every sample of the group) and of all
turns, as SGLang reported them per /generate call (segment info). Prints a Markdown table and the totals.
"""

import json
import sys
from collections import defaultdict


def main() -> None:
    groups = defaultdict(lambda: {"n": 0, "t0_prompt": 0, "t0_cached": 0, "prompt": 0, "cached": 0, "calls": 0})
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            g = groups[t["item_id"]]
            g["n"] += 1
            for s in t["segments"]:
                info = s.get("info")
                if s["kind"] != "response" or not info:
                    continue
                g["calls"] += 1
                g["prompt"] += info["prompt_tokens"]
                g["cached"] += info["cached_tokens"]
                if s["turn"] == 0:
                    g["t0_prompt"] += info["prompt_tokens"]
                    g["t0_cached"] += info["cached_tokens"]
    print("| group | samples | turn-0 prompt tokens | turn-0 cached | all-turn prompt tokens | all-turn cached | calls |")
    print("|---|---|---|---|---|---|---|")
    tot = defaultdict(int)
    for k in sorted(groups):
        g = groups[k]
        print(f"| {k} | {g['n']} | {g['t0_prompt']} | {g['t0_cached']} ({100 * g['t0_cached'] / max(g['t0_prompt'], 1):.0f}%) "
              f"| {g['prompt']} | {g['cached']} ({100 * g['cached'] / max(g['prompt'], 1):.0f}%) | {g['calls']} |")
        for f_, v in g.items():
            tot[f_] += v
    print(f"| **all** | {tot['n']} | {tot['t0_prompt']} | {tot['t0_cached']} ({100 * tot['t0_cached'] / max(tot['t0_prompt'], 1):.0f}%) "
          f"| {tot['prompt']} | {tot['cached']} ({100 * tot['cached'] / max(tot['prompt'], 1):.0f}%) | {tot['calls']} |")
    print()
    print(f"prefill tokens computed (prompt - cached): turn 0 {tot['t0_prompt'] - tot['t0_cached']}, "
          f"all turns {tot['prompt'] - tot['cached']}")


if __name__ == "__main__":
    main()
