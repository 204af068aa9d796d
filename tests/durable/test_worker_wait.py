"""A call no tool worker takes, on a real Postgres with real ``callwright worker``
processes: it says so to the client and in the log while it waits, fails after
``worker_wait`` with an error the model sees, and a worker started afterwards never runs
it; a worker that takes a call after its deadline answers without running the tool; a
call taken in time is waited for however long it runs; a replica is ready once DBOS runs.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from dbos import DBOS, DBOSClient

from callwright.durable import ToolWorkers
from callwright.durable._crossing import (
    TAKEN_TEXT,
    TOOL_WORKFLOW,
    TOOLS_QUEUE,
    WAITING_TEXT,
    no_worker_text,
)
from callwright.events import Event, ToolCallResult, ToolProgress
from callwright.messages import ToolResultMessage
from callwright.run import Agent
from callwright.server import create_app
from live_server import Server

from ._cluster import Replica, ToolWorker, agui_body, frames, stream
from .worker_agent import make_agent

AGENT = str(Path(__file__).with_name("worker_agent.py")) + ":make_agent"


def worker(database: str, executor_id: str, effects: Path) -> ToolWorker:
    """A worker of the tool-worker tests' agent, started."""
    return ToolWorker(database, executor_id, effects, agent=AGENT).start()


def ran(path: Path, word: str, tag: str) -> list[str]:
    """The side-effect lines ``<word> <tag> ...`` (one per time the tool got there)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in lines if line.startswith(f"{word} {tag} ")]


def web_agent(database: str, worker_wait: float) -> Agent[Any, Any]:
    agent = make_agent()
    ToolWorkers(database, worker_wait=worker_wait).apply(agent.toolbox)
    return agent


async def run(agent: Agent[Any, Any], prompt: str) -> list[Event]:
    return [event async for event in agent.stream(prompt)]


def result_of(events: list[Event]) -> ToolCallResult:
    return next(e for e in events if isinstance(e, ToolCallResult))


def model_saw(agent: Agent[Any, Any]) -> ToolResultMessage:
    seen = agent.model.requests[-1].messages[-1]  # type: ignore[attr-defined]
    assert isinstance(seen, ToolResultMessage)
    return seen


async def test_a_call_no_worker_takes_says_so_fails_and_never_runs_later(
    postgres_url: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    database = postgres_url.fresh_database()
    DBOS.migrate(database)  # what a replica's launch does: DBOS's tables, no worker yet
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    agent = web_agent(database, worker_wait=4.0)
    tag = uuid.uuid4().hex[:8]
    body = agui_body(f"t_{tag}", f'slow {{"seconds": 0.2, "tag": "{tag}"}}', f"r_{tag}")
    with (
        caplog.at_level(logging.WARNING, logger="callwright.durable"),
        Server(create_app(agent)) as server,
    ):
        async with httpx.AsyncClient(timeout=30) as http:
            sent = frames(await stream(http, server.url, body))
    (result,) = [f for f in sent if f["type"] == "TOOL_CALL_RESULT"]
    snapshots = [f for f in sent if f["type"] == "ACTIVITY_SNAPSHOT"]
    waiting = snapshots[0]  # the call's first activity: nothing else reported progress
    assert waiting["content"]["toolCallId"] == result["toolCallId"]
    assert waiting["content"]["text"] == WAITING_TEXT
    assert sent.index(waiting) < sent.index(result)  # seen while it still waited
    expected = no_worker_text(4.0)
    assert expected.startswith("no tool worker took the call within 4 s; start one with ")
    assert result["content"] == expected
    assert (model_saw(agent).content, model_saw(agent).is_error) == (expected, True)
    logged = [r.getMessage() for r in caplog.records if r.name == "callwright.durable"]
    assert [line for line in logged if "has taken it after 3 s" in line] == [
        f"tool slow, call {result['toolCallId']}: no tool worker has taken it after 3 s "
        f"(queue {TOOLS_QUEUE})"
    ]
    withdrawn = f"call {result['toolCallId']}: no tool worker took it within 4 s"
    assert any(withdrawn in line for line in logged)

    # a worker started now takes a call that waits for one, and never the withdrawn one
    after = uuid.uuid4().hex[:8]
    events: list[Event] = []
    stream_of = (
        web_agent(database, worker_wait=60)
        .stream(f'slow {{"seconds": 0.1, "tag": "{after}"}}')
        .events()
    )
    async for event in stream_of:
        events.append(event)
        if isinstance(event, ToolProgress) and event.text == WAITING_TEXT:
            break
    late = await asyncio.to_thread(worker, database, "late-worker", effects)
    try:
        events += [event async for event in stream_of]
    finally:
        late.stop()
    assert result_of(events).output == f"{after} finished"
    texts = [e.text for e in events if isinstance(e, ToolProgress)]
    # "taken" shows when the wait's next look comes before the tool's own progress
    assert [t for t in texts if t != TAKEN_TEXT] == [WAITING_TEXT, "step 1/1"]
    assert texts.count(TAKEN_TEXT) <= 1
    assert len(ran(effects, "start", after)) == 1
    assert ran(effects, "start", tag) == []
    client = DBOSClient(system_database_url=database)
    try:
        calls = client.list_workflows(name=TOOL_WORKFLOW, load_input=False, load_output=False)
    finally:
        client.destroy()
    assert sorted(w.status for w in calls) == ["CANCELLED", "SUCCESS"]


@pytest.fixture(scope="module")
def live(postgres_url: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A database with one worker running."""
    database = postgres_url.fresh_database()
    effects = tmp_path_factory.mktemp("wait") / "side_effects.txt"
    running = worker(database, "wait-worker", effects)
    try:
        yield database, effects
    finally:
        running.stop()


async def test_a_call_taken_after_its_deadline_is_not_run(
    live: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``worker_wait=0``: the deadline has passed when the worker takes the call (the race
    where a worker takes it just as the web side gives up): the worker says so, and the
    tool never starts."""
    database, effects = live
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    agent = web_agent(database, worker_wait=0)
    tag = uuid.uuid4().hex[:8]
    result = result_of(await run(agent, f'slow {{"seconds": 0.1, "tag": "{tag}"}}'))
    assert (result.state, result.content) == ("output-error", no_worker_text(0))
    assert ran(effects, "start", tag) == []


async def test_a_call_taken_in_time_is_waited_for_past_the_wait(
    live: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, effects = live
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    agent = web_agent(database, worker_wait=1.0)
    tag = uuid.uuid4().hex[:8]
    events = await run(agent, f'slow {{"seconds": 3, "tag": "{tag}"}}')
    assert result_of(events).output == f"{tag} finished"
    assert len(ran(effects, "start", tag)) == len(ran(effects, "end", tag)) == 1


def test_a_replica_is_ready_once_dbos_runs(postgres_url: Any, tmp_path: Path) -> None:
    database = postgres_url.fresh_database()
    replica = Replica(database, "ready-replica", tmp_path / "side_effects.txt").start()
    try:
        response = httpx.get(replica.url + "/readyz", timeout=30)
    finally:
        replica.stop()
    checks = {"journal": "ok", "model": "ok", "durable": "ok"}
    assert (response.status_code, response.json()) == (200, {"status": "ready", "checks": checks})


def test_a_negative_wait_is_refused() -> None:
    with pytest.raises(ValueError, match="worker_wait"):
        ToolWorkers("sqlite:///unused.sqlite", worker_wait=-1)


async def test_serve_worker_wait_bounds_a_call_no_worker_takes(
    postgres_url: Any, tmp_path: Path
) -> None:
    """``serve --worker-wait 2``: a replica's call of a tool marked ``on_workers``, with no
    worker alive, ends with the no-worker error after about two seconds (not the default
    minute), and the model sees it."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    replica = Replica(database, "wait-replica", effects, options=("--worker-wait", "2")).start()
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            body = agui_body(uuid.uuid4().hex, "remote 0.1 w1", uuid.uuid4().hex)
            sent = frames(await stream(http, replica.url, body))
    finally:
        replica.stop()
    results = [f for f in sent if f["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1
    assert no_worker_text(2.0) in results[0]["content"]
    assert not ran(effects, "start", "w1")
