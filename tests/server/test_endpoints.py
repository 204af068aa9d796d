"""``Endpoints``: the handlers mounted in a plain Starlette app of someone else's, the
per-request ``deps`` reaching the tools in every approval mode, and ``create_app``'s
lifespan (recovery on start-up, not when the app is built; the journal closed after)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from callwright import Agent, CallwrightDeprecationWarning, ToolContext, start_journaled, tool
from callwright import events as ev
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import Endpoints, ServerLimits, create_app
from callwright.store import ApprovalSigner, SQLiteJournal
from live_server import Server


@tool
def whose(ctx: ToolContext) -> str:
    """The deps the run was given."""
    return repr(ctx.deps)


@tool(requires_approval=True)
def guarded(ctx: ToolContext) -> str:
    """The deps, once a human approved."""
    return repr(ctx.deps)


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Saw {last.content}"]
    assert isinstance(last, UserMessage)
    return [call(last.content, {}, id=f"call_{uuid.uuid4().hex[:8]}")]


def agent() -> Agent[Any, Any]:
    return Agent(
        ScriptedModel(script, record=False), [whose, guarded], deps="the agent's", deps_type=object
    )


def mounted(endpoints: Endpoints) -> Starlette:
    """Someone else's app: the caller's name is a header, the deps are made from it."""

    def deps(request: Request) -> Any:
        user = request.headers.get("x-user")
        return None if user is None else {"user": user}

    async def agui(request: Request) -> Response:
        return await endpoints.handle_agui(request, deps=deps(request), principal="p")

    async def chat(request: Request) -> Response:
        return await endpoints.handle_ai_sdk(request, deps=deps(request), principal="p")

    async def old_chat(request: Request) -> Response:
        return await endpoints.handle_chat(request, deps=deps(request), principal="p")

    async def old_resume(request: Request) -> Response:
        return await endpoints.handle_chat_resume(request, principal="p")

    return Starlette(
        routes=[
            Route("/my/agui", agui, methods=["POST"]),
            Route("/my/chat", chat, methods=["POST"]),
            Route("/my/old-chat", old_chat, methods=["POST"]),
            Route("/my/old-chat/{chat_id}/stream", old_resume, methods=["GET"]),
        ],
        lifespan=endpoints.lifespan,
    )


MODES = ["memory", "journal", "signer"]


@pytest.fixture(params=MODES)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    journal = SQLiteJournal(str(tmp_path / "runs.db")) if request.param == "journal" else None
    signer = ApprovalSigner("s" * 32) if request.param == "signer" else None
    with Server(mounted(Endpoints(agent(), journal=journal, signer=signer))) as server:
        yield server.url
    if journal is not None:
        journal.close()


def sse(raw: str) -> list[Any]:
    blocks = [b.removeprefix("data: ") for b in raw.split("\n\n") if b]
    return [b if b == "[DONE]" else json.loads(b) for b in blocks]


def agui_body(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def test_agui_deps_reach_the_tool_and_default_to_the_agents(served: str) -> None:
    with httpx.Client(base_url=served, timeout=30) as http:
        for headers, seen in (({"x-user": "ann"}, "{'user': 'ann'}"), ({}, '"the agent\'s"')):
            user = [{"id": "u1", "role": "user", "content": "whose"}]
            events = sse(
                http.post(
                    "/my/agui", json=agui_body(f"t_{uuid.uuid4().hex}", user), headers=headers
                ).text
            )
            result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
            assert result["content"] == seen
            assert events[-1]["type"] == "RUN_FINISHED"


def test_agui_deps_reach_a_tool_run_after_its_approval(served: str) -> None:
    thread = f"t_{uuid.uuid4().hex}"
    user = {"id": "u1", "role": "user", "content": "guarded"}
    with httpx.Client(base_url=served, timeout=30, headers={"x-user": "ann"}) as http:
        first = sse(http.post("/my/agui", json=agui_body(thread, [user])).text)
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        start = next(e for e in first if e["type"] == "TOOL_CALL_START")
        assistant = {
            "id": start["parentMessageId"],
            "role": "assistant",
            "toolCalls": [
                {
                    "id": start["toolCallId"],
                    "type": "function",
                    "function": {"name": "guarded", "arguments": "{}"},
                }
            ],
        }
        resume = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ]
        second = sse(
            http.post("/my/agui", json=agui_body(thread, [user, assistant], resume=resume)).text
        )
    result = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "{'user': 'ann'}"


def test_ai_sdk_deps_reach_the_tool(served: str) -> None:
    body = {
        "id": f"chat_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "whose"}]}],
    }
    with httpx.Client(base_url=served, timeout=30) as http:
        chunks = sse(http.post("/my/chat", json=body, headers={"x-user": "bo"}).text)
    output = next(c for c in chunks if c != "[DONE]" and c["type"] == "tool-output-available")
    assert output["output"] == "{'user': 'bo'}"


def test_the_old_ai_sdk_handler_names_warn_and_still_serve() -> None:
    body = {
        "id": f"chat_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "whose"}]}],
    }
    with TestClient(mounted(Endpoints(agent()))) as http:
        with pytest.warns(CallwrightDeprecationWarning, match="use Endpoints.handle_ai_sdk$"):
            chunks = sse(http.post("/my/old-chat", json=body, headers={"x-user": "cy"}).text)
        with pytest.warns(CallwrightDeprecationWarning, match="handle_ai_sdk_resume"):
            idle = http.get(f"/my/old-chat/{body['id']}/stream")
    output = next(c for c in chunks if c != "[DONE]" and c["type"] == "tool-output-available")
    assert output["output"] == "{'user': 'cy'}"
    assert idle.status_code == 204  # nothing runs in the chat: what the AI SDK expects


def test_the_handlers_refuse_what_create_app_refuses() -> None:
    endpoints = Endpoints(agent(), limits=ServerLimits(max_body_bytes=100))
    with TestClient(mounted(endpoints)) as http:
        too_big = http.post("/my/agui", content=b"{" + b" " * 200 + b"}")
        bad_version = http.post("/my/chat", json={}, headers={"x-ai-sdk-version": "2"})
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "body_too_large"
    assert bad_version.json()["error"]["code"] == "unsupported_version"


def test_endpoints_refuse_a_journal_and_a_signer_together(tmp_path: Path) -> None:
    journal = SQLiteJournal(str(tmp_path / "runs.db"))
    with pytest.raises(ValueError, match="journal or a signer"):
        Endpoints(agent(), journal=journal, signer=ApprovalSigner("s" * 32))
    journal.close()


# --- lifespan ----------------------------------------------------------------------------


async def interrupt_a_run(journal: SQLiteJournal) -> str:
    """A run whose process died while its tool ran: the journal says it is running."""
    run, recorder = start_journaled(journal, agent(), "t", "r1", [UserMessage("whose")], [])
    async for event in run.events():
        recorder.record(event)
        if isinstance(event, ev.ToolExecutionStart):
            break
    return recorder.segment.run_id


def test_create_app_recovers_the_journal_on_start_up_and_closes_it_on_shutdown(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "runs.db")
    crashed = SQLiteJournal(path)
    run_id = asyncio.run(interrupt_a_run(crashed))
    crashed.close()
    journal = SQLiteJournal(path)  # the next process
    app = create_app(agent(), journal=journal)
    assert journal.run_status(run_id) == "running"  # building the app changes nothing
    with TestClient(app) as http:
        assert journal.run_status(run_id) == "interrupted"
        assert http.get("/").status_code == 200
    with pytest.raises(sqlite3.ProgrammingError):
        journal.run_status(run_id)
