"""agentrt_client.ray on a real local Ray (PyPI ray, CPU): two agentrt nodes as actors, a trainer submitting through
both, one actor killed mid-request and restarted by Ray on the same address with its journal (nothing lost), and
nodes that end with the job that started them. Run by scripts/test.d/65-ray.sh (AGENTRT_BIN, AGENTRT_QWEN3_MODEL)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys
import time

import pytest
import ray

from agentrt_client import AuthError, Client
from agentrt_client.ray import start_nodes

ROOT = pathlib.Path(__file__).resolve().parents[3]
PATIENCE = float(os.environ.get("AGENTRT_TEST_PATIENCE_SECONDS", "180"))


def wait_until(what: str, cond) -> None:
    """Waits for cond() (a state of another process: nothing to wait on but the state itself); fails naming what
    it waited for after PATIENCE seconds."""
    deadline = time.monotonic() + PATIENCE
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {PATIENCE}s for {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def local_ray():
    # Loopback only (65-ray.sh sets RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: Ray's single-machine mode, everything on
    # 127.0.0.1, as on a laptop); no usage reporting, no dashboard.
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0" and os.environ.get("RAY_USAGE_STATS_ENABLED") == "0"
    ctx = ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    assert ctx.address_info["node_ip_address"] == "127.0.0.1", ctx.address_info
    yield ctx
    ray.shutdown()


@pytest.fixture
def config(tmp_path: pathlib.Path) -> pathlib.Path:
    """The shipped runtime.toml with the set-up's Qwen3 folder, two episodes at a time per node and a slow emulator,
    so that a node still has work when its actor is killed."""
    model = os.environ["AGENTRT_QWEN3_MODEL"]
    src = (ROOT / "runtime.toml").read_text()
    edits = [
        ('model = "~/.cache/agentrt/models/qwen3"', f'model = "{model}"'),
        ("concurrency = 256 ", "concurrency = 2 "),
        ('cache_dir = "~/.cache/agentrt/wazero"', f'cache_dir = "{tmp_path}/wazero"'),
        ("seed = 1\n", 'seed = 1\nlatency = { fixed = "100ms" }\n'),
    ]
    for old, new in edits:
        assert old in src, old
        src = src.replace(old, new, 1)
    p = tmp_path / "runtime.toml"
    p.write_text(src)
    return p


def items(prefix: str, count: int) -> list[dict]:
    return [
        {"id": f"{prefix}{i}", "messages": [{"role": "user", "content": f"What is {i} + {2 * i}? Use the calculator."}], "n": 2}
        for i in range(count)
    ]


async def train(urls: list[str], token: str, on_progress) -> dict[str, list]:
    """A trainer with one Client per node: submits 8 prompts x 2 samples to each and collects every trajectory."""
    got: dict[str, list] = {u: [] for u in urls}

    async def one(i: int, url: str) -> None:
        async with Client(url, f"trainer-{i}", token, reconnect_timeout=PATIENCE) as c:
            rid = await c.submit(items(f"n{i}-", 8))
            async for t in c.trajectories():
                got[url].append(t)
                await on_progress(i, len(got[url]))
                if len(got[url]) == 16:
                    break
            done = await c.wait_request(rid)
            assert done.status == "completed", done

    await asyncio.gather(*(one(i, u) for i, u in enumerate(urls)))
    return got


def test_two_nodes_a_trainer_and_a_killed_actor(local_ray, config, tmp_path):
    binary = os.environ["AGENTRT_BIN"]
    t0 = time.monotonic()
    nodes = start_nodes(config, num_nodes=2, binary=binary, host="127.0.0.1", workdir=tmp_path / "nodes")
    pids = [n["pid"] for n in nodes.info()]
    try:
        urls = nodes.addresses()
        before = nodes.info()
        print(f"two nodes up in {time.monotonic() - t0:.1f}s: {urls}", file=sys.stderr)
        assert len(set(urls)) == 2 and all(u.startswith("ws://127.0.0.1:") and u.endswith("/v1/stream") for u in urls)
        assert [n["starts"] for n in before] == [1, 1] and all(alive(n["pid"]) for n in before)

        async def intruder() -> None:  # the nodes got the token as $AGENTRT_TOKEN: without it, no stream
            async with Client(urls[1], "intruder", "not-the-token"):
                pass

        with pytest.raises(AuthError):
            asyncio.run(intruder())

        killed = asyncio.Event()

        async def on_progress(node: int, received: int) -> None:
            # Node 0's actor dies while its request still runs (4 of 16 trajectories in, 2 episodes at a time).
            if node == 0 and received == 4 and not killed.is_set():
                killed.set()
                ray.kill(nodes.actors[0], no_restart=False)

        got = asyncio.run(train(urls, nodes.token, on_progress))
        assert killed.is_set()
        for url, trajs in got.items():
            ids = {t.trajectory_id for t in trajs}
            assert len(trajs) == 16 and len(ids) == 16, (url, len(trajs), len(ids))
            assert all(t.status == "completed" for t in trajs), [t.status for t in trajs]
        after = nodes.info()
        # The killed node's agentrt died with its actor, and Ray restarted both: same address, new process.
        assert not alive(before[0]["pid"])
        assert after[0]["starts"] == 2 and after[0]["url"] == urls[0] and after[0]["pid"] != before[0]["pid"]
        assert after[1]["starts"] == 1 and after[1]["pid"] == before[1]["pid"]
        assert nodes.addresses() == urls
        pids = [n["pid"] for n in after]
    finally:
        nodes.shutdown(grace=10)
    for pid in pids:
        wait_until(f"agentrt pid {pid} to exit after shutdown()", lambda pid=pid: not alive(pid))


DRIVER = """
import os, sys, ray
from agentrt_client.ray import start_nodes
ray.init(address=sys.argv[1], log_to_driver=False)
nodes = start_nodes(sys.argv[2], binary=os.environ["AGENTRT_BIN"], host="127.0.0.1", workdir=sys.argv[3])
print(nodes.info()[0]["pid"], flush=True)
# exits without shutdown(): the job ends, and its nodes with it
"""


def test_nodes_end_with_the_job(local_ray, config, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, local_ray.address_info["address"], str(config), str(tmp_path / "job")],
        capture_output=True, text=True, timeout=PATIENCE,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    pid = int(out.stdout.strip().splitlines()[-1])
    wait_until(f"the job's agentrt node (pid {pid}) to exit with the job", lambda: not alive(pid))


def test_a_node_that_cannot_start_says_why(local_ray, tmp_path):
    bad = tmp_path / "runtime.toml"
    bad.write_text((ROOT / "runtime.toml").read_text().replace("concurrency = 256 ", "concurency = 256 ", 1))
    with pytest.raises(Exception, match="unknown key"):
        start_nodes(bad, binary=os.environ["AGENTRT_BIN"], host="127.0.0.1", workdir=tmp_path / "bad", ready_timeout=PATIENCE)


PARENT = """
import subprocess, sys
from agentrt_client.ray import _die_with_parent
p = subprocess.Popen(["sleep", "600"], preexec_fn=_die_with_parent)
print(p.pid, flush=True)
sys.stdin.read()  # until the test closes stdin, then exit without touching the child
"""


def test_a_node_process_dies_with_its_parent():
    """The guard that needs no Ray: a node's process gets SIGKILL from the kernel when its supervisor dies, whatever
    Ray's own clean-up of an actor's children does (RAY_kill_child_processes_on_worker_exit)."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child)
    parent.kill()
    parent.wait()
    wait_until(f"the child (pid {child}) to die with its parent", lambda: not alive(child))
