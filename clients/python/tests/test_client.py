"""The client against a real server process over a real socket."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect

from agentrt_client import (
    AuthError,
    Client,
    RejectedError,
    ServerError,
    StreamClosedError,
    Trajectory,
)
from helpers import prompts, run_async


def test_submit_receive_ack(devserver):
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            assert c.welcome.unacked == 0 and c.welcome.active_requests == []
            rid = await c.submit(prompts(3, n=2))
            got: list[Trajectory] = []
            async for t in c.trajectories():
                got.append(t)
                if len(got) == 6:
                    break
            c.ack(got[-1])  # break skips the iterator's ack of the last one
            done = await c.wait_request(rid, timeout=20)
            assert done.status == "completed" and done.trajectories == 6
            assert {(t.item_id, t.sample_index) for t in got} == {(f"q{i}", k) for i in range(3) for k in range(2)}
            for t in got:
                assert t.request_id == rid and t.group_id == f"{rid}/{t.item_id}"
                assert t.trajectory_id == f"{rid}/{t.item_id}/{t.sample_index}"
                assert len(t.token_ids) == len(t.loss_mask) == len(t.logprobs) == 256
                assert t.logprobs[0] is None and t.status == "completed"
                assert t.weight_versions == ["default", "default"]
            await c.sync()
        # Everything was acked: a new session has nothing to redeliver.
        async with Client(srv.url, "trainer") as c2:
            assert c2.welcome.unacked == 0

    body()


def test_consume_and_run(devserver):
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer", credits=4) as c:
            await c.submit(prompts(5, n=2))
            seen = []

            async def handler(t):
                await asyncio.sleep(0)
                seen.append(t.trajectory_id)

            assert await c.consume(handler, limit=10) == 10
            assert len(set(seen)) == 10
            # run() collects one request's trajectories in item order, alongside the main queue.
            trajs = await c.run(["a", "b"], n=3, timeout=20)
            assert [(t.item_id, t.sample_index) for t in trajs] == [("0", 0), ("0", 1), ("0", 2), ("1", 0), ("1", 1), ("1", 2)]
            await c.sync()
        async with Client(srv.url, "trainer") as c2:
            assert c2.welcome.unacked == 0

    body()


def test_disconnect_and_resume(devserver):
    """Drops the TCP connection twice mid-stream: every trajectory arrives, each exactly once to the
    application, and the spool ends empty."""
    srv = devserver("-delay", "5ms")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", credits=8, ack_batch=4) as c:
            rid = await c.submit(prompts(10, n=10))
            ids: list[str] = []
            async for t in c.trajectories():
                ids.append(t.trajectory_id)
                if len(ids) in (15, 55):
                    await c._drop_connection()
                if len(ids) == 100:
                    break
            c.ack(*[])
            assert len(ids) == len(set(ids)) == 100
            assert c.reconnects == 2
            done = await c.wait_request(rid, timeout=20)
            assert done.trajectories == 100
        # The last one was not acked by the iterator (break): it comes again, and only it.
        async with Client(srv.url, "trainer") as c2:
            assert c2.welcome.unacked == 1
            t = await c2.next(timeout=10)
            assert t.trajectory_id == ids[-1]
            c2.ack(t)
            await c2.sync()

    body()


def test_server_kill9_and_restart(devserver):
    """kill -9 the server while trajectories are unacked; the client reconnects to the restarted server (same
    spool, same port) and gets exactly the unacked ones."""
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=30) as c:
            rid = await c.submit(prompts(4, n=5))
            done = await c.wait_request(rid, timeout=20)
            assert done.trajectories == 20
            first = [await c.next(timeout=10) for _ in range(20)]
            c.ack(*first[:8])
            await c.sync()  # the 8 acks are applied (and fsynced) on the server
            srv.kill9()
            srv.start()
            # The 12 unacked come again but the client already holds them: they are dropped, not repeated.
            await asyncio.sleep(0.5)
            c.ack(*first[8:])
            await c.sync()
            assert c.reconnects == 1
            assert c.welcome.unacked == 12
        async with Client(srv.url, "trainer") as c2:
            assert c2.welcome.unacked == 0

    body()


def test_restart_redelivers_to_new_process(devserver):
    """A trainer that dies without acking gets everything again on its next start, after a server kill -9."""
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            rid = await c.submit(prompts(2, n=3))
            await c.wait_request(rid, timeout=20)
            before = sorted([(await c.next(timeout=10)).trajectory_id for _ in range(6)])
        srv.kill9()
        srv.start()
        async with Client(srv.url, "trainer") as c2:
            assert c2.welcome.unacked == 6
            after = sorted([(await c2.next(timeout=10)).trajectory_id for _ in range(6)])
            assert after == before

    body()


def test_rejections_are_typed(devserver):
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            with pytest.raises(RejectedError) as e:
                await c.submit(prompts(1), agent="unknown")
            assert "unknown agent" in e.value.reason and e.value.code == "invalid"
            with pytest.raises(RejectedError, match="used twice"):
                await c.submit([{"id": "a", "messages": []}, {"id": "a", "messages": []}])
            with pytest.raises(RejectedError, match="temperature"):
                await c.submit(prompts(1), sampling={"temperature": -1})
            with pytest.raises(ValueError):
                await c.submit([{"id": "x"}])  # no messages: caught client-side
            # The connection is still good.
            assert len(await c.run(prompts(1), timeout=20)) == 1

    body()


def test_auth(devserver):
    srv = devserver("-token", "s3cret")

    @run_async
    async def body():
        with pytest.raises(AuthError):
            await Client(srv.url, "t", token="wrong").connect()
        with pytest.raises(AuthError):
            await Client(srv.url, "t").connect()
        async with Client(srv.url, "t", token="s3cret") as c:
            assert len(await c.run(prompts(1), timeout=20)) == 1

    body()


def test_control_and_errors(devserver):
    srv = devserver()

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            await c.pause("retract")
            await c.update_weights("/ckpt/step-3", weight_version="step-3")
            await c.resume()
            with pytest.raises(ServerError) as e:
                await c.resume()  # not paused: the runner says so
            assert e.value.code == "runner_error" and e.value.ref_type == "resume"
            with pytest.raises(ServerError, match="does not exist"):
                await c.update_weights("/missing")
            with pytest.raises(ValueError):
                await c.pause("sometimes")
            trajs = await c.run(prompts(1), timeout=20)
            assert trajs[0].weight_versions == ["step-3", "step-3"]

    body()


def test_cancel(devserver):
    srv = devserver("-delay", "300ms")

    @run_async
    async def body():
        async with Client(srv.url, "trainer") as c:
            rid = await c.submit(prompts(1, n=200))
            await c.cancel(rid)
            done = await c.wait_request(rid, timeout=20)
            assert done.status == "cancelled" and done.trajectories < 200

    body()


def test_events(devserver):
    srv = devserver()
    events = []

    @run_async
    async def body():
        async with Client(srv.url, "trainer", on_event=events.append) as c:
            rid = await c.submit(prompts(1), events=True)
            await c.wait_request(rid, timeout=20)
            await c.next(timeout=10)
        assert [e["turn"] for e in events] == [0, 1] and events[0]["request_id"] == rid

    body()


def test_manual_ack_and_superseded(devserver):
    srv = devserver()

    @run_async
    async def body():
        c = Client(srv.url, "trainer", reconnect=False)
        await c.connect()
        await c.submit(prompts(1, n=3))
        async for t in c.trajectories(auto_ack=False):
            break
        # A second connection with the same consumer id takes over; the first one is told and stops.
        async with Client(srv.url, "trainer") as c2:
            with pytest.raises(StreamClosedError, match="consumer_id"):
                for _ in range(10):
                    await c.next(timeout=10)
            got = {(await c2.next(timeout=10)).trajectory_id for _ in range(3)}
            assert len(got) == 3  # nothing was acked by the first
        await c.close()

    body()


def test_server_survives_bad_frames(devserver):
    """Raw frames a buggy client might send: each gets an error frame naming it; the connection stays up."""
    srv = devserver("-max-message-bytes", "4096")

    @run_async
    async def body():
        async with connect(srv.url, proxy=None) as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": 1, "consumer_id": "raw", "credits": 5}))
            assert json.loads(await ws.recv())["type"] == "welcome"
            cases = [
                ("{not json", "malformed"),
                (json.dumps({"type": "frobnicate", "id": "f1"}), "unknown_type"),
                (json.dumps({"type": "submit", "request_id": "big", "items": [{"id": "a", "messages": [{"content": "x" * 8000}]}]}), "message_too_large"),
                (b"\x00\x01", "binary_frame"),
                (json.dumps({"type": "credit", "credits": -3}), "invalid"),
            ]
            for frame, code in cases:
                await ws.send(frame)
                m = json.loads(await ws.recv())
                assert m["type"] == "error" and m["code"] == code, (frame, m)
            await ws.send(json.dumps({"type": "ping", "id": "alive"}))
            assert json.loads(await ws.recv()) == {"type": "pong", "id": "alive"}

    body()


def test_client_rejects_bad_arguments():
    with pytest.raises(ValueError):
        Client("ws://127.0.0.1:1/v1/stream", "")
    with pytest.raises(ValueError):
        Client("ws://127.0.0.1:1/v1/stream", "c", credits=0)

    @run_async
    async def body():
        with pytest.raises(OSError):
            await Client("ws://127.0.0.1:1/v1/stream", "c").connect()

    body()


def test_run_survives_server_kill9(devserver):
    """kill -9 while a run() is in flight: after the restart the client finds the request lost, resubmits it
    under the same id, and run() returns every sample exactly once."""
    srv = devserver("-delay", "300ms")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=30) as c:
            task = asyncio.create_task(c.run(prompts(1, n=100), timeout=50))
            await asyncio.sleep(0.45)  # about 64 samples finished, 36 running (any moment is correct)
            srv.kill9()
            srv.start()
            trajs = await task
            assert len(trajs) == 100 and len({t.trajectory_id for t in trajs}) == 100
            assert c.reconnects == 1

    body()


def test_wait_request_survives_kill9(devserver):
    """The server journals a request before accepting it: after a kill -9 and a restart it resumes the request,
    and wait_request gets its request_done (nothing was resubmitted)."""
    srv = devserver("-delay", "2s")

    @run_async
    async def body():
        async with Client(srv.url, "trainer", reconnect_timeout=30) as c:
            rid = await c.submit(prompts(1))
            waiter = asyncio.create_task(c.wait_request(rid))
            srv.kill9()
            srv.start()
            done = await waiter
            assert done.status == "completed" and done.trajectories == 1
            assert (await c.next(timeout=20)).request_id == rid
            assert c.reconnects == 1

    body()
