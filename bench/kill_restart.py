"""Kill-and-restart: pause runs awaiting approval, SIGKILL the server, restart it,
approve, and check that every run completes with its tool run exactly once.

``python bench/kill_restart.py [--cycles 100] [--runs 3]`` (figures go to
RELIABILITY.md). A shorter version runs in the test suite (tests/store/test_kill.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

APP = Path(__file__).with_name("_kill_app.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    def __init__(self, db: str, log: str) -> None:
        self.db, self.log = db, log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(APP),
                "--port",
                str(self.port),
                "--db",
                self.db,
                "--log",
                self.log,
            ],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def frames(text: str) -> list[dict[str, Any]]:
    return [json.loads(b[6:]) for b in text.split("\n\n") if b.startswith("data: ")]


def post(url: str, thread: str, text: str | None, **extra: Any) -> list[dict[str, Any]]:
    body = {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }
    response = httpx.post(url + "/agui", json=body, timeout=30)
    response.raise_for_status()
    return frames(response.text)


def pause(url: str, thread: str, path: str) -> str:
    events = post(url, thread, f"delete {path}")
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", events[-1]
    return str(outcome["interrupts"][0]["id"])


def approve(url: str, thread: str, interrupt: str) -> str:
    resume = [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}]
    events = post(url, thread, None, resume=resume)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    texts = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    return "".join(texts)


def cycle(server: ServerProcess, runs: int, n: int) -> int:
    """One kill-and-restart cycle; returns how many runs completed."""
    paused = {f"t{n}-{i}": pause(server.url, f"t{n}-{i}", f"f{n}-{i}") for i in range(runs)}
    server.kill()
    server.start()
    done = 0
    for thread, interrupt in paused.items():
        answer = approve(server.url, thread, interrupt)
        if answer == f"Done: deleted f{thread[1:]}":
            done += 1
    return done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "tools.log")
        server = ServerProcess(str(Path(tmp) / "runs.db"), log)
        server.start()
        started = time.monotonic()
        completed = 0
        try:
            for n in range(args.cycles):
                completed += cycle(server, args.runs, n)
        finally:
            server.stop()
        lines = Path(log).read_text().splitlines()
        expected = args.cycles * args.runs
        print(f"cycles: {args.cycles}, paused runs: {expected}, completed: {completed}")
        print(f"tool executions: {len(lines)} (distinct: {len(set(lines))})")
        print(f"wall time: {time.monotonic() - started:.1f}s")
        if completed != expected or len(lines) != expected or len(set(lines)) != expected:
            sys.exit(1)


if __name__ == "__main__":
    main()
