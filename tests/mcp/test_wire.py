"""An MCP server's question (elicitation) reaching a front end over real HTTP.

The agent's tool is server-everything's ``trigger-elicitation-request``: the run pauses
with an AG-UI ``input_required`` interrupt (the requested schema as ``responseSchema``)
or, on the AI SDK stream, a ``data-input-request`` part beside the call's
input-available part; the answer (a ``resume`` entry, or ``addToolOutput``'s output)
resumes the very MCP call. Answers the server did not ask for are refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import Event as AGUIEvent
from ag_ui.core import RunAgentInput
from pydantic import TypeAdapter

from _sse import frames
from callwright import Agent, tool
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from live_server import Server

EVENT = TypeAdapter(AGUIEvent)
ASK = "trigger-elicitation-request"


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (asks a human first)."""
    return f"deleted {path}"


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        return ["Done: " + " | ".join(r.content.replace("\n", " ") for r in results)]
    if user.content == "delete":
        return [call("delete_file", {"path": "/tmp/x"}, id=f"call_{uuid.uuid4().hex[:8]}")]
    return [call(ASK, {}, id=f"call_{uuid.uuid4().hex[:8]}")]


def make_agent(everything: MCPServer) -> Agent:
    return Agent(ScriptedModel(script), [delete_file], toolsets=[everything])


def everything(command: list[str]) -> MCPServer:
    return MCPServer.stdio(command[0], command[1:], name="everything")


@pytest.fixture(scope="module")
def server(everything_command: list[str]) -> Iterator[Server]:
    with Server(create_app(make_agent(everything(everything_command)))) as running:
        yield running


# --- AG-UI --------------------------------------------------------------------------------


def agui_body(thread: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    body = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        "protocolVersion": "1.0.0",
        **extra,
    }
    RunAgentInput.model_validate(body)
    return body


def agui_messages(events: list[Any]) -> list[dict[str, Any]]:
    """The assistant message (with its tool calls) that a client keeps from a run."""
    calls: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "TOOL_CALL_START":
            calls[e["toolCallId"]] = {
                "id": e["toolCallId"],
                "type": "function",
                "function": {"name": e["toolCallName"], "arguments": ""},
            }
        elif e["type"] == "TOOL_CALL_ARGS":
            calls[e["toolCallId"]]["function"]["arguments"] += e["delta"]
    return [{"id": f"a-{uuid.uuid4().hex}", "role": "assistant", "toolCalls": list(calls.values())}]


def agui_ask(client: httpx.Client) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    thread = f"t-{uuid.uuid4().hex}"
    user = [{"id": "u1", "role": "user", "content": "ask"}]
    events = frames(client.post("/agui", json=agui_body(thread, user)))
    for event in events:
        EVENT.validate_python(event)
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", events
    (interrupt,) = finished["outcome"]["interrupts"]
    return thread, user + agui_messages(events), interrupt


@pytest.mark.parametrize(
    ("resume", "expected"),
    [
        ({"status": "resolved", "payload": {"name": "Ada"}}, "- Name: Ada"),
        ({"status": "cancelled", "payload": {"action": "decline"}}, "declined"),
        ({"status": "cancelled"}, "cancelled"),
    ],
)
def test_agui_interrupt_and_resume(server: Server, resume: dict[str, Any], expected: str) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        thread, messages, interrupt = agui_ask(client)
        assert interrupt["reason"] == "input_required"
        assert interrupt["id"].startswith("inp_")
        assert interrupt["message"] == "Please provide inputs for the following fields:"
        assert interrupt["responseSchema"]["required"] == ["name"]
        assert interrupt["responseSchema"]["properties"]["name"]["type"] == "string"
        assert interrupt["toolCallId"] == messages[-1]["toolCalls"][0]["id"]
        entry = {"interruptId": interrupt["id"], **resume}
        events = frames(client.post("/agui", json=agui_body(thread, messages, resume=[entry])))
        again = client.post("/agui", json=agui_body(thread, messages, resume=[entry]))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (
        expected in result["content"].lower()
        if expected.islower()
        else expected in result["content"]
    )
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
    assert again.status_code == 409  # an answer is honoured once


def test_agui_answer_must_be_the_form(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        thread, messages, interrupt = agui_ask(client)
        entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": True}
        refused = client.post("/agui", json=agui_body(thread, messages, resume=[entry]))
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_request"


def test_an_answer_to_an_approval_is_refused_as_a_question(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        thread = f"t-{uuid.uuid4().hex}"
        user = [{"id": "u1", "role": "user", "content": "delete"}]
        events = frames(client.post("/agui", json=agui_body(thread, user)))
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        assert interrupt["reason"] == "tool_call"
        forged = {"interruptId": "inp_" + interrupt["id"], "status": "resolved", "payload": {}}
        messages = user + agui_messages(events)
        refused = client.post("/agui", json=agui_body(thread, messages, resume=[forged]))
    assert refused.status_code == 409


# --- AI SDK -------------------------------------------------------------------------------


def test_ai_sdk_data_part_and_add_tool_output(server: Server) -> None:
    headers = {"x-ai-sdk-version": "7"}
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "ask"}]}
    with httpx.Client(base_url=server.url, timeout=60, headers=headers) as client:
        chat = f"c-{uuid.uuid4().hex}"
        first = frames(client.post("/api/chat", json={"id": chat, "messages": [user]}))
        request = next(f for f in first if f["type"] == "data-input-request")
        available = next(f for f in first if f["type"] == "tool-input-available")
        assert first[-1] == {"type": "finish", "finishReason": "tool-calls"}
        data = request["data"]
        assert request["id"] == f"input-{available['toolCallId']}"
        assert data["toolCallId"] == available["toolCallId"] and data["toolName"] == ASK
        assert data["requestId"].startswith("inp_")
        assert data["requestedSchema"]["required"] == ["name"]
        part = {
            "type": f"tool-{ASK}",
            "toolCallId": data["toolCallId"],
            "state": "output-available",
            "input": {},
            "output": {
                "requestId": data["requestId"],
                "action": "accept",
                "content": {"name": "Bo"},
            },
        }
        start = next(f for f in first if f["type"] == "start")
        reply = {
            "id": start["messageId"],
            "role": "assistant",
            "parts": [{"type": "step-start"}, part],
        }
        second = frames(client.post("/api/chat", json={"id": chat, "messages": [user, reply]}))
    output = next(f for f in second if f["type"] == "tool-output-available")
    assert output["toolCallId"] == data["toolCallId"] and "- Name: Bo" in output["output"]
    assert "".join(f.get("delta", "") for f in second if f["type"] == "text-delta").startswith(
        "Done: "
    )


def test_the_app_lifespan_closes_the_sessions(everything_command: list[str]) -> None:
    import socket
    import threading
    import time

    import uvicorn

    server = everything(everything_command)
    closed: list[bool] = []
    close = server.aclose

    async def spy() -> None:
        closed.append(server._connection._owner is not None)
        await close()

    server.aclose = spy  # type: ignore[method-assign]
    app = create_app(make_agent(server))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    running = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        while not running.started:
            time.sleep(0.02)
        with httpx.Client(base_url=url, timeout=60) as client:
            thread_id = f"t-{uuid.uuid4().hex}"
            user = [{"id": "u1", "role": "user", "content": "ask"}]
            events = frames(client.post("/agui", json=agui_body(thread_id, user)))
        assert events[-1]["type"] == "RUN_FINISHED"
        assert server._connection._owner is not None  # the session is open
    finally:
        running.should_exit = True
        thread.join(20)
        sock.close()
    assert closed == [True]  # closed by the app's lifespan while the session was open
    assert server._connection._owner is None
