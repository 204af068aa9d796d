"""Stateless approvals (``create_app(signer=...)``): the approval id carries an HMAC over
the call, so no database is needed; the documented price is that a replay is accepted."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from _sse import frames
from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import ApprovalSigner

RAN: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return f"deleted {path}"


def script(request: ModelRequest) -> list[Any]:
    if isinstance(request.messages[-1], ToolResultMessage):
        return [f"Done: {request.messages[-1].content}"]
    return [call("delete_file", {"path": "a.txt"}, id="call_1")]


@pytest.fixture(scope="module")
def url(serve_app: Any) -> Iterator[str]:
    agent = Agent(ScriptedModel(script, record=False), [delete_file])
    with serve_app(create_app(agent, signer=ApprovalSigner("s" * 32))) as server:
        yield server.url


def post(url: str, messages: list[Any], resume: Any = None) -> httpx.Response:
    body = {
        "threadId": "t",
        "runId": uuid.uuid4().hex,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = resume
    return httpx.post(url + "/agui", json=body, timeout=30)


def paused(url: str) -> tuple[list[Any], str]:
    user = {"id": "u1", "role": "user", "content": "delete a.txt"}
    events = frames(post(url, [user]).text)
    interrupt = events[-1]["outcome"]["interrupts"][0]["id"]
    assistant = {
        "id": "a1",
        "role": "assistant",
        "toolCalls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "delete_file", "arguments": '{"path": "a.txt"}'},
            }
        ],
    }
    return [user, assistant], interrupt


def approve(interrupt: str) -> list[Any]:
    return [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}]


def test_a_signed_approval_is_honoured(url: str) -> None:
    RAN.clear()
    history, interrupt = paused(url)
    assert interrupt.startswith("apr_") and "." in interrupt
    events = frames(post(url, history, approve(interrupt)).text)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert RAN == ["a.txt"]


@pytest.mark.parametrize("tamper", ["arguments", "id", "tool"])
def test_a_tampered_approval_is_refused(url: str, tamper: str) -> None:
    RAN.clear()
    history, interrupt = paused(url)
    function = history[1]["toolCalls"][0]["function"]
    if tamper == "arguments":
        function["arguments"] = '{"path": "/etc/passwd"}'
    elif tamper == "tool":
        function["name"] = "other_tool"
    else:
        interrupt = interrupt[:-4] + "0000"
    response = post(url, history, approve(interrupt))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "bad_signature"
    assert RAN == []


def test_the_trade_off_a_replay_is_accepted(url: str) -> None:
    RAN.clear()
    history, interrupt = paused(url)
    for _ in range(2):
        assert frames(post(url, history, approve(interrupt)).text)[-1]["type"] == "RUN_FINISHED"
    assert RAN == ["a.txt", "a.txt"]  # no state, no replay protection (RELIABILITY.md)
