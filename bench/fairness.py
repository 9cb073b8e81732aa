#!/usr/bin/env python3
"""Fairness between consumers (issue 16): how long a trainer's one-sample request waits while another trainer
floods the service.

Starts `agentrt serve` (built-in emulator with a fixed latency per /generate) from a copy of runtime.toml, lets
consumer "flood" submit REQUESTS requests of N samples each, then consumer "probe" submits one request of one
sample and times it to its trajectory. Prints a Markdown table row.

    source ~/.cache/agentrt/env.sh
    $AGENTRT_CACHE/venv-client/bin/python bench/fairness.py --bin bin/agentrt

Needs the client (pip install ./clients/python) and AGENTRT_QWEN3_MODEL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from agentrt_client import Client

ROOT = pathlib.Path(__file__).resolve().parents[1]


def config(tmp: pathlib.Path, concurrency: int, latency: str) -> pathlib.Path:
    cfg = (ROOT / "runtime.toml").read_text()
    edits = {
        'model = "~/.cache/agentrt/models/qwen3"': f'model = "{os.environ["AGENTRT_QWEN3_MODEL"]}"',
        'spool_dir = "~/.cache/agentrt/spool"': f'spool_dir = "{tmp / "spool"}"',
        'addr = "127.0.0.1:8080"': 'addr = "127.0.0.1:0"',
        "concurrency = 256": f"concurrency = {concurrency}",
        "seed = 1\n": f'seed = 1\nlatency = {{ fixed = "{latency}" }}\n',
    }
    for old, new in edits.items():
        assert old in cfg, old
        cfg = cfg.replace(old, new, 1)
    p = tmp / "runtime.toml"
    p.write_text(cfg)
    return p


async def measure(url: str, requests: int, n: int) -> tuple[float, int, int]:
    async with Client(url, "flood", credits=100_000) as flood, Client(url, "probe") as probe:
        for i in range(requests):
            await flood.submit([{"id": f"q{i}", "messages": [{"role": "user", "content": f"What is {i}*3+1?"}]}], n=n)
        got = 0

        async def drain() -> None:
            nonlocal got
            async for _ in flood.trajectories():
                got += 1

        drainer = asyncio.create_task(drain())
        t0 = time.perf_counter()
        trajs = await probe.run([{"id": "p", "messages": [{"role": "user", "content": "What is 2+2?"}]}], timeout=600)
        waited = time.perf_counter() - t0
        flood_done_before = got
        drainer.cancel()
        assert len(trajs) == 1 and trajs[0].status == "completed", trajs
        return waited, flood_done_before, requests * n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "bin" / "agentrt"))
    ap.add_argument("--requests", type=int, default=64, help="requests the flooding consumer submits")
    ap.add_argument("--n", type=int, default=16, help="samples per flooding request")
    ap.add_argument("--concurrency", type=int, default=16, help="server.concurrency")
    ap.add_argument("--latency", default="200ms", help="emulator latency per /generate")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        proc = subprocess.Popen([a.bin, "serve", str(config(tmp, a.concurrency, a.latency)), "--log-level", "warn"],
                                stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        try:
            line = proc.stdout.readline()
            url = line.split("WebSocket ")[1].split(")")[0]
            waited, before, total = asyncio.run(measure(url, a.requests, a.n))
        finally:
            proc.terminate()
            proc.wait()
    print(f"| {a.bin} | {a.requests} x {a.n} | {a.concurrency} | {a.latency} | {waited:.2f} s | {before} of {total} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
