"""Stopping one call over real HTTP with the real npm clients (@ag-ui/client 0.0.x and 1.0,
ai 5, 6 and 7): of three parallel calls, the one the owner cancels through
``POST /runs/{run_id}/calls/{call_id}/cancel`` ends ``Cancelled: cancelled by the user``
(AG-UI ``errorKind: cancelled``, AI SDK ``output-error``), the other two finish, and the
model's next request has all three results; a finished call (409), an unknown call and
another principal's run (404) are refused and change nothing."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from _node import run_driver
from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from live_server import Server

TOKENS = {"Bearer alice-0123456789abcdef": "alice", "Bearer bob-0123456789abcdef": "bob"}
ALICE = {"authorization": "Bearer alice-0123456789abcdef"}
BOB = {"authorization": "Bearer bob-0123456789abcdef"}
CANCELLED_TEXT = "Cancelled: cancelled by the user"

STOPPED_RUNS: set[str] = set()
"""Runs whose search call saw its cancel token (server side)."""


@tool
async def search(query: str, ctx: ToolContext) -> str:
    """Search the web slowly: runs until its call is cancelled (at most 20 s)."""
    try:
        await asyncio.wait_for(ctx.cancelled(), 20)
    except TimeoutError:
        return "never cancelled"
    assert ctx.run is not None
    STOPPED_RUNS.add(ctx.run.run_id)
    ctx.raise_if_cancelled()
    return "unreachable"


@tool
async def lookup(key: str, ctx: ToolContext) -> str:
    """Look a key up: ``a`` at once, ``b`` once the run's search was stopped."""
    assert ctx.run is not None
    for _ in range(1000):
        if key == "a" or ctx.run.run_id in STOPPED_RUNS:
            return f"value of {key}"
        await asyncio.sleep(0.02)
    return "search was never stopped"


def turn(request: ModelRequest) -> Any:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        tag = uuid.uuid4().hex[:8]
        return [
            call("search", {"query": "slow"}, id=f"call_s_{tag}"),
            call("lookup", {"key": "a"}, id=f"call_a_{tag}"),
            call("lookup", {"key": "b"}, id=f"call_b_{tag}"),
        ]
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return ["Done: " + "; ".join(f"{m.tool_name}={m.content}" for m in results[-3:])]


def authenticate(request: Request) -> str | None:
    return TOKENS.get(request.headers.get("authorization", ""))


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Server, ScriptedModel]]:
    model = ScriptedModel(turn)
    agent = Agent(model, [search, lookup], cancel_grace=2)
    with Server(create_app(agent, authenticate=authenticate)) as server:
        yield server, model


def drive(client: str, url: str) -> dict[str, Any]:
    return run_driver("drive_cancel.mjs", client, url, env=_headers())


def _headers() -> dict[str, str]:
    return {"OWNER_HEADERS": json.dumps(ALICE), "OTHER_HEADERS": json.dumps(BOB)}


def assert_refusals_and_cancel(report: dict[str, Any]) -> None:
    during = report["during"]
    assert during is not None, report
    assert during["finished"]["status"] == 409
    assert during["finished"]["body"]["error"]["code"] == "call_finished"
    assert during["unknown"]["status"] == 404
    assert during["otherPrincipal"]["status"] == 404
    assert during["otherPrincipal"]["body"] == during["unknown"]["body"]  # nothing to probe
    assert during["unknown"]["body"]["error"]["code"] == "unknown_call"
    assert during["owner"]["status"] == 202
    assert during["owner"]["body"]["cancelled"] is True
    # the run is over: nothing of it can be stopped any more
    assert report["after"]["status"] == 404


def assert_model_saw_all_three(model: ScriptedModel, call_ids: list[str]) -> None:
    """The model's request after the step holds the three results, in call order."""
    answered = [
        r
        for r in model.requests
        if any(isinstance(m, ToolResultMessage) and m.call_id in call_ids for m in r.messages)
    ]
    assert len(answered) == 1, "the model got the results once, in one request"
    sent = [m for m in answered[0].messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_name, m.is_error) for m in sent] == [
        ("search", True),
        ("lookup", False),
        ("lookup", False),
    ]
    assert sorted(m.call_id for m in sent) == sorted(call_ids)
    assert sent[0].content == CANCELLED_TEXT
    assert [m.content for m in sent[1:]] == ["value of a", "value of b"]


@pytest.mark.parametrize("client", ["agui1", "agui0"])
def test_agui_client_sees_one_call_cancelled_and_the_others_finish(
    served: tuple[Server, ScriptedModel], client: str
) -> None:
    server, model = served
    report = drive(client, server.url)
    assert report["errors"] == [], report
    assert_refusals_and_cancel(report)
    results = {e["toolCallId"]: e for e in report["results"]}
    assert len(results) == 3
    stopped = [e for e in results.values() if e["content"] == CANCELLED_TEXT]
    assert len(stopped) == 1
    assert stopped[0]["metadata"]["callwright"]["errorKind"] == "cancelled"
    others = sorted(e["content"] for e in results.values() if e is not stopped[0])
    assert others == ["value of a", "value of b"]
    final = [m for m in report["messages"] if m["role"] == "assistant"][-1]
    assert final["content"] == (
        f"Done: search={CANCELLED_TEXT}; lookup=value of a; lookup=value of b"
    )
    assert report["runId"] in STOPPED_RUNS
    assert_model_saw_all_three(model, list(results))


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_ai_sdk_client_sees_one_call_cancelled_and_the_others_finish(
    served: tuple[Server, ScriptedModel], client: str
) -> None:
    server, model = served
    report = drive(client, server.url)
    assert report["errors"] == [] and report["status"] == "ready", report
    assert_refusals_and_cancel(report)
    parts = {p["toolCallId"]: p for p in report["parts"]}
    assert len(parts) == 3
    stopped = [p for p in parts.values() if p["type"] == "tool-search"]
    assert stopped[0]["state"] == "output-error"
    assert stopped[0]["errorText"] == CANCELLED_TEXT
    lookups = [p for p in parts.values() if p["type"] == "tool-lookup"]
    assert [p["state"] for p in lookups] == ["output-available"] * 2
    assert sorted(p["output"] for p in lookups) == ["value of a", "value of b"]
    assert report["text"] == f"Done: search={CANCELLED_TEXT}; lookup=value of a; lookup=value of b"
    assert report["runId"] in STOPPED_RUNS
    assert_model_saw_all_three(model, list(parts))


def test_hostile_cancel_requests_are_refused(served: tuple[Server, ScriptedModel]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=10) as client:
        path = "/runs/run_x/calls/call_y/cancel"
        assert client.post(path).status_code == 401  # no token
        unknown = client.post(path, headers=ALICE)
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "unknown_call"
        bad = client.post("/runs/run%0Ax/calls/call_y/cancel", headers=ALICE)
        assert bad.status_code == 400 and "\n" not in bad.text
        foreign = client.post(
            path,
            headers={**ALICE, "origin": "https://evil.example", "content-type": "text/plain"},
        )
        assert foreign.status_code == 403
        assert client.get(path, headers=ALICE).status_code == 405


async def test_a_flood_of_cancels_stops_the_call_once(served: tuple[Server, ScriptedModel]) -> None:
    """200 concurrent cancels of one call: one 202, the rest 409 ``call_finished`` (or 404
    once the run has ended); the run goes on and finishes as after one cancel."""
    server, _ = served
    body = {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "content": "three"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    frames: list[dict[str, Any]] = []
    statuses: list[int] = []
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=30, headers=ALICE) as client,
        client.stream("POST", "/agui", json=body) as response,
    ):
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            frame = json.loads(line[len("data: ") :])
            frames.append(frame)
            if frame["type"] == "TOOL_CALL_RESULT" and frame["content"] == "value of a":
                search = next(
                    f["toolCallId"]
                    for f in frames
                    if f["type"] == "TOOL_CALL_START" and f["toolCallName"] == "search"
                )
                path = f"/runs/{body['runId']}/calls/{search}/cancel"
                answers = await asyncio.gather(*(client.post(path) for _ in range(200)))
                statuses = [a.status_code for a in answers]
                refused = {a.json()["error"]["code"] for a in answers if a.status_code != 202}
                # the run goes on meanwhile: once it has ended, its calls are unknown
                assert refused <= {"call_finished", "unknown_call"}
    assert statuses.count(202) == 1 and set(statuses) <= {202, 409, 404}
    results = [f["content"] for f in frames if f["type"] == "TOOL_CALL_RESULT"]
    assert sorted(results) == sorted([CANCELLED_TEXT, "value of a", "value of b"])
    assert frames[-1]["type"] == "RUN_FINISHED"
