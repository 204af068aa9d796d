"""A real server process, SIGKILLed and restarted: paused runs complete, nothing runs
twice, and a tool that was running when the process died is reported in doubt.

The 100-cycle version is ``python bench/kill_restart.py`` (RELIABILITY.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kill_restart.py"
spec = importlib.util.spec_from_file_location("kill_restart", BENCH)
assert spec is not None and spec.loader is not None
kill_restart: Any = importlib.util.module_from_spec(spec)
sys.modules["kill_restart"] = kill_restart
spec.loader.exec_module(kill_restart)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Any]:
    process = kill_restart.ServerProcess(str(tmp_path / "runs.db"), str(tmp_path / "tools.log"))
    process.start()
    yield process
    process.stop()


def tool_log(server: Any) -> list[str]:
    path = Path(server.log)
    return path.read_text().splitlines() if path.exists() else []


def test_paused_runs_survive_sigkill(server: Any) -> None:
    completed = sum(kill_restart.cycle(server, 2, n) for n in range(3))
    assert completed == 6
    assert sorted(tool_log(server)) == sorted(
        f"delete f{n}-{i}" for n in range(3) for i in range(2)
    )


def test_a_tool_running_at_the_crash_is_reported_in_doubt_not_rerun(server: Any) -> None:
    import threading

    import httpx

    def start_slow() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server dies under this request
            kill_restart.post(server.url, "crash", "slow job1")

    thread = threading.Thread(target=start_slow)
    thread.start()
    deadline = time.monotonic() + 10
    while "slow start job1" not in tool_log(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tool_log(server) == ["slow start job1"]
    server.kill()
    thread.join(10)
    server.start()
    events = kill_restart.post(server.url, "crash", None)
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("Done: In doubt: this call started but the server stopped")
    assert tool_log(server) == ["slow start job1"]  # not run again


def replay(url: str, run_id: str) -> list[dict[str, Any]]:
    import httpx

    response = httpx.get(f"{url}/runs/{run_id}/events", timeout=15)  # a hang fails here
    assert response.status_code == 200, response.text
    return kill_restart.frames(response.text)


def start_slow(server: Any, thread: str, text: str, run_id: str) -> Any:
    """POST ``text`` in a thread of ours (the server may die under it)."""
    import threading

    worker = threading.Thread(
        target=kill_restart._post_quietly_with, args=(server.url, thread, text, run_id)
    )
    worker.start()
    return worker


def test_replay_of_a_run_killed_mid_tool_ends_with_an_error_event(server: Any) -> None:
    worker = start_slow(server, "killed", "slow job2", "run-killed")
    kill_restart.running_tool_pid(server, "job2")
    server.kill()
    worker.join(10)
    server.start()  # its start-up recovery settles the run and closes its segment
    events = replay(server.url, "run-killed")
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "interrupted"


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Any]:
    process = kill_restart.ServerProcess(
        str(tmp_path / "runs.db"), str(tmp_path / "tools.log"), workers=2
    )
    process.start()
    yield process
    process.stop()


def test_one_of_two_workers_killed_while_the_other_keeps_serving(workers: Any) -> None:
    """callwright serve --processes 2 on one journal: the worker running a tool is SIGKILLed;
    the other answers the paused runs at once (each tool ran once), settles the killed
    worker's run as interrupted, and its replay ends with an error event."""
    completed = sum(kill_restart.worker_cycle(workers, 2, n) for n in range(2))
    assert completed == 4
    deletes = [line for line in tool_log(workers) if line.startswith("delete")]
    assert sorted(deletes) == sorted(f"delete f{n}-{i}" for n in range(2) for i in range(2))
    assert [line for line in tool_log(workers) if line.startswith("slow end")] == []
    worker = start_slow(workers, "killed-again", "slow job3", "run-killed-again")
    workers.kill_worker(kill_restart.running_tool_pid(workers, "job3"))
    worker.join(10)
    events = replay(workers.url, "run-killed-again")
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "interrupted"


def test_a_restarted_process_does_not_settle_a_live_siblings_run(tmp_path: Path) -> None:
    """Two processes on one journal: one restarts (its start-up recovery runs) while the
    other runs a tool; the other's run is not touched and finishes normally."""
    db, log = str(tmp_path / "runs.db"), str(tmp_path / "tools.log")
    first = kill_restart.ServerProcess(db, log)
    second = kill_restart.ServerProcess(db, log)
    first.start()
    second.start()
    try:
        worker = start_slow(second, "sibling", "slow job4 3", "run-sibling")
        kill_restart.running_tool_pid(second, "job4")
        first.kill()
        first.start()
        worker.join(30)
        events = replay(first.url, "run-sibling")  # from the other process: it follows the log
        text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "Done: finished"
        assert events[-1]["type"] == "RUN_FINISHED"
        assert "slow end job4" in tool_log(second)
    finally:
        first.stop()
        second.stop()
