"""One thread, one run at a time, over real HTTP in every mode: concurrent requests on a
thread get exactly one stream and 409 ``thread_busy`` for the rest; another principal's
thread of the same id is another thread; a stopped stream frees its thread."""

from __future__ import annotations

import asyncio
import json
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
from callwright.server import create_app
from callwright.store import ApprovalSigner, SQLiteJournal
from live_server import Server

STARTED: list[str] = []


@tool
async def slow(ctx: ToolContext, seconds: float) -> str:
    """Works for a while; stops early when cancelled."""
    STARTED.append(ctx.call_id)
    try:
        await asyncio.wait_for(ctx.cancelled(), seconds)
    except TimeoutError:
        return "finished"
    return "stopped"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    seconds = float(last.content.split()[-1])
    return [call("slow", {"seconds": seconds}, id=f"call_{uuid.uuid4().hex[:8]}")]


def authenticate(request: Request) -> str | None:
    return request.headers.get("x-user")


@pytest.fixture(params=["memory", "signer", "journal"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(mode: str, tmp_path: Path) -> Iterator[str]:
    journal = SQLiteJournal(str(tmp_path / "runs.db")) if mode == "journal" else None
    signer = ApprovalSigner("s" * 32) if mode == "signer" else None
    agent = Agent(ScriptedModel(script, record=False), [slow])
    app = create_app(agent, journal=journal, signer=signer, authenticate=authenticate)
    with Server(app) as server:
        yield server.url
    if journal is not None:
        journal.close()


def body(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": f"u_{uuid.uuid4().hex}", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def last_event(raw: str) -> dict[str, Any]:
    blocks = [b for b in raw.split("\n\n") if b.startswith("data: {")]
    return dict(json.loads(blocks[-1][6:]))


async def post_all(url: str, requests: list[tuple[dict[str, Any], str]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        return await asyncio.gather(
            *(http.post("/agui", json=b, headers={"x-user": user}) for b, user in requests)
        )


def test_concurrent_requests_on_one_thread_run_one(url: str) -> None:
    thread = f"t_{uuid.uuid4().hex}"
    responses = asyncio.run(post_all(url, [(body(thread, "slow 0.5"), "ann") for _ in range(5)]))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 409, 409, 409, 409], [r.text for r in responses]
    for response in responses:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "thread_busy"
        else:
            assert last_event(response.text)["type"] == "RUN_FINISHED"
    # once the run is over, the thread takes the next request
    with httpx.Client(base_url=url, timeout=30, headers={"x-user": "ann"}) as http:
        after = http.post("/agui", json=body(thread, "slow 0"))
    assert last_event(after.text)["type"] == "RUN_FINISHED"


def test_another_principals_thread_of_the_same_id_is_not_busy(url: str) -> None:
    """bob's request on the id of ann's running thread is not refused with thread_busy
    (that would tell him ann is running), nor with anything else: in every mode, the
    journal's included, it is a thread of his own."""
    thread = f"t_{uuid.uuid4().hex}"

    async def both() -> tuple[str, httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            ann = body(thread, "slow 0.5")
            async with http.stream("POST", "/agui", json=ann, headers={"x-user": "ann"}) as first:
                lines = first.aiter_lines()
                seen = [line async for line in _until(lines, "TOOL_CALL_START")]
                bob = await http.post(
                    "/agui", json=body(thread, "slow 0"), headers={"x-user": "bob"}
                )
                seen += [line async for line in lines]
        return "\n\n".join(seen), bob

    ann_text, bob = asyncio.run(both())
    assert last_event(ann_text)["type"] == "RUN_FINISHED"
    assert bob.status_code == 200, bob.text
    assert last_event(bob.text)["type"] == "RUN_FINISHED"


async def _until(lines: Any, marker: str) -> Any:
    async for line in lines:
        yield line
        if marker in line:
            return


def test_a_stopped_stream_frees_its_thread(url: str) -> None:
    """The playground's Stop then a new message: the next request waits for the stopped
    run to wind down instead of being refused."""
    thread = f"t_{uuid.uuid4().hex}"
    STARTED.clear()
    with httpx.Client(base_url=url, timeout=30, headers={"x-user": "ann"}) as http:
        with http.stream("POST", "/agui", json=body(thread, "slow 30")) as stream:
            for line in stream.iter_lines():
                if "TOOL_CALL_END" in line:
                    break
        again = http.post("/agui", json=body(thread, "slow 0"))
    assert again.status_code == 200, again.text
    assert last_event(again.text)["type"] == "RUN_FINISHED"
