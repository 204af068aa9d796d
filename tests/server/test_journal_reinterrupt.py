"""An approval asked again keeps its id with a journal (issue 27), over real HTTP.

A resume that answers one of a step's two approvals: the call still waiting is asked
again. In memory mode the ledger gave it the id the client already held; with a journal
it got a new one (the AG-UI spec carries the still-open interrupt). Now the journal
hands the open approval's id back to the run. The id still answers the call, and only
for its principal: another user's answer with it, or a forged id, is refused.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from callwright import Agent, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import open_journal
from live_server import Server

RAN: list[str] = []
ALICE = {"x-user": "alice"}
BOB = {"x-user": "bob"}


@tool(requires_approval=True)
def send(text: str) -> str:
    """Send a message (asks a human first)."""
    RAN.append(text)
    return f"sent {text}"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return ["Done"]
    assert isinstance(last, UserMessage)
    return [
        call("send", {"text": "a"}, id=f"call_{uuid.uuid4().hex[:10]}"),
        call("send", {"text": "b"}, id=f"call_{uuid.uuid4().hex[:10]}"),
    ]


def as_user(request: Request) -> str | None:
    return request.headers.get("x-user")


@pytest.fixture
def url(journal_target: str) -> Iterator[str]:
    RAN.clear()
    journal = open_journal(journal_target)
    agent = Agent(ScriptedModel(script, record=False), [send])
    with Server(create_app(agent, journal=journal, authenticate=as_user)) as server:
        yield server.url
    journal.close()


def frames(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(b[len("data: ") :])
        for b in text.split("\n\n")
        if b.startswith("data: ") and b != "data: [DONE]"
    ]


def refused(response: httpx.Response) -> str:
    assert response.status_code >= 400, response.text
    return str(response.json()["error"]["code"])


# --- AG-UI ---------------------------------------------------------------------------------


def agui(thread: str, text: str | None, resume: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": thread, "runId": f"r_{uuid.uuid4().hex}", "tools": [], "context": [],
        "state": {}, "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": text}] if text else [],
    }  # fmt: skip
    if resume is not None:
        body["resume"] = resume
    return body


def approve(interrupt: str) -> list[Any]:
    return [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}]


def interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = events[-1].get("outcome") or {}
    assert outcome.get("type") == "interrupt", events[-1]
    return list(outcome["interrupts"])


def test_an_agui_interrupt_asked_again_keeps_its_id(url: str) -> None:
    thread = f"t_{uuid.uuid4().hex}"
    with httpx.Client(base_url=url, timeout=30) as http:
        first = frames(http.post("/agui", json=agui(thread, "go"), headers=ALICE).text)
        a, b = interrupts(first)
        second = http.post("/agui", json=agui(thread, None, approve(a["id"])), headers=ALICE)
        (again,) = interrupts(frames(second.text))
        assert (again["id"], again["toolCallId"]) == (b["id"], b["toolCallId"])
        assert RAN == ["a"]
        # the id is alice's: bob (in his thread of the same name) and a forged id are refused
        stolen = http.post("/agui", json=agui(thread, None, approve(b["id"])), headers=BOB)
        assert refused(stolen) == "unknown_approval"
        forged = http.post("/agui", json=agui(thread, None, approve("apr_forged")), headers=ALICE)
        assert refused(forged) == "unknown_approval"
        third = http.post("/agui", json=agui(thread, None, approve(b["id"])), headers=ALICE)
    assert frames(third.text)[-1]["type"] == "RUN_FINISHED"
    assert (frames(third.text)[-1].get("outcome") or {}).get("type") != "interrupt"
    assert RAN == ["a", "b"]


# --- AI SDK --------------------------------------------------------------------------------


def tool_part(asked: dict[str, Any], text: str, approved: bool | None) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "tool-send",
        "toolCallId": asked["toolCallId"],
        "input": {"text": text},
        "state": "approval-requested",
        "approval": {"id": asked["approvalId"]},
    }
    if approved is not None:
        part["state"] = "approval-responded"
        part["approval"] = {"id": asked["approvalId"], "approved": approved}
    return part


def test_an_ai_sdk_approval_asked_again_keeps_its_id(url: str) -> None:
    chat = f"chat_{uuid.uuid4().hex}"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}
    with httpx.Client(base_url=url, timeout=30) as http:
        first = frames(http.post("/api/chat", json={"id": chat, "messages": [user]},
                                 headers=ALICE).text)  # fmt: skip
        a, b = [c for c in first if c["type"] == "tool-approval-request"]
        assistant = {
            "id": first[0]["messageId"],
            "role": "assistant",
            "parts": [tool_part(a, "a", True), tool_part(b, "b", None)],
        }
        body = {"id": chat, "messages": [user, assistant]}
        second = frames(http.post("/api/chat", json=body, headers=ALICE).text)
        (again,) = [c for c in second if c["type"] == "tool-approval-request"]
        assert (again["approvalId"], again["toolCallId"]) == (b["approvalId"], b["toolCallId"])
        assert RAN == ["a"]
        (output,) = [c for c in second if c["type"] == "tool-output-available"]
        done = {"type": "tool-send", "toolCallId": a["toolCallId"], "input": {"text": "a"},
                "state": "output-available", "output": output["output"]}  # fmt: skip
        assistant["parts"] = [done, tool_part(b, "b", True)]
        bobs = {**assistant, "parts": [tool_part(b, "b", True)]}
        stolen = http.post("/api/chat", json={"id": chat, "messages": [user, bobs]}, headers=BOB)
        assert refused(stolen) == "unknown_approval"
        assert RAN == ["a"]
        answered = http.post("/api/chat", json=body, headers=ALICE)
        assert answered.status_code == 200, answered.text
        third = frames(answered.text)
    assert any(c["type"] == "tool-output-available" for c in third), third
    assert RAN == ["a", "b"]
