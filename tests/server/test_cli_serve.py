"""A real ``callwright serve``: its log lines on stderr (``--log-format text|json``, the
server's own lines in the same format, in every process of ``--processes N``), and its
banner on stdout (the journal a path or ``sqlite:///`` names)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

AGENT_FILE = """
from callwright import Agent
from callwright.models import ScriptedModel


def make_agent():
    return Agent(ScriptedModel(lambda request: ["hi"], record=False))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agui_body(run_id: str) -> dict[str, Any]:
    return {
        "threadId": f"thread-{run_id}",
        "runId": run_id,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "hello"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def serve(tmp_path: Path, *options: str, runs: int = 1) -> tuple[str, str, list[str]]:
    """Start ``callwright serve`` with ``options``, make ``runs`` AG-UI requests, stop it
    (SIGTERM); return its stdout, its stderr and the run ids."""
    (tmp_path / "scripted_agent.py").write_text(AGENT_FILE)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port),
             "--agent", "scripted_agent:make_agent", *options],
            stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "COLUMNS": "300"},
        )  # fmt: skip
    run_ids = [f"run-{uuid.uuid4().hex[:8]}" for _ in range(runs)]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, err.read_text()
                assert time.monotonic() < deadline, "callwright serve did not come up"
                time.sleep(0.1)
        for run_id in run_ids:
            reply = httpx.post(url + "/agui", json=agui_body(run_id), timeout=30)
            assert reply.status_code == 200 and "RUN_FINISHED" in reply.text, reply.text
    finally:
        process.terminate()
        process.wait(timeout=30)
    return out.read_text(), err.read_text(), run_ids


def test_text_logs_show_the_run_line_and_the_servers_own(tmp_path: Path) -> None:
    stdout, stderr, (run_id,) = serve(tmp_path, "--journal", "runs.db")
    assert "  run journal: SQLite runs.db (paused runs survive a restart)" in stdout.splitlines()
    assert "  web processes: 1" in stdout.splitlines()
    lines = stderr.splitlines()
    (run_line,) = [line for line in lines if " callwright.run: " in line]
    assert f" INFO    callwright.run: run {run_id} completed in " in run_line
    assert run_line.endswith(f"(thread thread-{run_id})")
    assert any(" INFO    uvicorn.error: Application startup complete." in x for x in lines)
    assert any(
        " uvicorn.access: 127.0.0.1:" in x and '"POST /agui HTTP/1.1" 200' in x for x in lines
    )
    assert (tmp_path / "runs.db").is_file()


def test_json_logs_are_one_object_a_line_with_the_runs_fields(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    stdout, stderr, (run_id,) = serve(
        tmp_path, "--journal", f"sqlite:///{journal}", "--log-format", "json"
    )
    assert f"  run journal: SQLite {journal} (paused runs survive a restart)" in stdout
    records = [json.loads(line) for line in stderr.splitlines()]  # every line is JSON
    (run,) = [r for r in records if r["logger"] == "callwright.run"]
    assert run["level"] == "info" and run["message"].startswith(f"run {run_id} completed in ")
    assert (run["run_id"], run["thread_id"], run["status"]) == (
        run_id,
        f"thread-{run_id}",
        "completed",
    )
    assert isinstance(run["duration_ms"], float) and run["time"].endswith("+00:00")
    assert {"uvicorn.error", "uvicorn.access"} <= {r["logger"] for r in records}
    assert journal.is_file()


def test_every_process_logs_the_same_way(tmp_path: Path) -> None:
    _, stderr, run_ids = serve(
        tmp_path, "--journal", "runs.db", "--processes", "2", "--log-format", "json", runs=4
    )
    records = [json.loads(line) for line in stderr.splitlines()]
    started = [r for r in records if r["message"].startswith("Started server process")]
    assert len({r["pid"] for r in started}) == 2
    runs = [r for r in records if r["logger"] == "callwright.run"]
    assert sorted(r["run_id"] for r in runs) == sorted(run_ids)
    assert {r["pid"] for r in runs} <= {r["pid"] for r in started}


def test_a_higher_log_level_hides_the_info_lines(tmp_path: Path) -> None:
    _, stderr, _ = serve(tmp_path, "--log-level", "warning")
    assert "callwright.run" not in stderr and "uvicorn" not in stderr, stderr
