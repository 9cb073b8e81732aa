#!/usr/bin/env python3
"""Measures how fast the Python client receives, parses and acks trajectories from a running server.

    go build -o /tmp/devserver ./runtime/stream/internal/devserver
    /tmp/devserver -spool /tmp/spool -tokens 4096 -reuse -fsync=false &   # prints its URL
    python clients/python/benchmarks/consume.py --url ws://127.0.0.1:PORT/v1/stream --samples 5000
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from agentrt_client import Client  # noqa: E402


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--credits", type=int, default=512)
    args = ap.parse_args()
    async with Client(args.url, f"bench-{time.time_ns()}", credits=args.credits) as c:
        t0, cpu0 = time.monotonic(), time.process_time()
        await c.submit([{"id": "x", "messages": [], "n": args.samples}])
        tokens = 0
        async for t in c.trajectories():
            tokens += len(t.token_ids)
            if tokens >= args.samples * len(t.token_ids):
                c.ack(t)
                break
        await c.sync()
        dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
    print(f"{args.samples} trajectories ({tokens // args.samples} tokens) in {dt:.2f}s: {args.samples / dt:.0f}/s; "
          f"client CPU {cpu / args.samples * 1e6:.0f} us/trajectory")


asyncio.run(main())
