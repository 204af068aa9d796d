"""The journaled server over real HTTP: disconnects are recorded, streams can be resumed."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLJournal, open_journal

SAW_CANCEL: list[str] = []


@tool
async def slow(steps: int, ctx: ToolContext) -> str:
    """Reports progress until done or cancelled."""
    for i in range(steps):
        if ctx.is_cancelled():
            SAW_CANCEL.append(ctx.call_id)
            ctx.raise_if_cancelled()
        ctx.progress(f"step {i}", i / steps)
        await asyncio.sleep(0.05)
    return "finished"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    steps = int(last.content.split()[1])
    return [call("slow", {"steps": steps}, id=f"call_{uuid.uuid4().hex[:8]}")]


@pytest.fixture
def served(serve_app: Any, journal_target: str) -> Iterator[tuple[str, SQLJournal]]:
    SAW_CANCEL.clear()  # a test runs once per backend
    journal = open_journal(journal_target)
    agent = Agent(ScriptedModel(script, record=False), [slow], cancel_grace=2)
    with serve_app(create_app(agent, journal=journal)) as server:
        yield server.url, journal
    journal.close()


def body(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def test_disconnect_cancels_the_tool_and_the_journal_records_it(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    request = body("t-disconnect", "slow 400")
    with httpx.Client(timeout=30) as http, http.stream("POST", url + "/agui", json=request) as r:
        for line in r.iter_lines():
            if '"step 2"' in line:
                break  # leave mid-stream: the connection closes
    deadline = time.monotonic() + 10
    run_status = None
    while time.monotonic() < deadline:
        runs = journal.snapshot()["runs"]
        run_status = runs[0][2] if runs else None
        if run_status == "cancelled":
            break
        time.sleep(0.05)
    assert run_status == "cancelled"
    assert len(SAW_CANCEL) == 1
    ops = journal.operations(journal.snapshot()["runs"][0][0])
    assert [(o["name"], o["status"]) for o in ops] == [
        ("model", "completed"),
        ("tool:slow", "completed"),
    ]
    assert ops[1]["output"]["content"].startswith("Cancelled")


def test_a_stream_resumes_from_the_last_frame_seen(served: tuple[str, SQLJournal]) -> None:
    url, _ = served
    request = body("t-replay", "slow 3")
    with httpx.Client(timeout=30) as http:
        response = http.post(url + "/agui", json=request)
        run_id = response.headers["x-callwright-run-id"]
        assert run_id == request["runId"]
        sent = [b + "\n\n" for b in response.text.split("\n\n") if b]
        replay = http.get(f"{url}/runs/{run_id}/events", params={"after": 3})
    assert replay.status_code == 200
    assert replay.text == "".join(sent[3:])
    assert '"RUN_FINISHED"' in sent[-1]


def test_replay_follows_a_live_run(served: tuple[str, SQLJournal]) -> None:
    url, _ = served
    request = body("t-live", "slow 20")
    result: dict[str, str] = {}

    def run() -> None:
        result["original"] = httpx.post(url + "/agui", json=request, timeout=30).text

    thread = threading.Thread(target=run)
    thread.start()
    with httpx.Client(timeout=30) as http:
        deadline = time.monotonic() + 10
        while True:  # until the run has started (404 before that)
            response = http.get(f"{url}/runs/{request['runId']}/events", params={"after": 0})
            if response.status_code != 404 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        replay = response.text
    thread.join(30)
    assert replay == result["original"]
