"""Stopping one call through another replica: two real replicas of an application with
users (``app_with_users.py``) on one Postgres, the real npm clients streaming from
replica A while every cancel request goes to replica B (a load balancer's choice).

Of three parallel calls, the one the owner cancels through B ends ``Cancelled:
cancelled by the user`` on A's stream, the other two finish, and the model's answer
names all three; on B too, a finished call gets 409, an unknown call and another
principal's run 404, and a call is asked to stop once however many requests arrive.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from _node import run_driver
from _postgres import PostgresUrl
from durable._cluster import (
    Replica,
    ToolWorker,
    agui_body,
    frames,
    ran_in,
    side_effects,
    until_ended,
)

APP = str(Path(__file__).with_name("app_with_users.py"))
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
CANCELLED_TEXT = "Cancelled: cancelled by the user"
ANSWER = f"Done: search={CANCELLED_TEXT}; lookup=value of a; lookup=value of b"


@dataclass
class UsersReplica(Replica):
    """A replica of the application with users."""

    def command(self) -> list[str]:
        return [sys.executable, APP, self.database, self.executor_id, str(self.port)]


@pytest.fixture(scope="module")
def pair(
    postgres_url: PostgresUrl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[UsersReplica, UsersReplica]]:
    database = postgres_url.fresh_database()
    effects = tmp_path_factory.mktemp("cancel") / "side_effects.txt"
    a = UsersReplica(database, "cancel-a", effects)
    b = UsersReplica(database, "cancel-b", effects)
    try:
        a.start()
        b.start()
        yield a, b
    except BaseException:
        for replica in (a, b):
            print(f"--- {replica.executor_id}\n{replica.log()}")
        raise
    finally:
        a.stop()
        b.stop()


def drive(client: str, stream_url: str, cancel_url: str) -> dict[str, Any]:
    return run_driver("drive_cancel.mjs", client, stream_url, cancel_url, env=_headers())


def _headers() -> dict[str, str]:
    return {"OWNER_HEADERS": json.dumps(ALICE), "OTHER_HEADERS": json.dumps(BOB)}


def assert_refused_and_cancelled_on_b(report: dict[str, Any]) -> None:
    during = report["during"]
    assert during is not None, report
    assert during["finished"]["status"] == 409, during
    assert during["finished"]["body"]["error"]["code"] == "call_finished"
    assert during["unknown"]["status"] == 404
    assert during["unknown"]["body"]["error"]["code"] == "unknown_call"
    assert during["otherPrincipal"]["status"] == 404
    assert during["otherPrincipal"]["body"] == during["unknown"]["body"]  # nothing to probe
    assert during["owner"]["status"] == 202, during
    assert during["owner"]["body"]["cancelled"] is True
    # the run is over: B reads in the journal that the call finished
    assert report["after"]["status"] == 409, report["after"]
    assert report["after"]["body"]["error"]["code"] == "call_finished"


def assert_stopped_on_a(a: UsersReplica, run_id: str) -> None:
    """The search tool saw its token in A's process (B never ran it)."""
    lines = a.side_effects.read_text().splitlines()
    stopped = [line for line in lines if line.startswith(f"cancelled search {run_id} ")]
    assert len(stopped) == 1, side_effects(a.side_effects)
    assert a.process is not None and stopped[0].endswith(f"pid={a.process.pid}")


@pytest.mark.parametrize("client", ["agui1", "agui0"])
def test_agui_client_on_a_sees_the_call_cancelled_through_b(
    pair: tuple[UsersReplica, UsersReplica], client: str
) -> None:
    a, b = pair
    report = drive(client, a.url, b.url)
    assert report["errors"] == [], report
    assert_refused_and_cancelled_on_b(report)
    results = {e["toolCallId"]: e for e in report["results"]}
    assert len(results) == 3
    stopped = [e for e in results.values() if e["content"] == CANCELLED_TEXT]
    assert len(stopped) == 1
    assert stopped[0]["metadata"]["callwright"]["errorKind"] == "cancelled"
    others = sorted(e["content"] for e in results.values() if e is not stopped[0])
    assert others == ["value of a", "value of b"]
    final = [m for m in report["messages"] if m["role"] == "assistant"][-1]
    assert final["content"] == ANSWER  # the model got all three results
    assert_stopped_on_a(a, report["runId"])


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_ai_sdk_client_on_a_sees_the_call_cancelled_through_b(
    pair: tuple[UsersReplica, UsersReplica], client: str
) -> None:
    a, b = pair
    report = drive(client, a.url, b.url)
    assert report["errors"] == [] and report["status"] == "ready", report
    assert_refused_and_cancelled_on_b(report)
    parts = {p["toolCallId"]: p for p in report["parts"]}
    assert len(parts) == 3
    stopped = [p for p in parts.values() if p["type"] == "tool-search"]
    assert stopped[0]["state"] == "output-error"
    assert stopped[0]["errorText"] == CANCELLED_TEXT
    lookups = [p for p in parts.values() if p["type"] == "tool-lookup"]
    assert [p["state"] for p in lookups] == ["output-available"] * 2
    assert report["text"] == ANSWER
    assert_stopped_on_a(a, report["runId"])


async def test_a_flood_of_cancels_through_b_stops_the_call_once(
    pair: tuple[UsersReplica, UsersReplica],
) -> None:
    """50 concurrent cancels of one call through B while A streams: one 202, the rest
    409; the call is stopped once and the run finishes as after one cancel."""
    a, b = pair
    tag = uuid.uuid4().hex[:8]
    run_id = f"r-{tag}"
    body = agui_body(f"t-{tag}", "three", run_id)
    seen: list[dict[str, Any]] = []
    statuses: list[int] = []
    async with (
        httpx.AsyncClient(timeout=60, headers=ALICE) as http,
        http.stream("POST", a.url + "/agui", json=body) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            got = frames(line + "\n\n")
            seen.extend(got)
            if any(f["type"] == "TOOL_CALL_RESULT" and f["content"] == "value of a" for f in got):
                search = next(
                    f["toolCallId"]
                    for f in seen
                    if f["type"] == "TOOL_CALL_START" and f["toolCallName"] == "search"
                )
                path = f"{b.url}/runs/{run_id}/calls/{search}/cancel"
                answers = await asyncio.gather(*(http.post(path) for _ in range(50)))
                statuses = [answer.status_code for answer in answers]
                refused = {x.json()["error"]["code"] for x in answers if x.status_code != 202}
                assert refused <= {"call_finished"}, refused
    assert statuses.count(202) == 1 and set(statuses) <= {202, 409}, statuses
    results = [f["content"] for f in seen if f["type"] == "TOOL_CALL_RESULT"]
    assert sorted(results) == sorted([CANCELLED_TEXT, "value of a", "value of b"])
    assert seen[-1]["type"] == "RUN_FINISHED"
    assert_stopped_on_a(a, run_id)


@pytest.fixture
def with_worker(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[list[Any]]:
    """Two ``callwright serve`` replicas (no users) and a ``callwright worker``."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "effects.txt"
    processes: list[Any] = [Replica(database, f"served-{n}", effects) for n in "ab"]
    processes.append(ToolWorker(database, "served-w", effects))
    try:
        for process in processes:
            process.start()
        yield processes
    finally:
        for process in processes:
            process.stop()


@pytest.fixture
def doomed_pair(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[list[UsersReplica]]:
    """Two replicas of their own: the test kills one."""
    database = postgres_url.fresh_database()
    replicas = [UsersReplica(database, f"doomed-{n}", tmp_path / "effects.txt") for n in "ab"]
    try:
        for replica in replicas:
            replica.start()
        yield replicas
    except BaseException:
        for replica in replicas:
            print(f"--- {replica.executor_id}\n{replica.log()}")
        raise
    finally:
        for replica in replicas:
            replica.stop()


async def _until_started(effects: Path, line: str, times: int = 1) -> None:
    deadline = time.monotonic() + 60
    while side_effects(effects).count(line) < times:
        assert time.monotonic() < deadline, side_effects(effects)
        await asyncio.sleep(0.05)


async def _cancel(http: httpx.AsyncClient, url: str, run_id: str, call_id: str) -> int:
    response = await http.post(f"{url}/runs/{run_id}/calls/{call_id}/cancel")
    return response.status_code


def _result_of(events: list[dict[str, Any]], call_id: str) -> str:
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call_id]
    assert len(results) == 1, results
    return str(results[0]["content"])


async def test_a_call_on_a_tool_worker_is_cancelled_through_b(with_worker: list[Any]) -> None:
    """The run streams on A, its call runs on a worker, the cancel reaches B: A stops the
    call through the worker's own path, and the run goes on."""
    a, b, worker = with_worker
    tag = f"w{uuid.uuid4().hex[:6]}"
    run_id = f"r-{tag}"
    async with httpx.AsyncClient(timeout=60, headers=ALICE) as http:
        streaming = asyncio.create_task(
            http.post(a.url + "/agui", json=agui_body(f"t-{tag}", f"remote 30 {tag}", run_id))
        )
        await _until_started(a.side_effects, f"start {tag}")
        assert await _cancel(http, b.url, run_id, f"call_{tag}") == 202
        response = await streaming
    events = frames(response.text)
    assert _result_of(events, f"call_{tag}") == CANCELLED_TEXT
    assert events[-1]["type"] == "RUN_FINISHED"
    assert f"end {tag}" not in side_effects(a.side_effects)  # the worker's tool stopped
    assert ran_in(a.side_effects, tag) == [worker.pid]


async def test_a_call_of_a_run_continued_on_b_is_cancelled_there(
    doomed_pair: list[UsersReplica],
) -> None:
    """A dies mid-call; B continues the run (the idempotent tool runs again there) and a
    cancel that reaches B stops the call of the continued run."""
    a, b = doomed_pair
    tag = f"c{uuid.uuid4().hex[:6]}"
    run_id = f"r-{tag}"
    async with httpx.AsyncClient(timeout=60, headers=ALICE) as http:
        streaming = asyncio.create_task(
            stream_until_broken(http, a.url, agui_body(f"t-{tag}", f"idem 30 {tag}", run_id))
        )
        await _until_started(a.side_effects, f"start {tag}")
        a.kill()
        await streaming
        await _until_started(b.side_effects, f"start {tag}", times=2)
        assert await _cancel(http, b.url, run_id, f"call_{tag}") == 202
        events = await until_ended(http, b.url, run_id)
        assert await _cancel(http, b.url, run_id, f"call_{tag}") == 409  # finished now
    assert _result_of(events, f"call_{tag}") == CANCELLED_TEXT
    assert events[-1]["type"] == "RUN_FINISHED"
    assert b.process is not None and ran_in(b.side_effects, tag)[-1] == b.process.pid
    assert f"end {tag}" not in side_effects(b.side_effects)


async def stream_until_broken(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> None:
    """Read a run's stream until its replica dies under it."""
    try:
        async with http.stream("POST", url + "/agui", json=body) as response:
            async for _ in response.aiter_bytes():
                pass
    except httpx.HTTPError:
        pass
