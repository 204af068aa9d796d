"""Real ``callwright serve`` replicas on one Postgres, and AG-UI clients for them.

Each replica is a process on a free 127.0.0.1 port, started with the exact command
DEPLOY.md gives (``callwright serve --journal … --executor-id …``); tests kill them
with SIGKILL like a crashed machine.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx

from _sse import frames

AGENT = str(Path(__file__).with_name("agent.py")) + ":make_agent"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Process:
    """What stops a replica or a worker: SIGKILL like a crashed machine, or SIGTERM."""

    process: subprocess.Popen[bytes] | None
    stop_seconds: ClassVar[float] = 15

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(self.stop_seconds)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Replica(_Process):
    """One ``callwright serve`` process."""

    database: str
    executor_id: str
    side_effects: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    options: tuple[str, ...] = ()
    """More ``serve`` options."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "callwright.cli", "serve",
            "--agent", AGENT,
            "--journal", self.database,
            "--executor-id", self.executor_id,
            "--port", str(self.port),
            "--log-level", "warning",
            *self.options,
        ]  # fmt: skip

    def start(self) -> Replica:
        env = {**os.environ, "SIDE_EFFECTS": str(self.side_effects)}
        log = open(self.side_effects.with_name(f"{self.executor_id}.log"), "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            self.command(), env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica {self.executor_id} exited: {self.log()}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"replica {self.executor_id} did not start: {self.log()}")

    def log(self) -> str:
        path = self.side_effects.with_name(f"{self.executor_id}.log")
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


@dataclass
class ToolWorker(_Process):
    """One ``callwright worker`` process, started with the command DEPLOY.md gives."""

    stop_seconds: ClassVar[float] = 30

    database: str
    executor_id: str
    side_effects: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    agent: str = AGENT
    """The ``--agent`` it runs the tools of (the replicas' own)."""
    concurrency: int = 8

    @property
    def log(self) -> Path:
        return self.side_effects.with_name(f"{self.executor_id}.log")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> ToolWorker:
        command = [
            sys.executable, "-m", "callwright.cli", "worker",
            "--journal", self.database,
            "--agent", self.agent,
            "--executor-id", self.executor_id,
            "--concurrency", str(self.concurrency),
        ]  # fmt: skip
        env = {**os.environ, "SIDE_EFFECTS": str(self.side_effects)}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + 60
        while b"callwright worker ready" not in self.log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.executor_id}: {self.log.read_text()}")
            time.sleep(0.1)
        return self


def agui_body(thread: str, text: str | None, run_id: str, **extra: Any) -> dict[str, Any]:
    messages = [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else []
    return {
        "threadId": thread,
        "runId": run_id,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def approve(interrupt: str, approved: bool = True) -> dict[str, Any]:
    payload = {"approved": approved}
    return {"resume": [{"interruptId": interrupt, "status": "resolved", "payload": payload}]}


def side_effects(path: Path) -> list[str]:
    """The tools' notes, ``<word> <tag>`` each (the process id cut off)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.rsplit(" pid=", 1)[0] for line in lines]


def ran_in(path: Path, tag: str) -> list[int]:
    """The process ids in which the tool of ``tag`` started, once per start."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [int(line.rsplit("=", 1)[1]) for line in lines if line.startswith(f"start {tag} ")]


# --- clients ---------------------------------------------------------------------------


async def stream(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> str:
    """POST a run and read its stream until it ends or the connection breaks."""
    text = ""
    try:
        async with http.stream("POST", url + "/agui", json=body) as response:
            assert response.status_code == 200, await response.aread()
            async for chunk in response.aiter_text():
                text += chunk
    except httpx.HTTPError:
        pass  # the replica died under us
    return text


async def replay(http: httpx.AsyncClient, url: str, run_id: str) -> list[dict[str, Any]]:
    """The run's log as another replica serves it; what arrived in 3 s if it is still live."""
    text = ""
    try:
        async with http.stream(
            "GET", f"{url}/runs/{run_id}/events", params={"after": 0}, timeout=3
        ) as response:
            assert response.status_code == 200, await response.aread()
            async for chunk in response.aiter_text():
                text += chunk
    except httpx.ReadTimeout:
        pass
    return frames(text)


def until_ended_sync(
    url: str, run_id: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """``until_ended`` for a test without an event loop: the run's replay from ``url``
    once it reaches its end."""
    deadline = time.monotonic() + 90
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            with httpx.stream(
                "GET", f"{url}/runs/{run_id}/events", headers=headers, timeout=3
            ) as response:
                assert response.status_code == 200, response.read()
                text = "".join(response.iter_text())
        except httpx.ReadTimeout:
            text = ""
        events = frames(text)
        if ended(events):
            return events
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end: {[e['type'] for e in events][-8:]}")


def ended(events: list[dict[str, Any]]) -> bool:
    return bool(events) and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")


async def until_started(effects: Path, tags: list[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = side_effects(effects)
        if all(f"start {t}" in lines for t in tags):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the tools did not start: {side_effects(effects)}")


async def until_ended(http: httpx.AsyncClient, url: str, run: str) -> list[dict[str, Any]]:
    """The run's events as another replica replays them, once they reach the end."""
    deadline = time.monotonic() + 90
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        events = await replay(http, url, run)
        if ended(events):
            return events
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run} did not continue: {[e['type'] for e in events][-8:]}")
