"""A real server process, SIGKILLed and restarted: paused runs complete, nothing runs
twice, and a tool that was running when the process died is reported as interrupted.

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


def test_a_tool_running_at_the_crash_is_reported_interrupted_not_rerun(server: Any) -> None:
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
    assert text.startswith("Done: Interrupted: the server stopped while this tool was running")
    assert tool_log(server) == ["slow start job1"]  # not run again
