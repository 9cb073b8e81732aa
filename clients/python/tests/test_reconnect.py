"""The client never hangs and never gives up early: server kill -9s mid-request, restarts through refused
connections, handshakes cut short and HTTP 503s, a server that lost its spool, and a server that never comes
back. Each against real processes over real sockets."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from agentrt_client import Client, RequestLostError, StreamClosedError
from helpers import prompts, run_async


async def misbehave(port: int, mode: str, times: int) -> None:
    """Listens on port and answers `times` connection attempts badly, then stops listening. mode "cut" closes
    the TCP connection before any HTTP response (websockets: "did not receive a valid HTTP response"); "503"
    answers the upgrade with 503, as a server that is starting or stopping does."""
    seen = 0
    enough = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seen
        seen += 1
        try:
            if mode == "503":
                await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        writer.close()
        if seen >= times:
            enough.set()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    await enough.wait()
    server.close()
    await server.wait_closed()


def test_reconnect_through_refused_cut_and_503(devserver):
    """kill -9, then the port refuses, then cuts handshakes, then answers 503, then the server is back on its
    spool: the client gets through all of it within reconnect_timeout and receives every trajectory once."""
    srv = devserver("-delay", "300ms")
    port = int(srv.addr.rsplit(":", 1)[1])

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=50, reconnect_max_delay=0.1) as c:
            rid = await c.submit(prompts(2, n=100))  # 64 at a time: the kill lands with most still to run
            ids: list[str] = []
            async for t in c.trajectories():
                ids.append(t.trajectory_id)
                if len(ids) == 3:
                    srv.kill9()
                    await misbehave(port, "cut", 3)
                    await misbehave(port, "503", 3)
                    srv.start()
                if len(ids) == 200:
                    break
            assert len(set(ids)) == 200
            done = await c.wait_request(rid, timeout=30)
            assert done.status == "completed" and done.trajectories == 200
            assert c.reconnects == 1

    body()


def test_kill9_twice_mid_request(devserver):
    """The issue's scenario at small scale: kill -9 twice while a request runs, restart each time on the same
    spool. The server resumes the request; the iterator yields every sample exactly once and request_done
    comes with the full count."""
    srv = devserver("-delay", "150ms")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=50) as c:
            rid = await c.submit(prompts(2, n=100))  # 200 samples, 64 at a time: about four waves
            seen: set[str] = set()
            async for t in c.trajectories():
                assert t.trajectory_id not in seen, f"{t.trajectory_id} yielded twice"
                seen.add(t.trajectory_id)
                if len(seen) in (10, 80):
                    srv.kill9()
                    srv.start()
                if len(seen) == 200:
                    break
            done = await c.wait_request(rid, timeout=30)
            assert done.status == "completed" and done.trajectories == 200
            assert c.reconnects == 2

    body()


def test_lost_request_raises(devserver):
    """A server that comes back without its spool does not know the request: with lost="raise" the iterator and
    wait_request raise RequestLostError instead of waiting for ever."""
    srv = devserver("-delay", "5s")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=30, lost="raise") as c:
            rid = await c.submit(prompts(1, n=2))
            waiter = asyncio.create_task(c.wait_request(rid))
            srv.kill9()
            shutil.rmtree(srv.spool)
            srv.start()
            with pytest.raises(RequestLostError) as e:
                async for _ in c.trajectories():
                    pass
            assert e.value.request_id == rid
            with pytest.raises(RequestLostError):
                await waiter

    body()


def test_lost_request_resubmitted(devserver):
    """The same, with the default lost="resubmit": the client submits the request again under its id; the
    samples it already holds come again with the same ids and are dropped, so it sees each sample once."""
    srv = devserver("-delay", "300ms")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=30) as c:
            rid = await c.submit(prompts(1, n=100))
            seen = {(await c.next(timeout=20)).trajectory_id}  # the first wave has finished; the rest runs
            srv.kill9()
            shutil.rmtree(srv.spool)
            srv.start()
            async for t in c.trajectories():
                assert t.trajectory_id not in seen, f"{t.trajectory_id} yielded twice"
                seen.add(t.trajectory_id)
                if len(seen) == 100:
                    break
            done = await c.wait_request(rid, timeout=30)
            assert done.status == "completed" and done.trajectories == 100

    body()


def test_reconnect_gives_up_only_after_timeout(devserver):
    """A server that never comes back: after reconnect_timeout (not before) every waiter gets
    StreamClosedError; nothing hangs."""
    srv = devserver("-delay", "10s")

    @run_async
    async def body():
        loop = asyncio.get_running_loop()
        async with Client(srv.url, "trainer", reconnect_timeout=1.5, reconnect_max_delay=0.2) as c:
            rid = await c.submit(prompts(1))
            waiter = asyncio.create_task(c.wait_request(rid))
            t0 = loop.time()
            srv.kill9()
            with pytest.raises(StreamClosedError, match="within 1.5s"):
                await c.next()
            assert loop.time() - t0 >= 1.5
            with pytest.raises(StreamClosedError):
                await waiter
            with pytest.raises(StreamClosedError):
                await c.submit(prompts(1))  # a sender does not wait for a connection that will not come

    body()


def test_acks_after_spool_change_go_by_id():
    """Sequence numbers belong to one spool. A trajectory received before a reconnect that reports another
    spool_id is acked by trajectory id, and acks buffered for the old spool are dropped, so they cannot delete
    unrelated records of the new one. (A scripted protocol peer: it sends what a server whose spool was wiped
    would send, and records the acks.)"""
    from websockets.asyncio.server import serve

    acks: list[dict] = []
    conns = 0
    second = asyncio.Event()
    frame = {"type": "trajectory", "seq": 7, "request_id": "r", "item_id": "q", "sample_index": 0, "group_id": "r/q",
             "trajectory_id": "r/q/0", "trajectory": {"token_ids": [1], "loss_mask": [0], "logprobs": [None]}}

    async def handler(ws):
        nonlocal conns
        conns += 1
        spool = "spool-a" if conns == 1 else "spool-b"
        json.loads(await ws.recv())  # hello
        await ws.send(json.dumps({"type": "welcome", "protocol": 1, "consumer_id": "c", "session_id": str(conns),
                                  "unacked": 0, "active_requests": [], "done_requests": [], "spool_id": spool,
                                  "max_message_bytes": 1 << 20}))
        if conns == 1:
            await ws.send(json.dumps(frame))
            await ws.send(json.dumps({**frame, "seq": 8, "trajectory_id": "r/q/1", "sample_index": 1}))
            async for raw in ws:  # until the client drops the connection
                m = json.loads(raw)
                if m["type"] == "ack":
                    acks.append(m)
            return
        second.set()
        async for raw in ws:
            m = json.loads(raw)
            if m["type"] == "ack":
                acks.append(m)
            if m["type"] == "ping":
                await ws.send(json.dumps({"type": "pong", "id": m["id"]}))

    @run_async
    async def body():
        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            async with Client(f"ws://127.0.0.1:{port}/v1/stream", "c", ack_delay=3600, ack_batch=1000) as c:
                a = await c.next(timeout=10)
                b = await c.next(timeout=10)
                c.ack(a)  # buffered (seq 7 of spool-a) when the connection drops
                await c._drop_connection()
                await asyncio.wait_for(second.wait(), 10)
                await c.sync()
                c.ack(b)  # received from spool-a, acked while connected to spool-b
                await c.sync()
        assert acks == [{"type": "ack", "trajectory_ids": ["r/q/1"]}], acks

    body()
