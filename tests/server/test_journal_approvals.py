"""What an approval carries besides yes or no, kept by the journal over real HTTP (both
backends): ``data`` for the tool reaches it after a server restart too, and ``remember:
"thread"`` holds after a restart and on a second server on the same database, for that
thread and principal only."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import open_journal
from live_server import Server


@tool(requires_approval=True)
def send(text: str, ctx: ToolContext) -> str:
    """Send a message (asks a human first, who may pick the account)."""
    data = ctx.approval.data if ctx.approval is not None else None
    account = data.get("account") if isinstance(data, dict) else "default"
    return f"sent {text} via {account}"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    return [call("send", {"text": last.content}, id=f"call_{uuid.uuid4().hex[:10]}")]


def as_user(request: Request) -> str | None:
    return request.headers.get("x-user")


@pytest.fixture
def servers(journal_target: str) -> Iterator[Callable[[], str]]:
    """Start a server on the test's journal (each one its own process's journal and
    lease, as a restart or another replica has); all are stopped at the end."""
    with ExitStack() as stack:

        def start() -> str:
            journal = open_journal(journal_target)
            stack.callback(journal.close)
            agent = Agent(ScriptedModel(script, record=False), [send])
            app = create_app(agent, journal=journal, authenticate=as_user)
            return stack.enter_context(Server(app)).url

        yield start


def post(url: str, thread: str, text: str | None, user: str = "alice", **extra: Any) -> Any:
    body = {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }
    response = httpx.post(url + "/agui", json=body, headers={"x-user": user}, timeout=30)
    assert response.status_code == 200, response.text
    return [json.loads(b[6:]) for b in response.text.split("\n\n") if b.startswith("data: ")]


def interrupt_of(events: list[dict[str, Any]]) -> str | None:
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    outcome = events[-1].get("outcome") or {}
    if outcome.get("type") != "interrupt":
        return None
    return str(outcome["interrupts"][0]["id"])


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def approve(interrupt: str, **payload: Any) -> dict[str, Any]:
    entry = {"interruptId": interrupt, "status": "resolved", "payload": {"approved": True,
             **payload}}  # fmt: skip
    return {"resume": [entry]}


@pytest.mark.parametrize("restart", [False, True], ids=["same server", "after a restart"])
def test_approval_data_reaches_the_tool(servers: Callable[[], str], restart: bool) -> None:
    url = servers()
    interrupt = interrupt_of(post(url, "t", "hello"))
    assert interrupt is not None
    if restart:
        url = servers()  # a new process on the same journal answers
    done = post(url, "t", None, **approve(interrupt, data={"account": "work"}))
    assert text_of(done) == "Done: sent hello via work"


def test_remember_thread_holds_after_a_restart_and_on_another_server(
    servers: Callable[[], str],
) -> None:
    first, second = servers(), servers()
    interrupt = interrupt_of(post(first, "t", "one"))
    assert interrupt is not None
    done = post(first, "t", None, **approve(interrupt, remember="thread"))
    assert text_of(done) == "Done: sent one via default"

    on_second = post(second, "t", "two")  # another replica: no question
    assert interrupt_of(on_second) is None and text_of(on_second) == "Done: sent two via default"
    after_restart = post(servers(), "t", "three")
    assert interrupt_of(after_restart) is None
    assert text_of(after_restart) == "Done: sent three via default"

    assert interrupt_of(post(second, "other-thread", "four")) is not None  # its own thread only
    assert interrupt_of(post(second, "t-bob", "five", user="bob")) is not None
