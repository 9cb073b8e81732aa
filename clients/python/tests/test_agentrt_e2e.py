"""End to end against the real thing: `agentrt emulate` (the SGLang stand-in, real Qwen3 tokenizer) and
`agentrt serve` (the runtime, built-in Wasm parser, calculator and limiter) as subprocesses, over real sockets.

Needs AGENTRT_BIN (a built bin/agentrt) and AGENTRT_QWEN3_MODEL; scripts/test.d/50-python-client.sh sets both.
Every trajectory is checked for the invariants a trainer relies on, and every logprob is recomputed with the
emulator's published scoring function (sglang/emulator/logprob.go).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from agentrt_client import Client, to_slime_sample
from helpers import run_async

BIN = os.environ.get("AGENTRT_BIN", "")
MODEL = os.environ.get("AGENTRT_QWEN3_MODEL", "")


def emulator_logprob(prefix: list[int], tid: int) -> float:
    h = 0xCBF29CE484222325
    for x in list(prefix[-3:]) + [tid]:
        for b in (x & 0xFFFFFFFF).to_bytes(4, "little"):
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    u = (h >> 11) * 2.0**-53
    return -10.0 * u * u * u


def check_trajectory(t: dict) -> None:
    ids, mask, lps = t["token_ids"], t["loss_mask"], t["logprobs"]
    assert len(ids) == len(mask) == len(lps) > 0
    first = t["segments"][0]["length"]  # the first prompt: no logprobs (keeps SGLang's radix match)
    assert all(x is None for x in lps[:first])
    for p in range(first, len(ids)):
        assert lps[p] == emulator_logprob(ids[max(0, p - 3) : p], ids[p]), f"logprob {p}"
    off = 0
    for s in t["segments"]:
        assert s["offset"] == off
        want = 1 if s["kind"] == "response" else 0
        assert all(m == want for m in mask[off : off + s["length"]])
        off += s["length"]
    assert off == len(ids)
    assert t["segments"][-1]["kind"] == "response"


class Proc:
    def __init__(self, args: list[str]):
        self.args = args
        self.proc: subprocess.Popen | None = None

    def start(self, marker: str) -> str:
        self.proc = subprocess.Popen([BIN, *self.args], stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = self.proc.stdout.readline().strip()
        if marker not in line:
            self.proc.kill()
            raise RuntimeError(f"{self.args[0]} did not start: {line!r}")
        return line

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def stack(tmp_path: pathlib.Path, request: pytest.FixtureRequest):
    """agentrt emulate + a factory of agentrt serve processes on one spool. A test marked
    ``@pytest.mark.stack(latency="100ms", concurrency=4)`` gets an emulator with that latency and that
    server.concurrency; ``episode_timeout`` sets the agent's, ``wrong_answer_rate`` the emulator's (the fraction of
    final answers that misreport the result, so that a correctness reward varies within a group)."""
    if not BIN or not MODEL:
        pytest.fail("set AGENTRT_BIN and AGENTRT_QWEN3_MODEL (scripts/test.d/50-python-client.sh does)")
    mark = request.node.get_closest_marker("stack")
    opts = mark.kwargs if mark else {}
    script = []
    if "script" in opts:  # the scripted policy's replies, one conversation a line
        (tmp_path / "script.jsonl").write_text("".join(json.dumps(x) + "\n" for x in opts["script"]))
        script = ["--policy", "scripted", "--script", str(tmp_path / "script.jsonl")]
    emu = Proc(["emulate", "--model", MODEL, "--addr", "127.0.0.1:0", "--seed", "5", "--latency", opts.get("latency", ""),
                "--wrong-answer-rate", str(opts.get("wrong_answer_rate", 0.0)), *script])
    emu_url = emu.start("http://")
    repo = pathlib.Path(__file__).resolve().parents[3]
    cfg = (repo / "runtime.toml").read_text()
    cfg = cfg.replace('workers = ["emulator"]', f'workers = ["{emu_url}"]')
    if "concurrency" in opts:
        cfg = cfg.replace("concurrency = 256", f"concurrency = {opts['concurrency']}", 1)
    if "episode_timeout" in opts:  # an agent whose episodes end aborted/deadline
        cfg = cfg.replace('episode_timeout = "10m"', f'episode_timeout = "{opts["episode_timeout"]}"', 1)
    if "agent_tables" in opts:  # extra tables of the agent ([agent.context], [agent.reward]), before its sampling
        cfg = cfg.replace("\n[agent.sampling]\n", "\n" + opts["agent_tables"] + "\n\n[agent.sampling]\n", 1)
    cfg = cfg.replace('spool_dir = "~/.cache/agentrt/spool"', f'spool_dir = "{tmp_path / "spool"}"')
    cfg = cfg.replace('model = "~/.cache/agentrt/models/qwen3"', f'model = "{MODEL}"')
    assert emu_url in cfg and str(tmp_path) in cfg
    (tmp_path / "runtime.toml").write_text(cfg)
    servers: list[Proc] = []

    def serve(addr: str = "127.0.0.1:0") -> str:
        p = Proc(["serve", str(tmp_path / "runtime.toml"), "--addr", addr, "--log-level", "warn"])
        line = p.start("listening on")
        servers.append(p)
        return line.split("WebSocket ")[1].split(")")[0]

    yield serve, servers
    for s in servers:
        s.stop()
    emu.stop()


def test_serve_end_to_end(stack):
    serve, _ = stack
    url = serve()

    @run_async
    async def body():
        async with Client(url, "e2e") as c:
            items = [{"id": f"q{i}", "messages": [{"role": "user", "content": f"What is {i}*7+3?"}], "label": str(i * 7 + 3)} for i in range(6)]
            trajs = await c.run(items, n=2, timeout=45)
            assert len(trajs) == 12
            groups = {}
            for t in trajs:
                check_trajectory(t.data)
                assert t.status == "completed", t.data.get("error")
                groups.setdefault(t.group_id, []).append(t.sample_index)
                tool = [m for m in t.data["messages"] if m["role"] == "tool"]
                assert tool and tool[0]["content"] == t.data["label"].strip('"')  # the calculator really ran
                s = to_slime_sample(t)
                assert s.response_length == len(t.token_ids) - t.data["segments"][0]["length"]
            assert sorted(len(v) for v in groups.values()) == [2] * 6

    body()


def test_serve_turn_events(stack):
    """A request with events=True gets, per episode, a turn event for every model call (its tokens and timings are
    the trajectory's) and a tool_call and a tool_result event for every tool call, as they happen."""
    serve, _ = stack
    url = serve()
    events: list[dict] = []

    @run_async
    async def body():
        async with Client(url, "events", on_event=events.append) as c:
            items = [{"id": "q", "messages": [{"role": "user", "content": "What is 6*7+3?"}]}]
            trajs = await c.run(items, n=2, timeout=45, events=True)
            quiet = await c.run([{"id": "r", "messages": [{"role": "user", "content": "What is 2*3?"}]}], timeout=45)
            assert len(trajs) == 2 and len(quiet) == 1
            assert not [e for e in events if e["request_id"] == quiet[0].request_id]  # it did not ask
            for t in trajs:
                check_trajectory(t.data)
                mine = [e for e in events if e["request_id"] == t.request_id and e["item_id"] == "q" and e["sample_index"] == t.sample_index]
                assert all(e["type"] == "event" and e["turn"] == e["event"]["turn"] for e in mine)
                turns = [e["event"] for e in mine if e["event"]["kind"] == "turn"]
                responses = [s for s in t.data["segments"] if s["kind"] == "response"]
                assert len(turns) == len(responses) >= 2
                for i, (ev, s) in enumerate(zip(turns, responses)):
                    assert ev["turn"] == i and ev["response_tokens"] == s["length"] and ev["prompt_tokens"] == s["offset"]
                    assert ev["finish_reason"] == s["info"]["finish_reason"] and ev["latency_ms"] == s["info"]["latency_ms"]
                calls = [e["event"] for e in mine if e["event"]["kind"] == "tool_call"]
                results = [e["event"] for e in mine if e["event"]["kind"] == "tool_result"]
                tool_msgs = [m for m in t.data["messages"] if m["role"] == "tool"]
                assert len(calls) == len(results) == len(tool_msgs) >= 1
                assert [r["call_id"] for r in results] == [c["call_id"] for c in calls] == [m["tool_call_id"] for m in tool_msgs]
                assert all(r["name"] == "calculator" and r["outcome"] == "ok" and r["bytes"] == len(m["content"]) for r, m in zip(results, tool_msgs))

    body()


def test_serve_kill9_redelivers(stack):
    serve, servers = stack
    url = serve()
    addr = url.removeprefix("ws://").split("/")[0]

    @run_async
    async def body():
        async with Client(url, "k9") as c:
            items = [{"id": f"k{i}", "messages": [{"role": "user", "content": f"What is {i}+{i}?"}]} for i in range(4)]
            rid = await c.submit(items, n=2)
            await c.wait_request(rid, timeout=45)
            got = [await c.next(timeout=10) for _ in range(8)]
            before = sorted(t.trajectory_id for t in got)
        servers[-1].kill9()
        serve(addr)  # same spool, same port
        async with Client(url, "k9") as c2:
            assert c2.welcome.unacked == 8
            after = sorted([(await c2.next(timeout=20)).trajectory_id for _ in range(8)])
            assert after == before

    body()


@pytest.mark.stack(latency="100ms", concurrency=4)
def test_serve_kill9_twice_mid_request(stack):
    """The issue's scenario, small: a trainer submits, `agentrt serve` is killed with SIGKILL twice while the
    request runs and restarted on its spool. The client reconnects by itself, the server resumes the request,
    every sample arrives once (after the client's dedupe) and request_done counts them all."""
    serve, servers = stack
    url = serve()
    addr = url.removeprefix("ws://").split("/")[0]

    @run_async
    async def body():
        async with Client(url, "k9-mid", reconnect_timeout=50) as c:
            items = [{"id": f"m{i}", "messages": [{"role": "user", "content": f"What is {i}*9+2?"}]} for i in range(8)]
            rid = await c.submit(items, n=4)
            seen: set[str] = set()
            async for t in c.trajectories():
                assert t.trajectory_id not in seen
                seen.add(t.trajectory_id)
                check_trajectory(t.data)
                assert t.status == "completed", t.data.get("error")
                if len(seen) in (4, 12):
                    servers[-1].kill9()
                    serve(addr)  # same spool, same port
                if len(seen) == 32:
                    break
            done = await c.wait_request(rid, timeout=45)
            assert done.status == "completed" and done.trajectories == 32
            assert c.reconnects == 2

    body()


def _compaction_script(key: str, turns: int) -> dict:
    filler = " ".join(["the agent works through the long task one careful part at a time"] * 8)
    replies = [f"[turn:{i}] Part {i}: {filler}.\n<tool_call>\n" + json.dumps({"name": "calculator", "arguments": {"expression": f"{i}*6+7"}})
               + "\n</tool_call>" for i in range(turns - 1)]
    replies.append(f"[turn:{turns - 1}] All parts are done. The answer is \\boxed{{42}}.")
    return {"key": key, "replies": replies}


COMPACTING_AGENT = "\n".join([
    "[agent.context]",
    'policy = "keep_last"',
    "max_tokens = 700",
    "keep_turns = 1",
    "",
    "[agent.reward]",
    'plugin = "builtin:math_reward"',
])


@pytest.mark.stack(script=[_compaction_script("compact", 5)], agent_tables=COMPACTING_AGENT)
def test_compacted_episode_reaches_the_trainer(stack):
    """An agent whose context is compacted ([agent.context] keep_last) under `agentrt serve`: the trainer receives
    one trajectory per episode carrying its samples (each a prefix chain with its own first prompt) and one reward,
    and agentrt_client.slime.generate returns slime's list-of-samples form for the prompt."""
    import argparse

    from agentrt_client._shared import close_shared
    from agentrt_client.slime import generate
    from test_slime_contract import Sample

    serve, _ = stack
    url = serve()

    @run_async
    async def body():
        async with Client(url, "compaction-e2e") as c:
            trajs = await c.run([{"id": "q", "messages": [{"role": "user", "content": "[script:compact] Do all five parts."}],
                                  "label": "42"}], n=2, timeout=45)
        assert len(trajs) == 2
        for t in trajs:
            assert t.status == "completed", t.data.get("error")
            assert t.is_multi_sample and t.num_samples >= 2, t.data.get("metrics")
            assert t.reward == 1.0 and t.data["metrics"]["samples"] == t.num_samples
            turns = 0
            for k, s in enumerate(t.samples):
                check_trajectory(s.data)  # aligned, masks, the emulator's logprobs, ends on a response
                assert s.reward == 1.0 and s.sample_origin["first_turn"] == turns
                turns += s.num_turns
            assert turns == 5
            assert t.samples[-1].token_ids == t.token_ids
        args = argparse.Namespace(agentrt_url=url, agentrt_consumer_id="slime-compaction")
        out = await generate(args, Sample(index=3, prompt="[script:compact] Do all five parts.", label="42"),
                             {"temperature": 1.0, "max_new_tokens": 4096})
        assert isinstance(out, list) and len(out) >= 2
        for x in out:
            assert x.status is Sample.Status.COMPLETED and x.reward == 1.0 and x.response_length == len(x.loss_mask) > 0
        await close_shared()

    body()


def test_slime_generate_with_slimes_sampling_params(stack):
    """slime's real GenerateState.sampling_params (slime/rollout/sglang_rollout.py: rollout_* args,
    no_stop_trim=True, spaces_between_special_tokens=False, custom_params when top_p != 1, sampling_seed per
    sample under deterministic inference) through agentrt_client.slime.generate, agentrt serve and SGLang's
    stand-in: every sample completes, and prefix_cache_info holds the episode's cached and prompt tokens."""
    import argparse

    from agentrt_client._shared import close_shared
    from agentrt_client.slime import generate
    from test_slime_contract import Sample

    serve, _ = stack
    url = serve()

    @run_async
    async def body():
        args = argparse.Namespace(agentrt_url=url, agentrt_consumer_id="slime-e2e")
        base = dict(temperature=1.0, top_p=0.95, top_k=-1, max_new_tokens=512, stop=None, stop_token_ids=None,
                    skip_special_tokens=False, no_stop_trim=True, spaces_between_special_tokens=False,
                    custom_params={"return_top_p_token_ids": True})
        samples = [Sample(index=i, prompt="What is 12*7+3?", label="87") for i in range(4)]
        outs = await asyncio.gather(*[generate(args, s, {**base, "sampling_seed": 1000 + i}) for i, s in enumerate(samples)])
        for s in outs:
            assert s.status is Sample.Status.COMPLETED, s.metadata
            turns = s.metadata["agentrt"]["turns"]
            assert s.prefix_cache_info.total_prompt_tokens == sum(t["prompt_tokens"] for t in turns) > 0
            assert s.prefix_cache_info.cached_tokens == sum(t["cached_tokens"] for t in turns)
            assert s.metadata["agentrt"]["provenance"]["sampling_params"]["skip_special_tokens"] is False
        # later turns extend a cached history, so the group found some of its prompt tokens in the cache
        assert sum(s.prefix_cache_info.cached_tokens for s in outs) > 0
        await close_shared()

    body()
