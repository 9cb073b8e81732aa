#!/usr/bin/env python3
"""The soak test's trainer (bench/soak.sh starts it): speaks the stream protocol (docs/PROTOCOL.md) directly, so
that it controls exactly when it drops the connection.

For --duration seconds it keeps --outstanding requests of --prompts x --n samples running, acks every trajectory
and request_done it handles, and every --disconnect-every seconds it drops the connection abruptly (no close
frame, frames in flight lost) and reconnects with the same consumer id. Then it drains: it waits until every
accepted request has sent request_done and every sample's trajectory has arrived (--drain-timeout bounds it).

It counts, after deduplicating by trajectory id:
  lost          samples of accepted requests whose trajectory never arrived (must be 0)
  misreported   trajectories whose status does not match their content, and request_done frames whose status or
                count does not match what arrived (must be 0)
and writes them as JSON to --report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time

import websockets


def check_trajectory(t: dict) -> str | None:
    """Returns why the trajectory's status is not honest, or None."""
    status, reason, err = t.get("status"), t.get("status_reason") or "", t.get("error") or ""
    ids, mask, lps, segs = t.get("token_ids") or [], t.get("loss_mask") or [], t.get("logprobs") or [], t.get("segments") or []
    if not (len(ids) == len(mask) == len(lps)):
        return f"arrays not aligned: {len(ids)} tokens, {len(mask)} mask, {len(lps)} logprobs"
    pos = 0
    for s in segs:
        if s["offset"] != pos:
            return f"segment at {s['offset']} does not start where the previous ended ({pos})"
        want = 1 if s["kind"] == "response" else 0
        if any(m != want for m in mask[pos : pos + s["length"]]):
            return f"loss_mask is not {want} on {s['kind']} segment at {pos}"
        pos += s["length"]
    if pos != len(ids):
        return f"segments cover {pos} of {len(ids)} tokens"
    if status == "completed":
        last = segs[-1] if segs else None
        if err:
            return f"completed with error {err!r}"
        if not last or last["kind"] != "response" or (last.get("info") or {}).get("finish_reason") != "stop":
            return "completed but the last turn did not stop (finish_reason " + repr((last or {}).get("info", {}).get("finish_reason")) + ")"
    elif status == "truncated":
        if not reason:
            return "truncated without a status_reason"
    elif status in ("aborted", "failed"):
        if not (reason or err):
            return f"{status} without a reason or error"
    else:
        return f"unknown status {status!r}"
    return None


class Soak:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.rng = random.Random(a.seed)
        self.expected: dict[str, set[str]] = {}  # request id -> trajectory ids it must deliver
        self.accepted: set[str] = set()
        self.got: dict[str, dict[str, str]] = {}  # request id -> trajectory id -> status
        self.done: dict[str, dict] = {}
        self.misreported: list[str] = []
        self.statuses: dict[str, int] = {}
        self.redelivered = 0
        self.disconnects = 0
        self.connect_failures = 0
        self.errors: list[str] = []
        self.next_req = 0
        # Acks go out in batches (as a trainer acks after a step), so a drop always loses some unacked frames
        # and the server must redeliver them.
        self.pending_acks: list[int] = []
        self.unacked_at_welcome = 0

    def outstanding(self) -> int:
        return sum(1 for r in self.expected if r not in self.done)

    def new_request(self) -> dict:
        rid = f"soak-{self.next_req}"
        self.next_req += 1
        items = []
        for i in range(self.a.prompts):
            x, y = self.rng.randint(2, 999), self.rng.randint(2, 999)
            items.append({"id": f"q{i}", "n": self.a.n, "label": str(x * y),
                          "messages": [{"role": "user", "content": f"What is {x} * {y}? Use the calculator."}]})
        self.expected[rid] = {f"{rid}/q{i}/{k}" for i in range(self.a.prompts) for k in range(self.a.n)}
        self.got[rid] = {}
        return {"type": "submit", "request_id": rid, "items": items}

    def handle(self, m: dict, ws_send) -> list[dict]:
        """Processes one frame; returns the frames to send back."""
        typ = m.get("type")
        out = []
        if typ == "trajectory":
            rid, tid = m["request_id"], m["trajectory_id"]
            if tid in self.got.get(rid, {}):
                self.redelivered += 1
            else:
                t = m["trajectory"]
                why = check_trajectory(t)
                if why:
                    self.misreported.append(f"{tid}: {why}")
                if rid not in self.expected or tid not in self.expected[rid]:
                    self.misreported.append(f"{tid}: a trajectory nobody asked for")
                self.got.setdefault(rid, {})[tid] = t["status"]
                key = t["status"] if t["status"] == "completed" else f'{t["status"]}:{t.get("status_reason") or t.get("error", "")[:80]}'
                self.statuses[key] = self.statuses.get(key, 0) + 1
            self.pending_acks.append(m["seq"])
            out.append({"type": "credit", "credits": 1})
        elif typ == "request_done":
            rid = m["request_id"]
            if rid not in self.done:
                self.done[rid] = m
            self.pending_acks.append(m["seq"])
            out.append({"type": "credit", "credits": 1})
        elif typ == "accepted":
            self.accepted.add(m["request_id"])
        elif typ in ("rejected", "error"):
            self.errors.append(json.dumps(m)[:300])
        return out

    async def session(self, deadline_submit: float, stop_at: float) -> None:
        """One connection: until stop_at (then dropped abruptly) or until everything is done after deadline_submit."""
        async with websockets.connect(self.a.url, max_size=None, ping_interval=None, open_timeout=30) as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": 1, "consumer_id": "soak", "credits": 256}))
            self.pending_acks = []  # seqs of the dropped connection: their frames come again
            w = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if w.get("type") != "welcome":
                raise RuntimeError(f"hello answered with {w}")
            self.unacked_at_welcome += w.get("unacked", 0)
            # A submit whose "accepted" was lost with a dropped connection is sent again: the server answers a
            # duplicate request id with accepted (duplicate: true) and runs it once.
            for rid in sorted(self.expected):
                if rid not in self.accepted:
                    await ws.send(json.dumps(self._resubmit(rid)))
            while True:
                now = time.monotonic()
                if now >= stop_at:
                    self.disconnects += 1
                    ws.transport.abort()  # abrupt: no close frame; frames in flight are lost
                    return
                if now < deadline_submit and self.outstanding() < self.a.outstanding:
                    req = self.new_request()
                    self.submitted[req["request_id"]] = req
                    await ws.send(json.dumps(req))
                    continue
                if now >= deadline_submit and self.finished():
                    await self.flush_acks(ws)
                    await ws.close()
                    return
                try:
                    raw = await asyncio.wait_for(ws.recv(), timeout=min(0.5, stop_at - now))
                except asyncio.TimeoutError:
                    await self.flush_acks(ws)
                    continue
                for f in self.handle(json.loads(raw), ws.send):
                    await ws.send(json.dumps(f))
                if len(self.pending_acks) >= self.a.ack_batch:
                    await self.flush_acks(ws)

    async def flush_acks(self, ws) -> None:
        if self.pending_acks:
            seqs, self.pending_acks = self.pending_acks, []
            await ws.send(json.dumps({"type": "ack", "seqs": seqs}))

    def _resubmit(self, rid: str) -> dict:
        return self.submitted[rid]

    def finished(self) -> bool:
        return all(r in self.done for r in self.expected) and all(
            len(self.got[r]) == len(self.expected[r]) for r in self.expected)

    async def run(self) -> dict:
        self.submitted: dict[str, dict] = {}
        t0 = time.monotonic()
        deadline_submit = t0 + self.a.duration
        hard_stop = deadline_submit + self.a.drain_timeout
        while time.monotonic() < hard_stop and not (time.monotonic() >= deadline_submit and self.finished()):
            every = self.a.disconnect_every * self.rng.uniform(0.75, 1.25)
            stop_at = min(time.monotonic() + every, hard_stop)
            try:
                await self.session(deadline_submit, stop_at)
            except (OSError, websockets.exceptions.WebSocketException, asyncio.TimeoutError, RuntimeError) as e:
                self.connect_failures += 1
                self.errors.append(f"session: {e!r}"[:300])
                await asyncio.sleep(0.5)
        return self.report(time.monotonic() - t0)

    def report(self, elapsed: float) -> dict:
        lost = sum(len(self.expected[r] - set(self.got[r])) for r in self.expected if r in self.accepted)
        for rid, d in self.done.items():
            n = len(self.got.get(rid, {}))
            if d.get("status") != "completed":
                self.misreported.append(f"{rid}: request_done status {d.get('status')!r} ({d.get('error', '')!r})")
            if d.get("trajectories") != len(self.expected.get(rid, ())):
                self.misreported.append(f"{rid}: request_done counts {d.get('trajectories')}, the request has {len(self.expected.get(rid, ()))} samples")
            elif n != d.get("trajectories"):
                self.misreported.append(f"{rid}: request_done counts {d.get('trajectories')}, {n} arrived")
        return {
            "elapsed_s": round(elapsed, 1),
            "requests": len(self.expected), "accepted": len(self.accepted), "request_done": len(self.done),
            "samples": sum(len(s) for s in self.expected.values()),
            "trajectories": sum(len(g) for g in self.got.values()),
            "statuses": self.statuses, "redelivered": self.redelivered, "unacked_at_welcome": self.unacked_at_welcome,
            "disconnects": self.disconnects, "session_failures": self.connect_failures,
            "lost": lost, "never_accepted": len(set(self.expected) - self.accepted),
            "misreported": len(self.misreported), "misreported_examples": self.misreported[:20],
            "errors": self.errors[:20],
        }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--duration", type=float, default=3600, help="seconds of submitting (then a drain)")
    p.add_argument("--disconnect-every", type=float, default=180, help="seconds between abrupt disconnects (±25%%)")
    p.add_argument("--drain-timeout", type=float, default=600)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--outstanding", type=int, default=8, help="requests kept running at once")
    p.add_argument("--ack-batch", type=int, default=32, help="acks sent together (and on idle)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--report", required=True)
    a = p.parse_args()
    rep = asyncio.run(Soak(a).run())
    with open(a.report, "w") as f:
        json.dump(rep, f, indent=1)
    print(json.dumps(rep), file=sys.stderr)
    return 0 if rep["lost"] == 0 and rep["misreported"] == 0 and rep["never_accepted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
