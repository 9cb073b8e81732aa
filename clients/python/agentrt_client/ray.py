"""agentrt nodes as Ray actors, next to a Ray trainer.

``start_nodes`` starts ``num_nodes`` agentrt services (``agentrt serve``, the binary that ``pip install agentrt``
puts on PATH) as Ray actors, each on a CPU bundle (one per node by default, or the bundles of a placement group you
pass), and returns their WebSocket addresses for ``agentrt_client.Client``::

    import ray
    from agentrt_client import Client
    from agentrt_client.ray import start_nodes

    ray.init()
    with start_nodes("runtime.toml", num_nodes=2) as nodes:
        urls = nodes.addresses()                  # ["ws://10.0.0.5:41873/v1/stream", ...]
        async with Client(urls[0], "trainer-0", nodes.token) as c: ...

Lifetimes: a node is a subprocess of its actor and dies with it (the kernel kills it when the actor's process
exits, however that happens), so the nodes stop when the job ends or ``shutdown()`` is called (which lets them
finish as SIGTERM does: ``server.shutdown_grace``). A node that dies (its actor killed, or the agentrt process
gone) is restarted by Ray (``max_restarts``) on the same port with the same spool, so a trainer's Client reconnects
to the same address and gets everything: agentrt journals each accepted request and resumes it after a restart.

The nodes are independent services today: each has its own spool and runs the requests submitted to it, so a
trainer spreads its work over ``addresses()`` itself. When agentrt's cluster mode exists (nodes sharing one
request store), its settings are passed through ``serve_args``/``env`` (static, or a function of the node index),
and the nodes then form one service. The config is read here, on the driver, and written into each node's working
folder: paths in it must hold on every machine (absolute paths, ``builtin:`` plugins, a Hugging Face model id).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

try:
    import ray
    from ray.util.placement_group import PlacementGroup
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
except ImportError as e:  # pragma: no cover - exercised only without ray
    raise ImportError("agentrt_client.ray needs Ray: pip install 'agentrt[ray]' (or pip install ray)") from e

__all__ = ["AgentrtNodes", "NodeInfo", "start_nodes"]

NodeInfo = dict[str, Any]
"""What ``AgentrtNodes.info()`` reports per node: index, url, pid, host, port, workdir, starts (1 + restarts)."""

_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child must not load anything


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel sends SIGKILL to agentrt when the thread that started it exits,
    which is the actor's supervisor thread, alive as long as the actor. A kill -9 is safe for agentrt by design:
    accepted requests are journaled and resume on the next start."""
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:  # pragma: no cover
        os._exit(127)


class _Node:
    """One agentrt process, supervised by one Ray actor (see start_nodes)."""

    def __init__(
        self,
        index: int,
        config_text: str,
        binary: str | None,
        workdir: str,
        host: str | None,
        env: dict[str, str],
        args: list[str],
        ready_timeout: float,
    ) -> None:
        self.index = index
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = self.workdir / "runtime.toml"
        self.config.write_text(config_text)
        self.binary = binary or shutil.which("agentrt")
        if not self.binary:
            raise RuntimeError(
                "agentrt is not on PATH on this Ray node: pip install agentrt there (or pass binary=PATH)"
            )
        self.host = host or ray.util.get_node_ip_address()
        self.env = {**os.environ, **env}
        self.args = args
        self.log = self.workdir / "serve.log"
        # A restarted actor (same index, same workdir) counts its starts and keeps its port and spool.
        starts_file = self.workdir / "starts"
        self.starts = int(starts_file.read_text()) + 1 if starts_file.exists() else 1
        starts_file.write_text(str(self.starts))
        port_file = self.workdir / "port"
        port = int(port_file.read_text()) if port_file.exists() else 0
        self._stopping = False
        self._proc: subprocess.Popen | None = None
        try:
            self.url = self._start(port, ready_timeout)
        except OSError:
            if port == 0:
                raise
            self.url = self._start(0, ready_timeout)  # the old port is taken: the address changes
        self.port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        port_file.write_text(str(self.port))

    def _start(self, port: int, ready_timeout: float) -> str:
        ready = threading.Event()
        result: dict[str, Any] = {}
        t = threading.Thread(target=self._supervise, args=(port, ready, result), name=f"agentrt-node-{self.index}", daemon=True)
        t.start()
        if not ready.wait(ready_timeout):
            self._kill()
            raise TimeoutError(f"agentrt node {self.index} did not listen within {ready_timeout}s: {self._tail()}")
        if "url" not in result:
            tail = self._tail()
            if "address already in use" in tail:
                raise OSError(tail)
            raise RuntimeError(f"agentrt node {self.index} exited before it listened: {tail}")
        return result["url"]

    def _supervise(self, port: int, ready: threading.Event, result: dict[str, Any]) -> None:
        spool = self.workdir / "spool"
        cmd = [self.binary, "serve", str(self.config), "--addr", f"{self.host}:{port}", "--spool-dir", str(spool), *self.args]
        with open(self.log, "ab") as log:
            proc = subprocess.Popen(
                cmd, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                preexec_fn=_die_with_parent,
            )
        self._proc = proc
        assert proc.stdout is not None
        line = proc.stdout.readline().decode(errors="replace")
        # "agentrt serve: listening on http://HOST:PORT (WebSocket ws://HOST:PORT/v1/stream), inference on ..."
        if "(WebSocket " in line:
            result["url"] = line.split("(WebSocket ", 1)[1].split(")", 1)[0]
        ready.set()
        for _ in proc.stdout:  # serve prints nothing more on stdout; keep the pipe drained all the same
            pass
        proc.wait()
        if "url" in result and not self._stopping:
            # The node died under a live actor: end the actor too, so that Ray restarts both.
            os._exit(1)

    def _tail(self, n: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:].strip()
        except OSError:
            return ""

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()

    def info(self) -> NodeInfo:
        pid = self._proc.pid if self._proc is not None else None
        return {"index": self.index, "url": self.url, "pid": pid, "host": self.host, "port": self.port,
                "workdir": str(self.workdir), "starts": self.starts}

    def address(self) -> str:
        return self.url

    def stop(self, grace: float) -> int | None:
        """SIGTERM, as serve's own shutdown: running episodes finish for server.shutdown_grace, the spool is
        flushed. After grace seconds the process is killed. Returns its exit code."""
        self._stopping = True
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode


class AgentrtNodes:
    """The nodes start_nodes started: their addresses, their info, and shutdown."""

    def __init__(self, actors: list[Any], token: str, placement_group: PlacementGroup | None, owns_pg: bool) -> None:
        self.actors = actors
        self.token = token
        self.placement_group = placement_group
        self._owns_pg = owns_pg

    def addresses(self, timeout: float | None = None) -> list[str]:
        """The nodes' WebSocket URLs (ws://HOST:PORT/v1/stream), in node order. A node being restarted is waited
        for."""
        return ray.get([a.address.remote() for a in self.actors], timeout=timeout)

    def info(self, timeout: float | None = None) -> list[NodeInfo]:
        """Per node: index, url, pid, host, port, workdir and starts (1 + the restarts so far)."""
        return ray.get([a.info.remote() for a in self.actors], timeout=timeout)

    def shutdown(self, grace: float = 30.0) -> None:
        """Stops every node as SIGTERM does (grace seconds at most), then ends the actors (and the placement group
        start_nodes created)."""
        with contextlib.suppress(Exception):
            ray.get([a.stop.remote(grace) for a in self.actors], timeout=grace + 30)
        for a in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(a, no_restart=True)
        if self._owns_pg and self.placement_group is not None:
            with contextlib.suppress(Exception):
                ray.util.remove_placement_group(self.placement_group)

    def __enter__(self) -> AgentrtNodes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _per_node(value: Any, index: int) -> Any:
    return value(index) if callable(value) else value


def start_nodes(
    config: str | os.PathLike[str],
    *,
    num_nodes: int = 1,
    num_cpus: float = 1,
    placement_group: PlacementGroup | None = None,
    bundle_indices: Sequence[int] | None = None,
    strategy: str = "SPREAD",
    binary: str | None = None,
    host: str | None = None,
    token: str | None = None,
    serve_args: Sequence[str] | Callable[[int], Sequence[str]] = (),
    env: dict[str, str] | Callable[[int], dict[str, str]] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    max_restarts: int = -1,
    ready_timeout: float = 600.0,
    name_prefix: str | None = None,
) -> AgentrtNodes:
    """Starts ``num_nodes`` agentrt services as Ray actors and returns them once every one listens.

    config: a runtime.toml, read here and given to every node (its [server] addr and spool are set per node).
    num_cpus: the CPUs of each node's bundle. placement_group / bundle_indices: place node i on bundle
    bundle_indices[i] (default i) of your placement group; without one, a placement group of num_nodes CPU
    bundles is created with ``strategy`` (SPREAD: one node per machine where Ray can). binary: the agentrt
    executable on the nodes (default: ``agentrt`` on their PATH). host: the address nodes listen on (default: the
    Ray node's IP). token: the bearer token trainers present (default: a new random one, ``nodes.token``); nodes
    get it as $AGENTRT_TOKEN. serve_args / env: extra ``agentrt serve`` arguments and environment, the same for
    every node or a function of the node index (the hook for cluster-mode settings). workdir: each node's folder
    is workdir/node-INDEX, holding its config, spool, port and serve.log (default: a folder under the system's
    temp dir named after the Ray job). max_restarts: how often Ray restarts a node that died (-1: always).
    ready_timeout: seconds a node may take to listen (its first start may download a model's tokenizer).

    Raises ValueError for a bad count or bundle index, and whatever a node's start raised (ray.exceptions wrap
    the node's serve.log tail) when one cannot start.
    """
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    config_text = pathlib.Path(config).read_text()
    token = token or secrets.token_urlsafe(24)
    owns_pg = placement_group is None
    if placement_group is None:
        placement_group = ray.util.placement_group([{"CPU": num_cpus}] * num_nodes, strategy=strategy)
    indices = list(bundle_indices) if bundle_indices is not None else list(range(num_nodes))
    if len(indices) != num_nodes:
        raise ValueError(f"bundle_indices has {len(indices)} entries for {num_nodes} nodes")
    ray.get(placement_group.ready(), timeout=ready_timeout)
    if workdir is None:
        job = ray.get_runtime_context().get_job_id()
        workdir = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"agentrt-ray-{job}-{int(time.time())}"
    actor_cls = ray.remote(_Node)
    actors = []
    try:
        for i in range(num_nodes):
            node_env = {"AGENTRT_TOKEN": token, **(_per_node(env, i) or {})}
            opts: dict[str, Any] = {
                "num_cpus": num_cpus,
                "max_restarts": max_restarts,
                "max_task_retries": -1,  # calls made while a node restarts wait for it
                "scheduling_strategy": PlacementGroupSchedulingStrategy(
                    placement_group=placement_group, placement_group_bundle_index=indices[i]
                ),
            }
            if name_prefix:
                opts["name"] = f"{name_prefix}-{i}"
            actors.append(
                actor_cls.options(**opts).remote(
                    i, config_text, binary, str(pathlib.Path(workdir) / f"node-{i}"), host, node_env,
                    list(_per_node(serve_args, i)), ready_timeout,
                )
            )
        nodes = AgentrtNodes(actors, token, placement_group, owns_pg)
        nodes.addresses(timeout=ready_timeout + 60)  # every node listens, or its start error is raised here
        return nodes
    except BaseException:
        for a in actors:
            with contextlib.suppress(Exception):
                ray.kill(a, no_restart=True)
        if owns_pg:
            with contextlib.suppress(Exception):
                ray.util.remove_placement_group(placement_group)
        raise
