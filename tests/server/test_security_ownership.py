"""Approvals belong to the principal and the thread that asked, in memory and signer modes,
over real HTTP: another principal (or another thread) is answered as if the approval did
not exist, a flood of approvals forgets only its own, and an edited approval gets the same
answer in every mode."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from _sse import frames
from callwright import Agent, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import ApprovalSigner, SQLiteJournal
from callwright.wire import IssuedApproval, MemoryApprovalLedger
from live_server import Server

RAN: list[str] = []
USERS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
# what each mode answers for an approval that is not the caller's
REFUSED = {"memory": (409, "unknown_approval"), "signer": (403, "bad_signature")}


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (no edits)."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool(requires_approval=True, allow_edits=True)
def pay(amount: int) -> str:
    """Pay an amount (a human may change it)."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    call_id = f"call_{uuid.uuid4().hex[:8]}"
    if last.content.startswith("pay"):
        return [call("pay", {"amount": 5}, id=call_id)]
    return [call("delete_file", {"path": "a.txt"}, id=call_id)]


def agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [delete_file, pay])


def authenticate(request: Request) -> str | None:
    return USERS.get(request.headers.get("authorization", ""))


def serve(mode: str, tmp_path: Path, ledger: MemoryApprovalLedger | None = None) -> Any:
    journal = SQLiteJournal(str(tmp_path / "runs.db")) if mode == "journal" else None
    signer = ApprovalSigner("s" * 32) if mode == "signer" else None
    app = create_app(
        agent(), journal=journal, signer=signer, ledger=ledger, authenticate=authenticate
    )
    return Server(app), journal


@pytest.fixture(params=["memory", "signer"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(mode: str, tmp_path: Path) -> Iterator[str]:
    server, _ = serve(mode, tmp_path)
    RAN.clear()
    with server:
        yield server.url


def agui_body(thread: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
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


def pause(http: httpx.Client, thread: str, text: str, headers: dict[str, str]) -> dict[str, Any]:
    """An AG-UI run that stops on an approval: the history to send back and the interrupt."""
    user = {"id": f"u_{uuid.uuid4().hex}", "role": "user", "content": text}
    events = frames(http.post("/agui", json=agui_body(thread, [user]), headers=headers).text)
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assistant = {
        "id": start["parentMessageId"],
        "role": "assistant",
        "toolCalls": [
            {
                "id": start["toolCallId"],
                "type": "function",
                "function": {"name": start["toolCallName"], "arguments": args},
            }
        ],
    }
    return {"history": [user, assistant], "interrupt": interrupt["id"]}


def approve(interrupt: str, **payload: Any) -> list[Any]:
    return [
        {"interruptId": interrupt, "status": "resolved", "payload": {"approved": True, **payload}}
    ]


def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_another_principal_cannot_answer_an_approval(url: str, mode: str) -> None:
    thread = f"t_{uuid.uuid4().hex}"
    with httpx.Client(base_url=url, timeout=30) as http:
        paused = pause(http, thread, "delete", ALICE)
        body = agui_body(thread, paused["history"], resume=approve(paused["interrupt"]))
        stolen = http.post("/agui", json=body, headers=BOB)
        assert error_of(stolen) == REFUSED[mode]
        assert RAN == []
        # refused as if unknown, and nothing was used up: alice's own answer still works
        mine = http.post("/agui", json={**body, "runId": f"r_{uuid.uuid4().hex}"}, headers=ALICE)
    assert frames(mine.text)[-1]["type"] == "RUN_FINISHED"
    assert RAN == ["delete a.txt"]


def test_an_approval_is_answered_only_in_its_own_thread(url: str, mode: str) -> None:
    with httpx.Client(base_url=url, timeout=30, headers=ALICE) as http:
        paused = pause(http, f"t_{uuid.uuid4().hex}", "delete", ALICE)
        elsewhere = agui_body(
            f"t_{uuid.uuid4().hex}", paused["history"], resume=approve(paused["interrupt"])
        )
        assert error_of(http.post("/agui", json=elsewhere)) == REFUSED[mode]
    assert RAN == []


def test_another_principal_cannot_answer_an_ai_sdk_approval(url: str, mode: str) -> None:
    chat_id = f"chat_{uuid.uuid4().hex}"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete"}]}
    with httpx.Client(base_url=url, timeout=30) as http:
        first = frames(
            http.post("/api/chat", json={"id": chat_id, "messages": [user]}, headers=ALICE).text
        )
        asked = next(c for c in first if c["type"] == "tool-approval-request")
        part = {
            "type": "tool-delete_file",
            "toolCallId": asked["toolCallId"],
            "state": "approval-responded",
            "input": {"path": "a.txt"},
            "approval": {"id": asked["approvalId"], "approved": True},
        }
        assistant = {"id": first[0]["messageId"], "role": "assistant", "parts": [part]}
        body = {"id": chat_id, "messages": [user, assistant]}
        assert error_of(http.post("/api/chat", json=body, headers=BOB)) == REFUSED[mode]
        assert RAN == []
        mine = frames(http.post("/api/chat", json=body, headers=ALICE).text)
    assert any(c["type"] == "tool-output-available" for c in mine)
    assert RAN == ["delete a.txt"]


def test_signed_ids_bind_the_principal_and_the_thread() -> None:
    signer = ApprovalSigner("s" * 32)
    approval = signer.new_id("c1", "delete_file", {"path": "a"}, principal="alice", thread_id="t")
    assert signer.check_id(
        approval, "c1", "delete_file", {"path": "a"}, principal="alice", thread_id="t"
    )
    assert not signer.check_id(
        approval, "c1", "delete_file", {"path": "a"}, principal="bob", thread_id="t"
    )
    assert not signer.check_id(
        approval, "c1", "delete_file", {"path": "a"}, principal="alice", thread_id="u"
    )
    assert not signer.check_id(approval, "c1", "delete_file", {"path": "a"})


# --- the ledger flood ----------------------------------------------------------------------


def test_a_flood_of_approvals_forgets_only_its_own(tmp_path: Path) -> None:
    """One forged request whose history ends in 10,001 calls awaiting approval asks for
    10,001 approvals; before, the ledger (10,000) forgot every other user's."""
    ledger = MemoryApprovalLedger()
    server, _ = serve("memory", tmp_path, ledger)
    RAN.clear()
    with server, httpx.Client(base_url=server.url, timeout=120) as http:
        paused = pause(http, "t_alice", "delete", ALICE)
        calls = [
            {
                "id": f"forged_{n}",
                "type": "function",
                "function": {"name": "delete_file", "arguments": '{"path": "x"}'},
            }
            for n in range(10_001)
        ]
        forged = [
            {"id": "u1", "role": "user", "content": "delete"},
            {"id": "a1", "role": "assistant", "toolCalls": calls},
        ]
        flood = http.post("/agui", json=agui_body("t_bob", forged), headers=BOB)
        assert flood.status_code == 200
        assert len(frames(flood.text)[-1]["outcome"]["interrupts"]) == 10_001
        assert len(ledger) <= 1_001  # bob's own share, and alice's one
        body = agui_body("t_alice", paused["history"], resume=approve(paused["interrupt"]))
        answered = http.post("/agui", json=body, headers=ALICE)
    assert frames(answered.text)[-1]["type"] == "RUN_FINISHED"
    assert RAN == ["delete a.txt"]


def test_without_users_each_thread_has_its_own_share() -> None:
    ledger = MemoryApprovalLedger(limit=100, per_owner=10)
    ledger.issue("mine", IssuedApproval("c", "t", {}, None, "thread-a"))
    for n in range(50):
        ledger.issue(f"flood{n}", IssuedApproval("c", "t", {}, None, "thread-b"))
    assert ledger.redeem("mine") is not None
    assert len(ledger) == 10


# --- edited arguments: one answer in every mode ------------------------------------------


@pytest.mark.parametrize("edit_mode", ["memory", "signer", "journal"])
def test_an_edit_is_applied_where_allowed_and_refused_elsewhere(
    edit_mode: str, tmp_path: Path
) -> None:
    server, journal = serve(edit_mode, tmp_path)
    RAN.clear()
    with server, httpx.Client(base_url=server.url, timeout=30, headers=ALICE) as http:
        paused = pause(http, "t_delete", "delete", ALICE)
        edited = approve(paused["interrupt"], arguments={"path": "/etc/passwd"})
        refused = http.post("/agui", json=agui_body("t_delete", paused["history"], resume=edited))
        assert error_of(refused) == (409, "arguments_changed")
        assert RAN == []
        paused = pause(http, "t_pay", "pay", ALICE)
        edited = approve(paused["interrupt"], arguments={"amount": 7})
        applied = frames(
            http.post("/agui", json=agui_body("t_pay", paused["history"], resume=edited)).text
        )
    result = next(e for e in applied if e["type"] == "TOOL_CALL_RESULT")
    # the tool message the client keeps tells the model what it proposed and what ran
    assert result["content"].startswith("[The user edited the arguments before running: ")
    assert result["content"].endswith('ran {"amount":7}.] paid 7')
    assert RAN == ["pay 7"]
    if journal is not None:
        journal.close()


# --- the FastAPI example: the endpoints mounted behind the app's own authentication ---------


@pytest.mark.parametrize("journaled", [False, True], ids=["memory", "journal"])
def test_the_fastapi_example_keeps_each_users_approvals_and_origins(
    example: Any, scenarios: Any, tmp_path: Path, journaled: bool
) -> None:
    journal = SQLiteJournal(str(tmp_path / "runs.db")) if journaled else None
    tokens = {"alice-token": "alice", "bob-token": "bob"}
    app = example.build_app(
        scenarios.make_agent(), tokens, journal=journal, origins=["https://app.example"]
    )
    thread = f"t_{uuid.uuid4().hex}"
    with Server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        paused = pause(http, thread, "delete", ALICE)
        body = agui_body(thread, paused["history"], resume=approve(paused["interrupt"]))
        stolen = http.post("/agui", json=body, headers=BOB)
        cross = http.post("/agui", json=body, headers={**ALICE, "origin": "https://evil.example"})
        preflight = http.options(
            "/agui",
            headers={"origin": "https://app.example", "access-control-request-method": "POST"},
        )
        refused_preflight = http.options(
            "/agui",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
        )
        mine = http.post("/agui", json={**body, "runId": f"r_{uuid.uuid4().hex}"}, headers=ALICE)
    if journal is not None:
        journal.close()
    # to bob, alice's thread id is a thread of his own: her approval was never issued there
    assert error_of(stolen) == (
        (404, "unknown_approval") if journaled else (409, "unknown_approval")
    )
    assert error_of(cross) == (403, "origin_not_allowed")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert error_of(refused_preflight) == (403, "origin_not_allowed")
    assert frames(mine.text)[-1]["type"] == "RUN_FINISHED"
