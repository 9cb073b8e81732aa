"""Fixtures: a real trajectory-stream server (runtime/stream/internal/devserver, the Go WebSocket endpoint with
the synthetic runner) started as a subprocess; the tests talk to it over a real socket."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def devserver_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The devserver binary: $AGENTRT_DEVSERVER, or built with go from this checkout."""
    path = os.environ.get("AGENTRT_DEVSERVER")
    if path:
        return path
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: set AGENTRT_DEVSERVER to a built runtime/stream/internal/devserver")
    out = tmp_path_factory.mktemp("bin") / "devserver"
    subprocess.run([go, "build", "-o", str(out), "./runtime/stream/internal/devserver"], cwd=REPO, check=True)
    return str(out)


class DevServer:
    def __init__(self, binary: str, spool: pathlib.Path, args: list[str]):
        self.binary, self.spool, self.args = binary, spool, args
        self.proc: subprocess.Popen | None = None
        self.addr = "127.0.0.1:0"
        self.url = ""

    def start(self) -> "DevServer":
        self.proc = subprocess.Popen(
            [self.binary, "-addr", self.addr, "-spool", str(self.spool), *self.args],
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.proc.kill()
            raise RuntimeError(f"devserver did not start: {line!r}")
        self.url = line.removeprefix("listening ")
        self.addr = self.url.removeprefix("ws://").split("/")[0]  # restarts keep the port
        return self

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def devserver(devserver_bin: str, tmp_path: pathlib.Path):
    """A factory: devserver(*args) starts a server on a fresh spool; all are stopped after the test."""
    started: list[DevServer] = []

    def start(*args: str) -> DevServer:
        s = DevServer(devserver_bin, tmp_path / f"spool{len(started)}", list(args)).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
