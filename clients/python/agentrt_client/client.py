"""The asyncio client of agentrt's trajectory stream (docs/PROTOCOL.md, protocol version 1)."""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import logging
import uuid
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from .errors import (
    AgentrtError,
    AuthError,
    ProtocolError,
    RejectedError,
    RequestFailedError,
    RequestLostError,
    ServerError,
    StreamClosedError,
)
from .trajectory import RequestDone, Trajectory, Welcome

PROTOCOL_VERSION = 1
PAUSE_MODES = ("abort", "retract", "in_place")

log = logging.getLogger("agentrt_client")

_CLOSED = object()  # queue sentinel
LOST_POLICIES = ("resubmit", "raise")


class _Raise:
    """A queue entry that makes the reader of the queue raise exc (a request the server lost)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

try:  # orjson parses the large trajectory frames several times faster, when it is installed
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - optional
    _loads = json.loads


def _new_id() -> str:
    return uuid.uuid4().hex


def normalize_items(items: Iterable[Any], n: int | None = None) -> list[dict[str, Any]]:
    """Turns prompts into submit items.

    Each element may be a dict (``id``, ``messages``, optional ``n``, ``label``, ``metadata``,
    ``max_response_tokens``), a list of chat messages, or a string (one user message). Items without an id get
    their index. ``n`` sets the default number of samples per item.
    """
    out = []
    for i, it in enumerate(items):
        if isinstance(it, str):
            it = {"messages": [{"role": "user", "content": it}]}
        elif isinstance(it, list):
            it = {"messages": it}
        elif not isinstance(it, dict):
            raise TypeError(f"items[{i}]: want a dict, a list of messages or a string, got {type(it).__name__}")
        it = dict(it)
        it.setdefault("id", str(i))
        if n is not None:
            it.setdefault("n", n)
        if "messages" not in it:
            raise ValueError(f"items[{i}] ({it['id']!r}) has no messages")
        out.append(it)
    return out


class _Collector:
    """Gathers one request's trajectories for Client.run."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()


class Client:
    """A trainer's connection to ``agentrt serve``.

    ``url`` is the WebSocket endpoint (``ws://127.0.0.1:8080/v1/stream``); ``consumer_id`` names this consumer:
    trajectories of the requests it submits belong to it, and a reconnect with the same id receives everything
    not acked yet. ``token`` is the bearer token when the server requires one.

    ``credits`` bounds the trajectories the server sends ahead of the ones the application has taken; a
    trajectory is acked after the handler that took it returns (``consume``, the ``trajectories()`` iterator)
    or when ``ack()`` is called. Acks and credits are batched (``ack_batch`` / ``ack_delay`` seconds). When the
    connection drops, the client reconnects with backoff and resumes: unacked trajectories come again, and
    those it already has are dropped by trajectory id, so the application sees each trajectory once.

    Reconnecting never gives up early and never hangs: every transient failure (connection refused or reset, a
    handshake cut short, HTTP 5xx from a server that is starting or stopping, a hello not answered) is retried
    with backoff until ``reconnect_timeout`` seconds have passed (``None``: for ever); then every waiter gets
    StreamClosedError. A server restarted on its spool resumes the consumer's requests itself. If after a
    reconnect the server no longer knows a request this client waits for (its spool was lost), ``lost``
    decides: ``"resubmit"`` (default) sends it again under the same id (trajectory ids stay the same, so samples
    already received are dropped as duplicates); ``"raise"`` makes ``run``, ``wait_request``, ``next`` and the
    ``trajectories()`` iterator raise RequestLostError.

    Use it as ``async with Client(...) as c:`` or call ``connect()`` and ``close()``. Not thread-safe: use it
    from one event loop.
    """

    def __init__(
        self,
        url: str,
        consumer_id: str,
        token: str | None = None,
        *,
        credits: int = 256,
        resume: bool = True,
        reconnect: bool = True,
        reconnect_max_delay: float = 5.0,
        reconnect_timeout: float | None = 300.0,
        max_size: int = 256 << 20,
        open_timeout: float = 10.0,
        ack_batch: int = 64,
        ack_delay: float = 0.05,
        orphans: str = "queue",
        on_event: Callable[[dict[str, Any]], Any] | None = None,
        dedupe_window: int = 1_000_000,
        lost: str = "resubmit",
    ) -> None:
        if not consumer_id:
            raise ValueError("consumer_id is required")
        if credits < 1:
            raise ValueError(f"credits must be >= 1, got {credits}")
        if orphans not in ("queue", "ack"):
            raise ValueError(f"orphans must be 'queue' or 'ack', got {orphans!r}")
        if lost not in LOST_POLICIES:
            raise ValueError(f"lost must be one of {LOST_POLICIES}, got {lost!r}")
        self.url = url
        self.consumer_id = consumer_id
        self.token = token
        self.credits = credits
        self._resume = resume
        self.reconnect = reconnect
        self.reconnect_max_delay = reconnect_max_delay
        self.reconnect_timeout = reconnect_timeout
        self.max_size = max_size
        self.open_timeout = open_timeout
        self.ack_batch = max(1, ack_batch)
        self.ack_delay = ack_delay
        self.orphans = orphans
        self.on_event = on_event
        self.dedupe_window = dedupe_window
        self.lost = lost

        self.welcome: Welcome | None = None
        self.reconnects = 0
        self.errors: collections.deque[ServerError] = collections.deque(maxlen=100)

        self._ws: ClientConnection | None = None
        self._closed = False
        self._fatal: BaseException | None = None
        self._connected: asyncio.Event | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._pending_submits: dict[str, tuple[str, asyncio.Future]] = {}
        # Accepted requests whose request_done has not arrived: their submit frames, to resubmit one the server
        # no longer knows.
        self._open_requests: dict[str, str] = {}
        self._controls: dict[str, asyncio.Future] = {}
        self._pings: dict[str, asyncio.Future] = {}
        self._collectors: dict[str, _Collector] = {}
        self._done: collections.OrderedDict[str, RequestDone] = collections.OrderedDict()
        self._done_waiters: dict[str, list[asyncio.Future]] = {}
        self._inflight: dict[str, int] = {}
        self._acked: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._ack_buf: list[int] = []
        self._ack_ids: list[str] = []  # acks of trajectories that came from another spool (by id: seqs differ)
        self._credit_buf = 0
        self._dirty: asyncio.Event | None = None
        self._reader: asyncio.Task | None = None
        self._flusher: asyncio.Task | None = None
        # After a reconnect to a server whose welcome has no done_requests (older than durable requests):
        # spooled messages still to come from the backlog it announced, and the requests it said were running.
        # Once the backlog is in, an open request that is neither running nor done was lost.
        self._backlog_left = 0
        self._active_at_welcome: set[str] = set()

    # ----------------------------------------------------------------------------------------------------------
    # Lifecycle

    async def __aenter__(self) -> "Client":
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def connect(self) -> Welcome:
        """Connects and says hello. Raises AuthError, ProtocolError or OSError; does not retry the first time."""
        if self._reader is not None:
            raise AgentrtError("already connected")
        self._connected = asyncio.Event()
        self._queue = asyncio.Queue()
        self._dirty = asyncio.Event()
        await self._open()
        self._reader = asyncio.create_task(self._read_loop(), name="agentrt-reader")
        self._flusher = asyncio.create_task(self._flush_loop(), name="agentrt-flusher")
        assert self.welcome is not None
        return self.welcome

    async def close(self) -> None:
        """Flushes pending acks and closes the connection."""
        if self._closed:
            return
        try:
            if self._ws is not None and self._connected is not None and self._connected.is_set():
                await asyncio.wait_for(self._flush(), timeout=5)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        self._closed = True
        for task in (self._flusher, self._reader):
            if task is not None:
                task.cancel()
        if self._ws is not None:
            await self._ws.close()
        for task in (self._flusher, self._reader):
            if task is not None:
                try:
                    await task
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        self._fail_all(StreamClosedError("client closed"))

    async def _open(self) -> None:
        """Connects and exchanges hello/welcome. Errors: AuthError and ProtocolError (``retryable`` tells a
        transient refusal such as HTTP 503 from a fatal one), ServerError (an error frame), OSError, the
        websockets library's exceptions (a handshake cut short), TimeoutError."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        try:
            ws = await connect(
                self.url,
                additional_headers=headers,
                max_size=self.max_size,
                open_timeout=self.open_timeout,
                compression=None,
                proxy=None,
                ping_interval=20,
                ping_timeout=20,
                max_queue=None,
            )
        except InvalidStatus as e:
            code = e.response.status_code
            if code == 401:
                raise AuthError(f"{self.url}: the server refused the bearer token (HTTP 401)") from e
            # 5xx (starting, stopping, a proxy without a backend) and 429 pass; a 404 or 400 will not.
            raise ProtocolError(f"{self.url}: WebSocket upgrade refused with HTTP {code}", retryable=code >= 500 or code == 429) from e
        try:
            await self._hello(ws)
        except BaseException:
            if self._ws is ws and self._connected is not None and self._fatal is None:
                self._connected.clear()  # senders wait for the next attempt instead of spinning on a dead socket
            await ws.close()
            raise

    async def _hello(self, ws: ClientConnection) -> None:
        in_queue = self._queue.qsize() if self._queue is not None else 0
        hello = {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "consumer_id": self.consumer_id,
            "credits": max(1, self.credits - in_queue),
            "resume": self._resume if self.welcome is None else True,
        }
        if self.token:
            hello["token"] = self.token
        try:
            await ws.send(json.dumps(hello))
            raw = await asyncio.wait_for(ws.recv(), timeout=self.open_timeout)
        except ConnectionClosed as e:
            raise ProtocolError(f"{self.url}: connection closed during hello: {e}", retryable=True) from e
        try:
            m = json.loads(raw)
        except ValueError as e:
            raise ProtocolError(f"{self.url}: the answer to hello is not JSON: {e}", retryable=True) from e
        if m.get("type") == "error":
            code, msg = m.get("code", ""), m.get("message", "")
            if code == "unauthorized":
                raise AuthError(f"{self.url}: {msg}")
            if code in ("unsupported_version", "hello_required"):
                raise ProtocolError(f"{self.url}: {code}: {msg}")
            raise ServerError(code, msg, "hello", None)
        if m.get("type") != "welcome":
            raise ProtocolError(f"{self.url}: expected welcome, got {m.get('type')!r}")
        reconnect = self.welcome is not None
        old_spool = self.welcome.spool_id if self.welcome is not None else ""
        self.welcome = Welcome.from_frame(m)
        if reconnect and old_spool and self.welcome.spool_id != old_spool:
            # The server lost its spool: buffered acks name sequence numbers of the old one, which would delete
            # unrelated records of the new one. Drop them; what was handled is acked by id when it comes again.
            log.warning("agentrt: the server's spool changed (%s -> %s); %d pending acks dropped", old_spool, self.welcome.spool_id, len(self._ack_buf))
            self._ack_buf = []
        self._ws = ws
        self._credit_buf = 0  # credits belong to a connection
        if reconnect:
            if self.welcome.done_requests is not None:
                self._find_lost(set(self.welcome.active_requests) | set(self.welcome.done_requests))
            else:
                self._backlog_left = self.welcome.unacked
                self._active_at_welcome = set(self.welcome.active_requests)
                if self._backlog_left == 0:
                    self._find_lost(self._active_at_welcome)
        assert self._connected is not None
        self._connected.set()
        # Submits not yet answered are sent again (the server answers a duplicate request id as accepted), and
        # so are the requests _find_lost resubmits.
        for frame, fut in list(self._pending_submits.values()):
            if not fut.done():
                await ws.send(frame)
        if (self._ack_buf or self._ack_ids) and self._dirty is not None:
            self._dirty.set()
        log.info(
            "agentrt: connected to %s as %s (unacked %d, active requests %d)",
            self.url,
            self.consumer_id,
            self.welcome.unacked,
            len(self.welcome.active_requests),
        )

    async def _read_loop(self) -> None:
        assert self._connected is not None
        while True:
            ws = self._ws
            assert ws is not None
            close_reason = ""
            try:
                async for raw in ws:
                    self._dispatch(raw)
            except ConnectionClosed as e:
                close_reason = str(e)
            except Exception as e:  # noqa: BLE001 - a bug in dispatch must not hang the client
                log.exception("agentrt: reader failed")
                self._fail_all(AgentrtError(f"reader failed: {e}"))
                return
            if self._closed:
                return
            self._connected.clear()
            rcvd = getattr(getattr(ws, "protocol", None), "close_rcvd", None)
            if rcvd is not None and rcvd.reason == "superseded":
                self._fail_all(StreamClosedError("another connection said hello with this consumer_id"))
                return
            if not self.reconnect:
                self._fail_all(StreamClosedError(f"connection closed: {close_reason or rcvd}"))
                return
            # Control calls may or may not have run: their callers must find out and retry.
            for fut in list(self._controls.values()) + list(self._pings.values()):
                if not fut.done():
                    fut.set_exception(StreamClosedError("connection lost before the answer"))
            log.warning("agentrt: connection lost (%s); reconnecting", close_reason or rcvd)
            try:
                await self._reopen()
            except Exception as e:  # noqa: BLE001
                self._fail_all(e if isinstance(e, AgentrtError) else StreamClosedError(f"reconnect failed: {e}"))
                return
            self.reconnects += 1

    async def _reopen(self) -> None:
        """Reconnects, retrying every transient failure until reconnect_timeout has passed (a last attempt is
        made at the deadline). AuthError and a ProtocolError that is not retryable end it at once."""
        loop = asyncio.get_running_loop()
        deadline = None if self.reconnect_timeout is None else loop.time() + self.reconnect_timeout
        delay = 0.05
        attempts = 0
        while True:
            attempts += 1
            try:
                await self._open()
                return
            except AuthError:
                raise
            except ProtocolError as e:
                if not e.retryable:
                    raise
                err: BaseException = e
            # Refused or reset (OSError), a handshake cut short ("did not receive a valid HTTP response": the
            # websockets library's InvalidMessage), a hello not answered in time, an error frame such as
            # shutting_down: all transient while a server restarts.
            except (OSError, WebSocketException, asyncio.TimeoutError, EOFError, ServerError) as e:
                err = e
            now = loop.time()
            if deadline is not None and now >= deadline:
                raise StreamClosedError(
                    f"could not reconnect to {self.url} within {self.reconnect_timeout}s ({attempts} attempts): {err}"
                )
            wait = delay if deadline is None else min(delay, deadline - now)
            log.info("agentrt: reconnect failed (%s: %s); retrying in %.2fs", type(err).__name__, err, wait)
            await asyncio.sleep(wait)
            delay = min(delay * 2, self.reconnect_max_delay)

    def _fail_all(self, exc: BaseException) -> None:
        self._fatal = exc
        for _, fut in list(self._pending_submits.values()):
            if not fut.done():
                fut.set_exception(exc)
        for fut in list(self._controls.values()) + list(self._pings.values()):
            if not fut.done():
                fut.set_exception(exc)
        for futs in self._done_waiters.values():
            for fut in futs:
                if not fut.done():
                    fut.set_exception(exc)
        for col in self._collectors.values():
            col.queue.put_nowait(_CLOSED)
        if self._queue is not None:
            self._queue.put_nowait(_CLOSED)
        if self._connected is not None:
            self._connected.set()  # senders waiting for a reconnect wake up and raise

    def _check(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise StreamClosedError("client closed")
        if self._reader is None:
            raise AgentrtError("not connected: call connect() or use 'async with'")

    async def _send(self, frame: str) -> None:
        """Sends a frame, waiting for a reconnect if the connection is down."""
        self._check()
        assert self._connected is not None
        while True:
            await self._connected.wait()
            self._check()
            ws = self._ws
            assert ws is not None
            try:
                await ws.send(frame)
                return
            except ConnectionClosed:
                await asyncio.sleep(0.01)  # the reader notices and reconnects

    # ----------------------------------------------------------------------------------------------------------
    # Incoming frames

    def _dispatch(self, raw: str | bytes) -> None:
        m = _loads(raw)
        t = m.get("type")
        if t == "trajectory" or t == "request_done":
            if t == "trajectory":
                self._on_trajectory(m)
            else:
                self._on_request_done(m)
            if self._backlog_left > 0:
                self._backlog_left -= 1
                if self._backlog_left == 0:
                    self._find_lost(self._active_at_welcome)
        elif t == "accepted":
            rid = m.get("request_id", "")
            entry = self._pending_submits.get(rid)
            if entry and not entry[1].done():
                if rid not in self._done:
                    self._open_requests[rid] = entry[0]
                entry[1].set_result(m)
        elif t == "rejected":
            rid = m.get("request_id", "")
            entry = self._pending_submits.get(rid)
            err = RejectedError(rid, m.get("code", ""), m.get("reason", ""))
            if entry and not entry[1].done():
                entry[1].set_exception(err)
            else:
                self.errors.append(err)
                log.warning("agentrt: %s", err)
        elif t == "event":
            if self.on_event is not None:
                r = self.on_event(m)
                if inspect.isawaitable(r):
                    asyncio.ensure_future(r)
        elif t == "control_ok":
            fut = self._controls.get(m.get("id", ""))
            if fut and not fut.done():
                fut.set_result(m)
        elif t == "pong":
            fut = self._pings.get(m.get("id", ""))
            if fut and not fut.done():
                fut.set_result(m)
        elif t == "error":
            self._on_error(m)
        else:
            log.warning("agentrt: ignoring unknown frame type %r", t)

    def _find_lost(self, known: set[str]) -> None:
        """Handles the requests this client waits for that the server does not know (``known``: the ones it
        runs or has ended) after a reconnect: resubmits them or raises RequestLostError to their readers."""
        waiting = set(self._open_requests) | set(self._collectors) | set(self._done_waiters)
        for rid in waiting:
            if rid in known or rid in self._done or rid in self._pending_submits:
                continue
            frame = self._open_requests.get(rid)
            if self.lost == "resubmit" and frame is not None:
                log.warning("agentrt: the server does not know request %s any more; submitting it again", rid)
                fut = asyncio.get_running_loop().create_future()
                self._pending_submits[rid] = (frame, fut)  # _open sends it (or the send below)

                def resubmitted(fut: asyncio.Future, rid: str = rid) -> None:
                    if self._pending_submits.get(rid, (None, None))[1] is fut:
                        del self._pending_submits[rid]
                    if self._fatal is None and not fut.cancelled() and fut.exception() is not None:
                        self._lose(rid, RequestLostError(rid, f"resubmitting it failed: {fut.exception()}"))

                fut.add_done_callback(resubmitted)
                if self._connected is not None and self._connected.is_set():
                    # Found after the hello (an older server's backlog drained): _open's resend is past.
                    asyncio.ensure_future(self._send(frame))
                continue
            self._lose(rid, RequestLostError(rid))

    def _lose(self, rid: str, exc: RequestLostError) -> None:
        """Tells whoever waits for request rid that it is lost."""
        log.warning("agentrt: %s", exc)
        self._open_requests.pop(rid, None)
        for fut in self._done_waiters.pop(rid, []):
            if not fut.done():
                fut.set_exception(exc)
        col = self._collectors.get(rid)
        if col is not None:
            col.queue.put_nowait(_Raise(exc))
        elif self._queue is not None:
            self._queue.put_nowait(_Raise(exc))

    def _on_error(self, m: dict[str, Any]) -> None:
        ref = m.get("ref") or {}
        err = ServerError(m.get("code", ""), m.get("message", ""), ref.get("type"), ref.get("id"))
        rtype, rid = ref.get("type"), ref.get("id") or ""
        fut = None
        if rtype == "submit":
            entry = self._pending_submits.get(rid)
            fut = entry[1] if entry else None
        elif rtype in ("pause", "resume", "update_weights"):
            fut = self._controls.get(rid)
        elif rtype == "ping":
            fut = self._pings.get(rid)
        if fut is not None and not fut.done():
            fut.set_exception(err)
            return
        self.errors.append(err)
        log.warning("agentrt: server error: %s", err)

    def _on_trajectory(self, m: dict[str, Any]) -> None:
        tid, seq = m["trajectory_id"], int(m["seq"])
        if tid in self._acked:
            self._ack_seq(seq)  # handled before; the ack was lost
            self._grant(1)
            return
        if tid in self._inflight:
            self._grant(1)  # a redelivery of one we still hold
            return
        traj = Trajectory.from_frame(m)
        traj.spool_id = self.welcome.spool_id if self.welcome is not None else ""
        self._inflight[tid] = seq
        col = self._collectors.get(traj.request_id)
        if col is not None:
            col.queue.put_nowait(traj)
            self._grant(1)
        elif self.orphans == "ack":
            log.warning("agentrt: acking trajectory %s of request %s, which no one waits for", tid, traj.request_id)
            self.ack(traj)
            self._grant(1)
        else:
            assert self._queue is not None
            self._queue.put_nowait(traj)  # the credit comes back when the application takes it

    def _on_request_done(self, m: dict[str, Any]) -> None:
        rd = RequestDone.from_frame(m)
        self._ack_seq(rd.seq)
        self._grant(1)
        self._open_requests.pop(rd.request_id, None)
        if rd.request_id in self._done:
            return
        self._done[rd.request_id] = rd
        while len(self._done) > 10_000:
            self._done.popitem(last=False)
        for fut in self._done_waiters.pop(rd.request_id, []):
            if not fut.done():
                fut.set_result(rd)
        col = self._collectors.get(rd.request_id)
        if col is not None:
            col.queue.put_nowait(rd)

    # ----------------------------------------------------------------------------------------------------------
    # Acks and credits

    def _ack_seq(self, seq: int) -> None:
        self._ack_buf.append(seq)
        self._mark_dirty()

    def _grant(self, n: int) -> None:
        self._credit_buf += n
        self._mark_dirty()

    def _mark_dirty(self) -> None:
        if self._dirty is not None:
            self._dirty.set()

    def ack(self, *trajectories: Trajectory) -> None:
        """Acks trajectories: the server deletes them from its spool. Buffered; ``flush()`` sends at once."""
        for t in trajectories:
            self._inflight.pop(t.trajectory_id, None)
            self._acked[t.trajectory_id] = None
            while len(self._acked) > self.dedupe_window:
                self._acked.popitem(last=False)
            if t.spool_id and self.welcome is not None and t.spool_id != self.welcome.spool_id:
                self._ack_ids.append(t.trajectory_id)  # its seq belongs to a spool the server no longer has
            else:
                self._ack_buf.append(t.seq)
        self._mark_dirty()

    async def flush(self) -> None:
        """Sends buffered acks and credits now."""
        self._check()
        await self._flush()

    async def _flush(self) -> None:
        ws = self._ws
        if ws is None or self._connected is None or not self._connected.is_set():
            return
        seqs, self._ack_buf = self._ack_buf, []
        ids, self._ack_ids = self._ack_ids, []
        credits, self._credit_buf = self._credit_buf, 0
        try:
            if seqs or ids:
                frame: dict[str, Any] = {"type": "ack"}
                if seqs:
                    frame["seqs"] = seqs
                if ids:
                    frame["trajectory_ids"] = ids
                await ws.send(json.dumps(frame))
            if credits:
                await ws.send(json.dumps({"type": "credit", "credits": credits}))
        except ConnectionClosed:
            # Acks stay valid on the next connection (unless it reports another spool); credits do not.
            self._ack_buf = seqs + self._ack_buf
            self._ack_ids = ids + self._ack_ids

    async def _flush_loop(self) -> None:
        assert self._dirty is not None
        while True:
            await self._dirty.wait()
            if len(self._ack_buf) + len(self._ack_ids) < self.ack_batch and self._credit_buf < max(1, self.credits // 4):
                await asyncio.sleep(self.ack_delay)
            self._dirty.clear()
            await self._flush()

    async def sync(self) -> None:
        """Flushes acks and waits until the server has applied them (a ping round trip on the connection)."""
        self._check()
        await self._flush()
        await self.ping()

    async def ping(self) -> None:
        """An application-level round trip; the server handles a connection's frames in order."""
        pid = _new_id()
        fut = asyncio.get_running_loop().create_future()
        self._pings[pid] = fut
        try:
            await self._send(json.dumps({"type": "ping", "id": pid}))
            await fut
        finally:
            self._pings.pop(pid, None)

    # ----------------------------------------------------------------------------------------------------------
    # Requests

    async def submit(
        self,
        items: Iterable[Any],
        *,
        n: int | None = None,
        agent: str | None = None,
        sampling: dict[str, Any] | None = None,
        request_id: str | None = None,
        events: bool = False,
    ) -> str:
        """Submits a rollout request and returns its id once the server accepted it.

        ``items``: see ``normalize_items``; ``n`` is the default samples per item; ``sampling`` overrides the
        agent's SGLang sampling params. Raises RejectedError with the server's reason.
        """
        self._check()
        rid = request_id or _new_id()
        frame: dict[str, Any] = {"type": "submit", "request_id": rid, "items": normalize_items(items, n)}
        if agent:
            frame["agent"] = agent
        if sampling:
            frame["sampling"] = sampling
        if events:
            frame["events"] = True
        data = json.dumps(frame)
        fut = asyncio.get_running_loop().create_future()
        self._pending_submits[rid] = (data, fut)
        try:
            await self._send(data)
            await fut
        finally:
            self._pending_submits.pop(rid, None)
        return rid

    async def run(
        self,
        items: Iterable[Any],
        *,
        n: int | None = None,
        agent: str | None = None,
        sampling: dict[str, Any] | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
        ack: bool = True,
        events: bool = False,
    ) -> list[Trajectory]:
        """Submits a request and returns all its trajectories (ordered by item, then sample index) once it is done.

        They are acked on return (``ack=False`` leaves that to the caller). ``events`` subscribes to the request's
        per-turn events, handed to ``on_event`` as they come. Raises RequestFailedError if the request failed,
        RejectedError if it was rejected, RequestLostError if the server lost it (see ``lost``).
        """
        rid = request_id or _new_id()
        col = _Collector()
        self._collectors[rid] = col
        order: dict[str, int] = {}
        try:
            norm = normalize_items(items, n)
            order = {it["id"]: i for i, it in enumerate(norm)}
            await self.submit(norm, agent=agent, sampling=sampling, request_id=rid, events=events)
            trajs: list[Trajectory] = []

            async def gather() -> RequestDone:
                while True:
                    x = await col.queue.get()
                    if x is _CLOSED:
                        self._check()
                        raise StreamClosedError("client closed")
                    if isinstance(x, _Raise):
                        raise x.exc
                    if isinstance(x, RequestDone):
                        return x
                    trajs.append(x)

            done = await asyncio.wait_for(gather(), timeout)
        finally:
            self._collectors.pop(rid, None)
        if ack:
            self.ack(*trajs)
        if done.status == "failed":
            raise RequestFailedError(rid, done.status, done.error)
        trajs.sort(key=lambda t: (order.get(t.item_id, len(order)), t.sample_index))
        return trajs

    async def wait_request(self, request_id: str, timeout: float | None = None) -> RequestDone:
        """Waits for a request's request_done."""
        if request_id in self._done:
            return self._done[request_id]
        self._check()
        fut = asyncio.get_running_loop().create_future()
        self._done_waiters.setdefault(request_id, []).append(fut)
        return await asyncio.wait_for(fut, timeout)

    async def cancel(self, request_id: str) -> None:
        """Cancels a request: its in-flight episodes are aborted; its request_done says ``cancelled``."""
        await self._send(json.dumps({"type": "cancel", "request_id": request_id}))

    # ----------------------------------------------------------------------------------------------------------
    # Receiving

    async def next(self, timeout: float | None = None) -> Trajectory:
        """Returns the next trajectory not claimed by ``run`` (not acked: call ``ack``)."""
        self._check()
        assert self._queue is not None
        x = await asyncio.wait_for(self._queue.get(), timeout)
        if x is _CLOSED:
            self._queue.put_nowait(_CLOSED)
            self._check()
            raise StreamClosedError("client closed")
        if isinstance(x, _Raise):
            raise x.exc
        self._grant(1)
        return x

    def trajectories(self, *, auto_ack: bool = True) -> "TrajectoryIterator":
        """An async iterator of trajectories. With auto_ack, each one is acked when the loop asks for the next,
        that is after the loop body handled it; a body that raises leaves it unacked (it comes again after a
        reconnect or restart). ``async with client.trajectories() as it`` also acks the last one on a clean exit.
        """
        return TrajectoryIterator(self, auto_ack)

    async def consume(
        self, handler: Callable[[Trajectory], Any | Awaitable[Any]], *, limit: int | None = None
    ) -> int:
        """Calls handler (sync or async) on each trajectory and acks it after the handler returns.

        Stops after ``limit`` trajectories (or runs until the client closes); returns how many were handled. An
        exception from the handler propagates and the trajectory stays unacked.
        """
        count = 0
        while limit is None or count < limit:
            try:
                traj = await self.next()
            except StreamClosedError:
                if self._closed:
                    break
                raise
            r = handler(traj)
            if inspect.isawaitable(r):
                await r
            self.ack(traj)
            count += 1
        return count

    # ----------------------------------------------------------------------------------------------------------
    # Weight updates

    async def _control(self, frame: dict[str, Any]) -> None:
        cid = _new_id()
        frame["id"] = cid
        fut = asyncio.get_running_loop().create_future()
        self._controls[cid] = fut
        try:
            await self._send(json.dumps(frame))
            await fut
        finally:
            self._controls.pop(cid, None)

    async def pause(self, mode: str = "abort") -> None:
        """Pauses generation: no new turns start; ``mode`` is SGLang's (abort, retract, in_place)."""
        if mode not in PAUSE_MODES:
            raise ValueError(f"mode must be one of {PAUSE_MODES}, got {mode!r}")
        await self._control({"type": "pause", "mode": mode})

    async def resume(self) -> None:
        """Resumes generation after pause."""
        await self._control({"type": "resume"})

    async def update_weights(self, model_path: str, weight_version: str | None = None, **options: Any) -> None:
        """Asks the model servers to load new weights from model_path (SGLang /update_weights_from_disk)."""
        frame: dict[str, Any] = {"type": "update_weights", "model_path": model_path}
        if weight_version is not None:
            frame["weight_version"] = weight_version
        if options:
            frame["options"] = options
        await self._control(frame)

    # ----------------------------------------------------------------------------------------------------------
    # Test hooks

    async def _drop_connection(self) -> None:
        """Drops the TCP connection without a close handshake (tests use it to exercise resume)."""
        if self._ws is not None:
            self._ws.transport.abort()


class TrajectoryIterator:
    """See Client.trajectories."""

    def __init__(self, client: Client, auto_ack: bool) -> None:
        self._client = client
        self._auto_ack = auto_ack
        self._prev: Trajectory | None = None

    def __aiter__(self) -> AsyncIterator[Trajectory]:
        return self

    async def __anext__(self) -> Trajectory:
        self._ack_prev()
        try:
            traj = await self._client.next()
        except StreamClosedError:
            if self._client._closed:
                raise StopAsyncIteration
            raise
        self._prev = traj
        return traj

    def _ack_prev(self) -> None:
        if self._prev is not None and self._auto_ack:
            self._client.ack(self._prev)
        self._prev = None

    async def __aenter__(self) -> "TrajectoryIterator":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self._ack_prev()
