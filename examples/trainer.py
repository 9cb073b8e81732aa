#!/usr/bin/env python3
"""A minimal trainer loop against `agentrt serve`: submits 64 prompts with n=8 samples each, receives the 512
trajectories as they finish (acking each after it is handled), and prints a summary.

    python examples/trainer.py --url ws://127.0.0.1:8080/v1/stream

Install the client first (`pip install ./clients/python`; `make setup` builds a venv with it). Prompts come
from --prompts (a JSONL file of {"id", "messages", "label"} objects) or are generated arithmetic questions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import sys
import time

try:
    import agentrt_client
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "clients" / "python"))
    import agentrt_client

from agentrt_client import Client, summarize


def load_prompts(path: str | None, count: int) -> list[dict]:
    if path:
        with open(path) as f:
            items = [json.loads(line) for line in f if line.strip()]
        return items[:count]
    return [
        {"id": f"q{i}", "messages": [{"role": "user", "content": f"What is {i} + {2 * i}? Use the calculator."}], "label": str(3 * i)}
        for i in range(count)
    ]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("AGENTRT_URL", "ws://127.0.0.1:8080/v1/stream"), help="agentrt serve's WebSocket endpoint")
    ap.add_argument("--token", default=os.environ.get("AGENTRT_TOKEN"), help="bearer token (default $AGENTRT_TOKEN)")
    ap.add_argument("--consumer-id", default=f"example-trainer-{os.getpid()}")
    ap.add_argument("--agent", default=None, help="agent name from runtime.toml (default: the default agent)")
    ap.add_argument("--prompts", default=None, help="JSONL file of prompts")
    ap.add_argument("--count", type=int, default=64, help="number of prompts")
    ap.add_argument("-n", type=int, default=8, help="samples per prompt")
    ap.add_argument("--temperature", type=float, default=1.0)
    args = ap.parse_args()

    items = load_prompts(args.prompts, args.count)
    for it in items:
        it.setdefault("n", args.n)
    want = sum(it["n"] for it in items)
    start = time.monotonic()
    trajs = []
    async with Client(args.url, args.consumer_id, args.token) as client:
        rid = await client.submit(items, agent=args.agent, sampling={"temperature": args.temperature})
        print(f"submitted request {rid}: {len(items)} prompts x n={args.n} = {want} episodes", file=sys.stderr)
        async for traj in client.trajectories():  # each one is acked when the loop asks for the next
            trajs.append(traj)
            if len(trajs) % 64 == 0:
                print(f"  {len(trajs)}/{want} trajectories", file=sys.stderr)
            if len(trajs) == want:
                client.ack(traj)
                break
        done = await client.wait_request(rid)
    elapsed = time.monotonic() - start

    s = summarize(trajs)
    print(f"request {rid}: {done.status}, {s['trajectories']} trajectories in {elapsed:.2f}s ({s['trajectories'] / elapsed:.1f}/s)")
    print("status:        " + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())))
    mr = s["mean_reward"]
    print(f"mean reward:   {mr:.4f}" if mr is not None else "mean reward:   n/a (no reward plugin)")
    print(f"tokens:        {s['tokens']} total, {s['response_tokens']} sampled (loss_mask 1)")
    ratio = s["prefix_cache_hit_ratio"]
    print(f"prefix cache:  {s['cached_tokens']}/{s['prompt_tokens']} prompt tokens cached" + (f" ({ratio:.1%})" if ratio is not None else ""))
    return 0 if done.status == "completed" and len(trajs) == want else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
