"""An MCP server's question (elicitation) on a journaled server, over real HTTP, on both
backends: the question is a pending call of kind ``input`` in the journal (its state,
the parked MCP call's handle, kept there and never sent), the answer is checked like an
approval and resumes the very MCP call in the same process. After a restart the stdio
MCP server that asked is gone with its process: the answer is still accepted, and the
call ends with the clear error result that says to call the tool again. A server of the
2026-07-28 revision keeps nothing open (its question rides the call's result, with a
sealed state the journal keeps with the question): after a restart the answer calls the
tool again and its real result reaches the model.

The servers here run their app's lifespan, as ``callwright serve`` does: shutting one
down closes its MCP sessions (the server-everything subprocess) and its journal."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import httpx
import uvicorn

from _sse import frames
from callwright import Agent
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import open_journal

ASK = "trigger-elicitation-request"


def asking(tool: str, arguments: dict[str, Any]) -> Callable[[ModelRequest], list[Any]]:
    """Call ``tool`` once, then say what the call returned."""

    def script(request: ModelRequest) -> list[Any]:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results and not isinstance(request.messages[-1], UserMessage):
            return ["Done: " + results[-1].content.replace("\n", " ")]
        return [call(tool, arguments, id=f"call_{uuid.uuid4().hex[:8]}")]

    return script


def make_agent(command: list[str]) -> Agent:
    """Calls server-everything's tool that asks (a 2025-11-25 server)."""
    everything = MCPServer.stdio(command[0], command[1:], name="everything")
    return Agent(ScriptedModel(asking(ASK, {}), record=False), toolsets=[everything])


def agui_body(thread: str, messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": f"run-{uuid.uuid4().hex}", "messages": messages,
            "tools": [], "context": [], "state": {}, "forwardedProps": {},
            "protocolVersion": "1.0.0", **extra}  # fmt: skip


def agui_ask(client: httpx.Client) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """A new thread whose run paused on the tool's question: the thread, the messages a
    client keeps and the interrupt."""
    thread = f"t-{uuid.uuid4().hex}"
    user = [{"id": "u1", "role": "user", "content": "ask"}]
    events = frames(client.post("/agui", json=agui_body(thread, user)))
    assert events[-1]["type"] == "RUN_FINISHED", events
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    return thread, user + agui_reply(events), interrupt


def agui_reply(events: list[Any]) -> list[dict[str, Any]]:
    """The assistant message (with its tool calls) that a client keeps from a run."""
    calls: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "TOOL_CALL_START":
            function = {"name": e["toolCallName"], "arguments": ""}
            calls[e["toolCallId"]] = {"id": e["toolCallId"], "type": "function",
                                      "function": function}  # fmt: skip
        elif e["type"] == "TOOL_CALL_ARGS":
            calls[e["toolCallId"]]["function"]["arguments"] += e["delta"]
    return [{"id": f"a-{uuid.uuid4().hex}", "role": "assistant", "toolCalls": list(calls.values())}]


@contextmanager
def serving(command: list[str] | Agent, target: str) -> Iterator[str]:
    """A journaled server for an agent (by default ``make_agent``'s) with its lifespan on
    (a process of its own, as far as the MCP session and the journal go); yields its URL
    and shuts it down on exit."""
    agent = command if isinstance(command, Agent) else make_agent(command)
    app = create_app(agent, journal=open_journal(target))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def answered(events: list[Any]) -> tuple[str, dict[str, Any]]:
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    return result["content"], events[-1]


def test_the_answer_resumes_the_mcp_call(
    everything_command: list[str], journal_target: str
) -> None:
    with (
        serving(everything_command, journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        thread, messages, interrupt = agui_ask(client)
        assert interrupt["reason"] == "input_required" and "state" not in interrupt
        with closing(open_journal(journal_target)) as journal:
            [pending] = journal.pending(thread)
        assert (pending.kind, pending.approval_id) == ("input", interrupt["id"])
        assert pending.request is not None and pending.request.state["server"] == "everything"
        entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"name": "Ada"}}
        events = frames(client.post("/agui", json=agui_body(thread, messages, resume=[entry])))
        again = client.post("/agui", json=agui_body(thread, messages, resume=[entry]))
    content, finished = answered(events)
    assert "- Name: Ada" in content
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"] == {"type": "success"}
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_answered"


def test_the_ai_sdk_answer_resumes_the_mcp_call(
    everything_command: list[str], journal_target: str
) -> None:
    headers = {"x-ai-sdk-version": "7"}
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "ask"}]}
    chat = f"c-{uuid.uuid4().hex}"
    with (
        serving(everything_command, journal_target) as url,
        httpx.Client(base_url=url, timeout=60, headers=headers) as client,
    ):
        first = frames(client.post("/api/chat", json={"id": chat, "messages": [user]}))
        data = next(f for f in first if f["type"] == "data-input-request")["data"]
        output = {"requestId": data["requestId"], "action": "accept", "content": {"name": "Bo"}}
        part = {"type": f"tool-{data['toolName']}", "toolCallId": data["toolCallId"],
                "state": "output-available", "input": {}, "output": output}  # fmt: skip
        start = next(f for f in first if f["type"] == "start")
        reply = {"id": start["messageId"], "role": "assistant", "parts": [part]}
        second = frames(client.post("/api/chat", json={"id": chat, "messages": [user, reply]}))
    result = next(f for f in second if f["type"] == "tool-output-available")
    assert result["toolCallId"] == data["toolCallId"] and "- Name: Bo" in result["output"]


def test_after_a_restart_the_answer_gets_the_clear_error_result(
    everything_command: list[str], journal_target: str
) -> None:
    with (
        serving(everything_command, journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        thread, messages, interrupt = agui_ask(client)
    # the server (and the MCP server process holding the question) stopped
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"name": "Ada"}}
    with (
        serving(everything_command, journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        response = client.post("/agui", json=agui_body(thread, messages, resume=[entry]))
        assert response.status_code == 200, response.text
        events = frames(response)
        with closing(open_journal(journal_target)) as journal:
            history = journal.history(thread)
    content, finished = answered(events)
    assert "is no longer open" in content and "call the tool again" in content
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"] == {"type": "success"}
    [result] = [m for m in history if isinstance(m, ToolResultMessage)]
    assert result.is_error and "is no longer open" in result.content


def greeter(asking_stdio: Any) -> Agent:
    """Calls servers/asking.py's ``greet`` (a 2026-07-28 server whose request-state key
    outlives its process)."""
    model = ScriptedModel(asking("greet", {"greeting": "Hello"}), record=False)
    return Agent(model, toolsets=[asking_stdio()])


def test_after_a_restart_the_answer_calls_a_2026_tool_again(
    asking_stdio: Any, journal_target: str
) -> None:
    with (
        serving(greeter(asking_stdio), journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        thread, messages, interrupt = agui_ask(client)
    assert interrupt["reason"] == "input_required" and "state" not in interrupt
    assert interrupt["responseSchema"]["required"] == ["name"]
    with closing(open_journal(journal_target)) as journal:
        [pending] = journal.pending(thread)
    assert pending.request is not None and pending.request.state["requestState"]
    # the server stopped, and the MCP server process with it
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"name": "Ada"}}
    with (
        serving(greeter(asking_stdio), journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        events = frames(client.post("/agui", json=agui_body(thread, messages, resume=[entry])))
        with closing(open_journal(journal_target)) as journal:
            history = journal.history(thread)
    content, finished = answered(events)
    assert content == "Hello, Ada!"
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"] == {"type": "success"}
    [result] = [m for m in history if isinstance(m, ToolResultMessage)]
    assert not result.is_error and result.content == "Hello, Ada!"
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "Done: Hello, Ada!"  # what the model saw


def test_after_a_restart_an_ai_sdk_decline_reaches_the_2026_server(
    asking_stdio: Any, journal_target: str
) -> None:
    headers = {"x-ai-sdk-version": "7"}
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "ask"}]}
    chat = f"c-{uuid.uuid4().hex}"
    with (
        serving(greeter(asking_stdio), journal_target) as url,
        httpx.Client(base_url=url, timeout=60, headers=headers) as client,
    ):
        first = frames(client.post("/api/chat", json={"id": chat, "messages": [user]}))
    data = next(f for f in first if f["type"] == "data-input-request")["data"]
    output = {"requestId": data["requestId"], "action": "decline"}
    part = {"type": f"tool-{data['toolName']}", "toolCallId": data["toolCallId"],
            "state": "output-available", "input": {"greeting": "Hello"},
            "output": output}  # fmt: skip
    start = next(f for f in first if f["type"] == "start")
    reply = {"id": start["messageId"], "role": "assistant", "parts": [part]}
    with (
        serving(greeter(asking_stdio), journal_target) as url,
        httpx.Client(base_url=url, timeout=60, headers=headers) as client,
    ):
        second = frames(client.post("/api/chat", json={"id": chat, "messages": [user, reply]}))
    result = next(f for f in second if f["type"] == "tool-output-available")
    assert result["toolCallId"] == data["toolCallId"]
    assert result["output"] == {"result": "the server saw: decline"}


def confirmer(tasking: Any) -> Agent:
    """Calls servers/tasking.py's ``confirm``: a task that asks its user."""
    model = ScriptedModel(asking("confirm", {"what": "deploy"}), record=False)
    return Agent(model, toolsets=[MCPServer.http(tasking.url, name="tasking")])


def test_after_a_restart_the_answer_goes_to_the_same_task(
    tasking: Any, journal_target: str
) -> None:
    """The task id rides the question's state in the journal: the restarted server sends
    the answer to that task (``tasks/update``) and polls it; the tool is not called again."""
    with (
        serving(confirmer(tasking), journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        thread, messages, interrupt = agui_ask(client)
    assert interrupt["reason"] == "input_required" and "state" not in interrupt
    assert interrupt["responseSchema"]["required"] == ["reason"]
    with closing(open_journal(journal_target)) as journal:
        [pending] = journal.pending(thread)
    assert pending.request is not None and pending.request.state["task"]
    # the server stopped; the MCP server (another process) keeps its task
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"reason": "ok"}}
    with (
        serving(confirmer(tasking), journal_target) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        events = frames(client.post("/agui", json=agui_body(thread, messages, resume=[entry])))
    content, finished = answered(events)
    assert content == "deploy: accept ok"
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"] == {"type": "success"}
    assert tasking.calls() == ["confirm"]
