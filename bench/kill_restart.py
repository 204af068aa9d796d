"""Kill-and-restart: pause runs awaiting approval, SIGKILL the server, restart it,
approve, and check that every run completes with its tool run exactly once.

``python bench/kill_restart.py [--cycles 100] [--runs 3]`` (figures go to
RELIABILITY.md). ``--workers 2`` serves with ``callwright serve --processes 2`` on one
journal and, each cycle, kills the worker that holds a running tool while the other
keeps serving: the paused runs are approved at once (on whichever worker answers),
the killed worker's run is settled as interrupted, and uvicorn starts a new worker.
A shorter version runs in the test suite (tests/store/test_kill.py).
"""

from __future__ import annotations

import argparse
import contextlib
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
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """The kill app as a process: ``bench/_kill_app.py`` alone, or ``callwright serve
    --processes N`` serving its agent (a uvicorn supervisor and N worker processes)."""

    def __init__(self, db: str, log: str, workers: int = 1) -> None:
        self.db, self.log, self.workers = db, log, workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        if self.workers == 1:
            return [
                sys.executable, str(APP), "--port", str(self.port), "--db", self.db,
                "--log", self.log,
            ]  # fmt: skip
        return [
            sys.executable, "-m", "callwright.cli", "serve", "--agent",
            f"{APP}:make_agent", "--journal", self.db, "--processes", str(self.workers),
            "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip

    def start(self) -> None:
        env = {**os.environ, "CALLWRIGHT_KILL_LOG": self.log}
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=ROOT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}")
            try:
                httpx.get(self.url + "/", timeout=1)
                if len(self.worker_pids()) >= self.workers or self.workers == 1:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def worker_pids(self) -> list[int]:
        """The worker processes' ids (Linux: the supervisor's children)."""
        assert self.proc is not None
        if self.workers == 1:
            return [self.proc.pid]
        try:
            text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill(self) -> None:
        """SIGKILL the server (all of it: with workers, the supervisor and every worker)."""
        assert self.proc is not None
        if self.workers > 1:
            os.killpg(self.proc.pid, signal.SIGKILL)
        else:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def kill_worker(self, pid: int) -> None:
        """SIGKILL one worker; the other keeps serving and uvicorn starts a new one."""
        os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if self.workers > 1:
                os.killpg(self.proc.pid, signal.SIGTERM)
            else:
                self.proc.terminate()
            self.proc.wait(20)


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


def running_tool_pid(server: ServerProcess, name: str, timeout: float = 10) -> int:
    """The worker whose tool ``slow <name>`` has started (from the log's ``.pid`` file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = Path(server.log + ".pid")
        for line in path.read_text().splitlines() if path.exists() else []:
            if line.startswith(f"slow start {name} "):
                return int(line.rsplit(" ", 1)[1])
        time.sleep(0.05)
    raise RuntimeError(f"slow {name} did not start")


def worker_cycle(server: ServerProcess, runs: int, n: int) -> int:
    """Two workers: pause runs, start a tool, SIGKILL the worker running it while the
    other keeps serving; approve at once, and continue the killed run's thread. Returns
    how many paused runs completed (the killed run must come back as interrupted)."""
    import threading

    paused = {f"t{n}-{i}": pause(server.url, f"t{n}-{i}", f"f{n}-{i}") for i in range(runs)}
    crash = f"crash{n}"
    thread = threading.Thread(target=_post_quietly, args=(server.url, crash, f"slow {crash}"))
    thread.start()
    server.kill_worker(running_tool_pid(server, crash))
    thread.join(30)
    done = 0
    for thread_id, interrupt in paused.items():  # served by the surviving worker
        if approve(server.url, thread_id, interrupt) == f"Done: deleted f{thread_id[1:]}":
            done += 1
    text = "".join(
        e["delta"] for e in post(server.url, crash, None) if e["type"] == "TEXT_MESSAGE_CONTENT"
    )
    if not text.startswith("Done: In doubt"):
        raise AssertionError(f"the killed worker's call was not reported in doubt: {text}")
    return done


def _post_quietly(url: str, thread: str, text: str) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the worker serving it was killed
        post(url, thread, text)


def _post_quietly_with(url: str, thread: str, text: str, run_id: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        post(url, thread, text, runId=run_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, default=1, help="2: kill one worker per cycle, not the server"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "tools.log")
        server = ServerProcess(str(Path(tmp) / "runs.db"), log, args.workers)
        server.start()
        started = time.monotonic()
        completed = 0
        try:
            for n in range(args.cycles):
                if args.workers > 1:
                    completed += worker_cycle(server, args.runs, n)
                else:
                    completed += cycle(server, args.runs, n)
        finally:
            server.stop()
        lines = [line for line in Path(log).read_text().splitlines() if line.startswith("delete")]
        expected = args.cycles * args.runs
        print(f"cycles: {args.cycles}, paused runs: {expected}, completed: {completed}")
        print(f"tool executions: {len(lines)} (distinct: {len(set(lines))})")
        if args.workers > 1:
            print(f"killed workers: {args.cycles}, their runs settled as interrupted: all")
        print(f"wall time: {time.monotonic() - started:.1f}s")
        if completed != expected or len(lines) != expected or len(set(lines)) != expected:
            sys.exit(1)


if __name__ == "__main__":
    main()
