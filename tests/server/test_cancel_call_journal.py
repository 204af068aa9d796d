"""Stopping one call through another server of the same SQLite journal (two apps on one
file, as two processes behind a load balancer would be): the request is checked in the
journal and recorded there, and the server streaming the run stops the call within
``ServerLimits.cancel_poll_seconds``. Refusals are the same as on the streaming server;
a finished call of an ended run is 409 (the journal knows it finished)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import ServerLimits, create_app
from callwright.store import SQLiteJournal
from callwright.store._cancels import CancelRequests, Verdict
from live_server import Server

TOKENS = {"Bearer alice-0123456789abcdef": "alice", "Bearer bob-0123456789abcdef": "bob"}
ALICE = {"authorization": "Bearer alice-0123456789abcdef"}
BOB = {"authorization": "Bearer bob-0123456789abcdef"}
CANCELLED_TEXT = "Cancelled: cancelled by the user"
POLL = 0.2


@tool
async def search(query: str, ctx: ToolContext) -> str:
    """Search slowly: runs until its call is cancelled (at most 20 s)."""
    try:
        await asyncio.wait_for(ctx.cancelled(), 20)
    except TimeoutError:
        return "never cancelled"
    ctx.raise_if_cancelled()
    return "unreachable"


@tool
async def lookup(key: str) -> str:
    """Look a key up at once."""
    return f"value of {key}"


def turn(request: ModelRequest) -> Any:
    if isinstance(request.messages[-1], UserMessage):
        tag = uuid.uuid4().hex[:8]
        return [
            call("search", {"query": "slow"}, id=f"call_s_{tag}"),
            call("lookup", {"key": "a"}, id=f"call_a_{tag}"),
        ]
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return ["Done: " + "; ".join(f"{m.tool_name}={m.content}" for m in results[-2:])]


def authenticate(request: Request) -> str | None:
    return TOKENS.get(request.headers.get("authorization", ""))


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    path = str(tmp_path / "runs.db")
    journals = [SQLiteJournal(path), SQLiteJournal(path)]
    limits = ServerLimits(cancel_poll_seconds=POLL)
    apps = [
        create_app(
            Agent(ScriptedModel(turn), [search, lookup], cancel_grace=2),
            journal=journal,
            authenticate=authenticate,
            limits=limits,
        )
        for journal in journals
    ]
    with Server(apps[0]) as a, Server(apps[1]) as b:
        yield a, b
    for journal in journals:
        journal.close()


async def test_a_cancel_through_the_other_server_stops_the_call(two: tuple[Server, Server]) -> None:
    a, b = two
    run_id = f"run_{uuid.uuid4().hex}"
    body = {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": run_id,
        "messages": [{"id": "u1", "role": "user", "content": "two"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    seen: list[dict[str, Any]] = []
    answers: dict[str, httpx.Response] = {}
    asked_at = stopped_at = 0.0
    async with (
        httpx.AsyncClient(timeout=30, headers=ALICE) as http,
        http.stream("POST", a.url + "/agui", json=body) as response,
    ):
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            frame = httpx.Response(200, content=line[6:]).json()
            seen.append(frame)
            ids = {f["toolCallName"]: f["toolCallId"] for f in seen if "toolCallName" in f}
            if frame["type"] == "TOOL_CALL_RESULT" and frame["content"] == "value of a":
                cancel = f"{b.url}/runs/{run_id}/calls/{{}}/cancel"
                answers["finished"] = await http.post(cancel.format(ids["lookup"]))
                answers["unknown"] = await http.post(cancel.format("call_nobody_made"))
                answers["other"] = await http.post(cancel.format(ids["search"]), headers=BOB)
                asked_at = time.monotonic()
                answers["owner"] = await http.post(cancel.format(ids["search"]))
                answers["again"] = await http.post(cancel.format(ids["search"]))
            if frame["type"] == "TOOL_CALL_RESULT" and frame["content"] == CANCELLED_TEXT:
                stopped_at = time.monotonic()
        after = await http.post(f"{b.url}/runs/{run_id}/calls/{ids['search']}/cancel")
    assert answers["finished"].status_code == 409
    assert answers["finished"].json()["error"]["code"] == "call_finished"
    assert answers["unknown"].status_code == 404
    assert answers["unknown"].json()["error"]["code"] == "unknown_call"
    assert answers["other"].status_code == 404
    assert answers["other"].json() == answers["unknown"].json()  # nothing to probe
    assert answers["owner"].status_code == 202, answers["owner"].text
    assert answers["again"].status_code == 409  # asked to stop once
    assert after.status_code == 409
    results = sorted(f["content"] for f in seen if f["type"] == "TOOL_CALL_RESULT")
    assert results == sorted([CANCELLED_TEXT, "value of a"])
    assert seen[-1]["type"] == "RUN_FINISHED"
    assert stopped_at > asked_at  # the search ended because of the request to B


def test_requests_are_taken_once_and_only_for_the_runs_asked(tmp_path: Path) -> None:
    """``take`` returns a request once, and only for the run ids it is given; unknown
    runs and another principal's are ``UNKNOWN`` before anything is written."""
    path = str(tmp_path / "runs.db")
    SQLiteJournal(path).close()  # the tables
    requests = CancelRequests(path)
    try:
        assert requests.request("alice", "run-x", "call-y") is Verdict.UNKNOWN
        assert requests.request("alice", "'; DROP TABLE inbox;--", "c") is Verdict.UNKNOWN
        assert requests.take(["run-x", "'; DROP TABLE inbox;--"]) == []
        assert requests.take([]) == []
    finally:
        requests.close()
