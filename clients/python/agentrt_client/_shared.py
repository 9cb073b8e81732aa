"""One Client per event loop and configuration, shared by the trainer integrations (slime and verl call a
function or construct an object per sample; they must not open a connection per sample)."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from .client import Client

_clients: dict[tuple[int, str, str], tuple[Client, asyncio.Lock]] = {}


def settings(source: Any = None, prefix: str = "agentrt") -> dict[str, Any]:
    """Reads url, consumer_id, token and agent from attributes of source (``agentrt_url``, ...) or from the
    environment (``AGENTRT_URL``, ``AGENTRT_CONSUMER_ID``, ``AGENTRT_TOKEN``, ``AGENTRT_AGENT``)."""

    def get(name: str) -> Any:
        v = getattr(source, f"{prefix}_{name}", None) if source is not None else None
        return v if v else os.environ.get(f"AGENTRT_{name.upper()}")

    url = get("url")
    if not url:
        raise ValueError("agentrt: set --agentrt-url (args.agentrt_url) or AGENTRT_URL to the server's ws:// URL")
    return {
        "url": url,
        # One consumer id per process: trajectories come back to the process that asked for them.
        "consumer_id": get("consumer_id") or f"{prefix}-{socket.gethostname()}-{os.getpid()}",
        "token": get("token"),
        "agent": get("agent"),
    }


async def shared_client(url: str, consumer_id: str, token: str | None) -> Client:
    loop = asyncio.get_running_loop()
    key = (id(loop), url, consumer_id)
    entry = _clients.get(key)
    if entry is None:
        entry = (Client(url, consumer_id, token, orphans="ack"), asyncio.Lock())
        _clients[key] = entry
    client, lock = entry
    async with lock:
        if client._reader is None:
            await client.connect()
    return client


async def close_shared() -> None:
    """Closes the shared clients of the running loop."""
    loop_id = id(asyncio.get_running_loop())
    for key in [k for k in _clients if k[0] == loop_id]:
        client, _ = _clients.pop(key)
        await client.close()
