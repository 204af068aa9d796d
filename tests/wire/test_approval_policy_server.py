"""How approvals carry ``data`` and ``remember`` on each wire, and where the server keeps a
thread's remembered approvals: per principal and thread, bounded, in memory and with a
signer (over real HTTP)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from callwright import Decision
from callwright.server import create_app
from callwright.server._threads import RememberedApprovals
from callwright.store import ApprovalSigner
from callwright.wire import WireError, agui, aisdk
from live_server import Server

from .test_approval_policy_clients import make_agent


def ui_body(approval: dict[str, Any], **extra: Any) -> dict[str, Any]:
    part = {
        "type": "tool-write_note",
        "toolCallId": "call_1",
        "state": "approval-responded",
        "input": {"text": "a"},
        "approval": approval,
    }
    return {
        "id": "chat",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "write a"}]},
            {"id": "a1", "role": "assistant", "parts": [part]},
        ],
        **extra,
    }


def decision_of(body: dict[str, Any]) -> Decision:
    (claim,) = aisdk.decode_request(body).claims
    assert isinstance(claim.decision, Decision)
    return claim.decision


def test_ai_sdk_reads_data_and_remember_from_the_part_or_the_body() -> None:
    approval = {"id": "apr_1", "approved": True, "data": [1, 2], "remember": "thread"}
    assert decision_of(ui_body(approval)) == Decision(True, data=[1, 2], remember="thread")
    plain = {"id": "apr_1", "approved": True, "reason": "ok"}
    body = ui_body(plain, approvals={"apr_1": {"data": {"a": 1}}, "apr_other": {"data": 2}})
    assert decision_of(body) == Decision(True, "ok", data={"a": 1})
    assert decision_of(ui_body(plain)) == Decision(True, "ok")


@pytest.mark.parametrize(
    "body",
    [
        ui_body({"id": "apr_1", "approved": True, "remember": "forever"}),
        ui_body({"id": "apr_1", "approved": True}, approvals=["apr_1"]),
        ui_body({"id": "apr_1", "approved": True}, approvals={"apr_1": {"remember": 1}}),
    ],
)
def test_ai_sdk_refuses_a_malformed_approval(body: dict[str, Any]) -> None:
    with pytest.raises(WireError) as raised:
        aisdk.decode_request(body)
    assert raised.value.status == 400


def test_ag_ui_reads_data_and_remember_from_the_resume_payload() -> None:
    payload = {"approved": True, "reason": "fine", "data": {"x": 1}, "remember": "thread"}
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [],
        "resume": [{"interruptId": "apr_1", "status": "resolved", "payload": payload}],
    }
    (claim,) = agui.decode_request(body).claims
    assert claim.decision == Decision(True, "fine", data={"x": 1}, remember="thread")
    payload["remember"] = "always"
    with pytest.raises(WireError):
        agui.decode_request(body)


def test_remembered_approvals_are_bounded_per_principal() -> None:
    memory = RememberedApprovals(threads=10, per_principal=2)
    memory.of("bob", "b1").remember("tool")
    for thread in ("a1", "a2", "a3"):
        memory.of("alice", thread).remember("tool")
    assert not memory.of("alice", "a1").allows("tool")  # alice's oldest went
    assert memory.of("bob", "b1").allows("tool")  # bob's stayed
    assert memory.of("alice", "a3").allows("tool")


def test_remembered_approvals_are_bounded_per_thread_and_in_number() -> None:
    memory = RememberedApprovals(threads=2, per_principal=2, per_thread=1)
    alice = memory.of("alice", "t")
    alice.remember("a")
    alice.remember("b")
    assert list(memory.of("alice", "t")) == ["b"]  # the same object, its oldest forgotten
    assert list(memory.of("bob", "t")) == []  # another principal's thread of the same id
    memory.of("carol", "t")
    assert len(memory) == 2 and list(memory.of("alice", "t")) == []  # alice's was forgotten


# --- over HTTP ----------------------------------------------------------------------------


def as_user(request: Any) -> str | None:
    user: str | None = request.headers.get("x-user")
    return user


def events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [
        json.loads(block[len("data: ") :])
        for block in response.text.split("\n\n")
        if block.startswith("data: ")
    ]


def run_agui(
    client: httpx.Client, user: str, thread: str, messages: list[Any], resume: Any = None
) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"threadId": thread, "runId": f"r{len(messages)}", "messages": messages}
    if resume is not None:
        body["resume"] = resume
    return events(client.post("/agui", json=body, headers={"x-user": user}))


def history(out: list[dict[str, Any]], messages: list[Any]) -> list[Any]:
    """The conversation as the client keeps it: the messages plus what the run added."""
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    texts = []
    for e in out:
        if e["type"] == "TOOL_CALL_START":
            calls.append(
                {"id": e["toolCallId"], "type": "function", "function": {"name": e["toolCallName"]}}
            )
            calls[-1]["function"]["arguments"] = ""
        elif e["type"] == "TOOL_CALL_ARGS":
            next(c for c in calls if c["id"] == e["toolCallId"])["function"]["arguments"] += e[
                "delta"
            ]
        elif e["type"] == "TOOL_CALL_RESULT":
            results.append(
                {
                    "id": e["messageId"],
                    "role": "tool",
                    "toolCallId": e["toolCallId"],
                    "content": e["content"],
                }
            )
        elif e["type"] == "TEXT_MESSAGE_CONTENT":
            texts.append(e["delta"])
    added: list[Any] = []
    if calls:
        added.append({"id": f"a{len(messages)}", "role": "assistant", "toolCalls": calls})
    added += results
    if texts:
        added.append({"id": f"t{len(messages)}", "role": "assistant", "content": "".join(texts)})
    return messages + added


def interrupts(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = out[-1].get("outcome") or {}
    found: list[dict[str, Any]] = outcome.get("interrupts", [])
    return found


@pytest.mark.parametrize("signed", [False, True])
def test_a_thread_approval_is_the_principals_in_that_thread_only(signed: bool) -> None:
    agent, _ = make_agent()
    signer = ApprovalSigner(b"k" * 32) if signed else None
    app = create_app(agent, authenticate=as_user, signer=signer)
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        first = [{"id": "u1", "role": "user", "content": "write a"}]
        out = run_agui(client, "alice", "t1", first)
        (asked,) = interrupts(out)
        messages = history(out, first)
        resume = [
            {
                "interruptId": asked["id"],
                "status": "resolved",
                "payload": {"approved": True, "data": "note", "remember": "thread"},
            }
        ]
        out = run_agui(client, "alice", "t1", messages, resume)
        assert interrupts(out) == []
        messages = history(out, messages)
        assert '"data":"note"' in messages[2]["content"]
        later = [*messages, {"id": "u2", "role": "user", "content": "write b"}]
        assert interrupts(run_agui(client, "alice", "t1", later)) == []  # remembered
        fresh = [{"id": "u1", "role": "user", "content": "write b"}]
        assert len(interrupts(run_agui(client, "bob", "t1", fresh))) == 1  # bob's own t1
        assert len(interrupts(run_agui(client, "alice", "t2", fresh))) == 1  # another thread
