"""Ids and error texts over real HTTP: a client-chosen id (thread, run, message, tool call,
approval) outside 128 characters of ``[A-Za-z0-9._:-]`` is a 400 ``invalid_id`` that echoes
nothing (a run id with CR/LF used to drop the connection, a 200 KB one went into a
header); the ids the real clients make pass; the server's own ids are unguessable; and
no error text names an absolute server path."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callwright import Agent, tool
from callwright.messages import ToolResultMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import ApprovalSigner, SQLiteJournal
from callwright.wire import WireError
from callwright.wire._common import client_id
from live_server import Server

RAN: list[str] = []
BAD_IDS = {
    "crlf": "run\r\nx-injected: 1",
    "lf": "run\nid",
    "huge": "r" * 200_000,
    "129 characters": "r" * 129,
    "space": "run id",
    "slash": "../../etc/passwd",
    "unicode": "rün",
    "markup": "<script>",
    "quote": "r'1",
}


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return f"deleted {path}"


def script(request: ModelRequest) -> list[Any]:
    if isinstance(request.messages[-1], ToolResultMessage):
        return ["Done."]
    return [call("delete_file", {"path": "a"}, id=f"call_{uuid.uuid4().hex[:8]}")]


@pytest.fixture(scope="module", params=["memory", "signer", "journal"])
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp(str(request.param))
    journal = SQLiteJournal(str(folder / "runs.db")) if request.param == "journal" else None
    signer = ApprovalSigner("s" * 32) if request.param == "signer" else None
    agent = Agent(ScriptedModel(script, record=False), [delete_file])
    with Server(create_app(agent, journal=journal, signer=signer)) as server:
        yield server.url
    if journal is not None:
        journal.close()


def agui(**fields: Any) -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": "u1", "role": "user", "content": "delete"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **fields,
    }


def assistant(call_id: str) -> dict[str, Any]:
    function = {"name": "delete_file", "arguments": '{"path": "a"}'}
    return {
        "id": "a1",
        "role": "assistant",
        "toolCalls": [{"id": call_id, "type": "function", "function": function}],
    }


def agui_with(where: str, bad: str) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "content": "delete"}
    if where == "threadId":
        return agui(threadId=bad)
    if where == "runId":
        return agui(runId=bad)
    if where == "message id":
        return agui(messages=[{**user, "id": bad}])
    if where == "tool call id":
        return agui(messages=[user, assistant(bad)])
    if where == "toolCallId":
        result = {"id": "m2", "role": "tool", "toolCallId": bad, "content": "ok"}
        return agui(messages=[user, assistant("c1"), result])
    return agui(resume=[{"interruptId": bad, "status": "resolved", "payload": {"approved": True}}])


def chat_with(where: str, bad: str) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete"}]}
    part = {
        "type": "tool-delete_file",
        "toolCallId": "c1",
        "state": "approval-responded",
        "input": {"path": "a"},
        "approval": {"id": "apr_x", "approved": True},
    }
    if where == "chat id":
        return {"id": bad, "messages": [user]}
    if where == "message id":
        return {"id": "c", "messages": [{**user, "id": bad}]}
    if where == "toolCallId":
        part["toolCallId"] = bad
    else:
        part["approval"] = {"id": bad, "approved": True}
    return {"id": "c", "messages": [user, {"id": "a1", "role": "assistant", "parts": [part]}]}


def assert_refused_without_echo(response: httpx.Response, bad: str) -> None:
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert error["code"] == "invalid_id" and error["message"]
    assert bad not in response.text
    assert all(bad not in value for value in response.headers.values())
    assert len(response.content) < 500


AGUI_FIELDS = ["threadId", "runId", "message id", "tool call id", "toolCallId", "interruptId"]
CHAT_FIELDS = ["chat id", "message id", "toolCallId", "approval id"]


@pytest.mark.parametrize("name", list(BAD_IDS))
@pytest.mark.parametrize("where", AGUI_FIELDS)
def test_agui_refuses_a_bad_id(url: str, where: str, name: str) -> None:
    bad = BAD_IDS[name]
    response = httpx.post(url + "/agui", json=agui_with(where, bad), timeout=30)
    assert_refused_without_echo(response, bad)
    assert RAN == []


@pytest.mark.parametrize("name", ["crlf", "huge", "slash"])
@pytest.mark.parametrize("where", CHAT_FIELDS)
def test_chat_refuses_a_bad_id(url: str, where: str, name: str) -> None:
    bad = BAD_IDS[name]
    response = httpx.post(url + "/api/chat", json=chat_with(where, bad), timeout=30)
    assert_refused_without_echo(response, bad)


@pytest.mark.parametrize("raw", ["run%0D%0Ax-injected:%201", "r" * 300, "a%20b", "%C3%BC"])
def test_replay_refuses_a_bad_run_id(url: str, raw: str) -> None:
    response = httpx.get(f"{url}/runs/{raw}/events", timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_id"
    assert "x-injected" not in response.headers


REAL_CLIENT_IDS = [
    str(uuid.uuid4()),  # @ag-ui/client, the playground
    "aB3dE5fG7hJ9kL1m",  # ai's generateId
    "msg_01HZY8ZQ4K1V0Z3J8W6Q1D2E3F",
    "call_abc123XYZ",  # OpenAI
    "toolu_01A09q90qw90lq917835lq9",  # Anthropic
    "functions.get_weather:0",  # Kimi and others through OpenAI-compatible servers
    "chatcmpl-tool-3f1c9a0e2b",  # vLLM
    "apr_" + "A" * 16 + "." + "0" * 64,  # our signed approval ids
    "r" * 128,
]


@pytest.mark.parametrize("value", REAL_CLIENT_IDS)
def test_the_ids_real_clients_make_pass(value: str) -> None:
    assert client_id(value, "an id") == value


def test_an_invalid_id_is_refused_by_the_library_too() -> None:
    with pytest.raises(WireError) as info:
        client_id("a\r\nb", "runId")
    assert info.value.code == "invalid_id" and "runId" in info.value.message


def test_server_made_ids_are_unguessable(url: str) -> None:
    """A thread without an id gets a random one (in memory; the journal requires one);
    approval ids carry at least 96 random bits."""
    ids = []
    for _ in range(2):
        body = agui()
        del body["threadId"]
        response = httpx.post(url + "/agui", json=body, timeout=30)
        if response.status_code == 400:
            assert response.json()["error"]["code"] == "missing_thread_id"
            response = httpx.post(url + "/agui", json=agui(), timeout=30)
        events = [json.loads(b[6:]) for b in response.text.split("\n\n") if b.startswith("data: {")]
        ids.append((events[0]["threadId"], events[-1]["outcome"]["interrupts"][0]["id"]))
    for thread, approval in ids:
        assert re.fullmatch(r"t(hread)?_[0-9a-f]{32}", thread), thread
        assert re.fullmatch(r"apr_[A-Za-z0-9_-]{16,}(\.[0-9a-f]{64})?", approval), approval
    assert ids[0][0] != ids[1][0] and ids[0][1] != ids[1][1]


# --- error texts -------------------------------------------------------------------------------


def test_a_run_error_names_no_absolute_server_path(tmp_path: Path) -> None:
    """A model (or anything in the run) failing with an OSError: the client learns the
    file's name, not where the server keeps it."""
    secret = tmp_path / "models" / "weights.gguf"

    def broken(request: ModelRequest) -> list[Any]:
        raise FileNotFoundError(2, "No such file or directory", str(secret))

    agent = Agent(ScriptedModel(broken, record=False), [])
    with Server(create_app(agent)) as server:
        agui_raw = httpx.post(server.url + "/agui", json=agui(), timeout=30).text
        chat = {
            "id": "c",
            "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "x"}]}],
        }
        chat_raw = httpx.post(server.url + "/api/chat", json=chat, timeout=30).text
    for raw in (agui_raw, chat_raw):
        assert "weights.gguf" in raw
        assert str(tmp_path) not in raw and str(secret.parent) not in raw
