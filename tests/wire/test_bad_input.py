"""Bad input over both endpoints and the library API: each case gets its exact error
(a 4xx with a message and a code, never a stack trace) and the journal is unchanged.

The matrix and its outcomes are written up in RELIABILITY.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from _postgres import BACKENDS, drop_journal_target, journal_target_for
from _sse import frames
from callwright import Agent, Decision, Tool, ToolResultMessage, UserMessage, batched, tool
from callwright.messages import AssistantMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import ServerLimits, create_app
from callwright.store import SQLJournal, open_journal


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(requires_approval=True, allow_edits=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


@tool
def weather(city: str) -> str:
    """The weather."""
    return f"sunny in {city}"


confirm = Tool.from_schema(
    {"name": "confirmAction", "parameters": {"type": "object", "properties": {"action": {}}}},
    client=True,
)


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        word = last.content.split()[0]
        return {
            "delete": [call("delete_file", {"path": "a.txt"}, id=f"c_{uuid.uuid4().hex[:8]}")],
            "pay": [call("pay", {"amount": 500}, id=f"c_{uuid.uuid4().hex[:8]}")],
            "weather": [call("weather", {"city": "Oslo"}, id=f"c_{uuid.uuid4().hex[:8]}")],
            "ask": [call("confirmAction", {"action": "x"}, id=f"c_{uuid.uuid4().hex[:8]}")],
        }.get(word, ["Hello."])
    return ["Done."]


def make_agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [delete_file, pay, weather, confirm])


LIMITS = ServerLimits(
    max_body_bytes=64 * 1024,
    max_messages=50,
    max_json_depth=40,
    max_client_tools=4,
    max_parts=30,
    max_json_values=5_000,
    max_state_values=20,
    max_schema_values=30,
)
MANY_LISTS = {"x": [[]] * 6_000}
WIDE_STATE = {f"k{i}": i for i in range(21)}
ENUM_TOOL = [{"name": "pick", "parameters": {"properties": {"x": {"enum": list(range(30))}}}}]


@dataclass
class Env:
    url: str
    journal: SQLJournal
    http: httpx.Client
    facts: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module", params=BACKENDS)
def env(
    serve_app: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Env]:
    target = journal_target_for(request.param, request, tmp_path_factory.mktemp("bad"))
    journal = open_journal(target)
    app = create_app(make_agent(), journal=journal, limits=LIMITS)
    with serve_app(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield Env(server.url, journal, http)
    journal.close()
    drop_journal_target(target, request)


def agui(thread: str, text: str | None = "hello", **extra: Any) -> dict[str, Any]:
    messages = [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else []
    return {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def chat(chat_id: str, text: str | None = "hello", extra_messages: Any = ()) -> dict[str, Any]:
    messages = list(extra_messages)
    if text:
        messages.append(
            {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}
        )
    return {"id": chat_id, "messages": messages, "trigger": "submit-message"}


def pause_agui(env: Env, thread: str, word: str) -> dict[str, Any]:
    """Run an AG-UI request that pauses; return its interrupt and the call."""
    body = agui(thread, f"{word} please")
    raw = env.http.post("/agui", json=body).text
    events = frames(raw)
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", events
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    outcome = finished.get("outcome") or {}
    interrupt = (outcome.get("interrupts") or [{}])[0]
    return {"interrupt": interrupt.get("id"), "call_id": start["toolCallId"], "body": body}


def pause_chat(env: Env, chat_id: str, word: str) -> dict[str, Any]:
    raw = env.http.post("/api/chat", json=chat(chat_id, f"{word} please")).text
    chunks = frames(raw)
    request = next(c for c in chunks if c["type"] == "tool-approval-request")
    start = next(c for c in chunks if c["type"] == "tool-input-start")
    return {
        "approval": request["approvalId"],
        "call_id": request["toolCallId"],
        "tool": start["toolName"],
    }


def approval_part(tool_name: str, call_id: str, approval_id: str, args: Any) -> dict[str, Any]:
    return {
        "id": uuid.uuid4().hex,
        "role": "assistant",
        "parts": [
            {
                "type": f"tool-{tool_name}",
                "toolCallId": call_id,
                "state": "approval-responded",
                "input": args,
                "approval": {"id": approval_id, "approved": True},
            }
        ],
    }


def resume(interrupt: str | None, payload: Any = None, status: str = "resolved") -> list[Any]:
    return [{"interruptId": interrupt, "status": status, "payload": payload or {"approved": True}}]


@dataclass
class Case:
    name: str
    path: str
    make: Callable[[Env], Any]  # -> JSON body, or (bytes, headers)
    status: int
    code: str
    message: str = ""


def raw(data: bytes, **headers: str) -> Callable[[Env], Any]:
    return lambda env: (data, {"content-type": "application/json", **headers})


def nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


def agui_with(**fields: Any) -> Callable[[Env], Any]:
    return lambda env: {**agui(f"t_{uuid.uuid4().hex}"), **fields}


def replayed_agui(env: Env) -> Any:
    p = pause_agui(env, f"t_{uuid.uuid4().hex}", "delete")
    body = {**agui(p["body"]["threadId"], None), "resume": resume(p["interrupt"])}
    assert env.http.post("/agui", json=body).status_code == 200
    return {**body, "runId": f"run_{uuid.uuid4().hex}"}


def cross_thread_agui(env: Env) -> Any:
    p = pause_agui(env, f"alice_{uuid.uuid4().hex}", "delete")
    pause_agui(env, "mallory", "delete")
    return {**agui("mallory", None), "resume": resume(p["interrupt"])}


def edited_agui(env: Env) -> Any:
    p = pause_agui(env, f"t_{uuid.uuid4().hex}", "delete")
    payload = {"approved": True, "arguments": {"path": "/etc/passwd"}}
    return {**agui(p["body"]["threadId"], None), "resume": resume(p["interrupt"], payload)}


def invalid_edit_agui(env: Env) -> Any:
    p = pause_agui(env, f"t_{uuid.uuid4().hex}", "pay")
    payload = {"approved": True, "arguments": {"amount": "all of it"}}
    return {**agui(p["body"]["threadId"], None), "resume": resume(p["interrupt"], payload)}


def tool_result_for_unknown_call(env: Env) -> Any:
    thread = f"t_{uuid.uuid4().hex}"
    pause_agui(env, thread, "ask")
    body = agui(thread, None)
    body["messages"] = [
        {"id": "m1", "role": "tool", "toolCallId": "call_never_issued", "content": "true"}
    ]
    return body


def result_instead_of_approval(env: Env) -> Any:
    p = pause_agui(env, f"t_{uuid.uuid4().hex}", "delete")
    body = agui(p["body"]["threadId"], None)
    body["messages"] = [{"id": "m1", "role": "tool", "toolCallId": p["call_id"], "content": "ok"}]
    return body


def duplicate_run(env: Env) -> Any:
    body = agui(f"t_{uuid.uuid4().hex}", "hello")
    assert env.http.post("/agui", json=body).status_code == 200
    return body


def forged_chat(env: Env) -> Any:
    chat_id = f"c_{uuid.uuid4().hex}"
    p = pause_chat(env, chat_id, "delete")
    part = approval_part("delete_file", p["call_id"], "apr_forged", {"path": "a.txt"})
    return chat(chat_id, None, [part])


def not_requested_chat(env: Env) -> Any:
    chat_id = f"c_{uuid.uuid4().hex}"
    raw_text = env.http.post("/api/chat", json=chat(chat_id, "weather please")).text
    call_id = next(c for c in frames(raw_text) if c["type"] == "tool-input-start")["toolCallId"]
    part = approval_part("weather", call_id, "apr_invented", {"city": "Oslo"})
    return chat(chat_id, None, [part])


def replayed_chat(env: Env) -> Any:
    chat_id = f"c_{uuid.uuid4().hex}"
    p = pause_chat(env, chat_id, "delete")
    body = chat(
        chat_id,
        None,
        [approval_part("delete_file", p["call_id"], p["approval"], {"path": "a.txt"})],
    )
    assert env.http.post("/api/chat", json=body).status_code == 200
    return body


def cross_thread_chat(env: Env) -> Any:
    p = pause_chat(env, f"c_{uuid.uuid4().hex}", "delete")
    pause_chat(env, "mallory-chat", "delete")
    part = approval_part("delete_file", p["call_id"], p["approval"], {"path": "a.txt"})
    return chat("mallory-chat", None, [part])


def unknown_client_output_chat(env: Env) -> Any:
    chat_id = f"c_{uuid.uuid4().hex}"
    part = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-confirmAction",
                "toolCallId": "call_invented",
                "state": "output-available",
                "input": {"action": "x"},
                "output": "yes",
            }
        ],
    }
    pause_chat_ask = env.http.post("/api/chat", json=chat(chat_id, "ask please"))
    assert pause_chat_ask.status_code == 200
    return chat(chat_id, None, [part])


BIG = b'{"threadId": "t", "runId": "r", "messages": [], "pad": "' + b"x" * 70_000 + b'"}'
MANY = [{"id": f"m{i}", "role": "user", "content": "hi"} for i in range(51)]
SHADOW = [{"name": "weather", "description": "", "parameters": {"type": "object"}}]
FIVE_TOOLS = [{"name": "bad", "parameters": {"type": "nonsense"}}] + [
    {"name": f"t{i}"} for i in range(4)
]  # counted before any is decoded: the invalid first one is never looked at
MANY_PARTS = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}] * 31}]

CASES = [
    # --- AG-UI ---------------------------------------------------------------
    Case("agui malformed JSON", "/agui", raw(b'{"threadId": '), 400, "invalid_json"),
    Case("agui invalid UTF-8", "/agui", raw(b'{"threadId": "\xff\xfe"}'), 400, "invalid_utf8"),
    Case("agui body is an array", "/agui", raw(b"[1, 2]"), 400, "invalid_request"),
    Case("agui body is a string", "/agui", raw(b'"hello"'), 400, "invalid_request"),
    Case("agui empty body", "/agui", raw(b""), 400, "invalid_json"),
    Case(
        "agui messages missing",
        "/agui",
        lambda e: {"threadId": "t", "runId": "r"},
        400,
        "invalid_request",
    ),
    Case("agui messages not a list", "/agui", agui_with(messages={"a": 1}), 400, "invalid_request"),
    Case("agui message not an object", "/agui", agui_with(messages=["hi"]), 400, "invalid_request"),
    Case(
        "agui unknown role",
        "/agui",
        agui_with(messages=[{"id": "1", "role": "wizard", "content": "x"}]),
        400,
        "invalid_request",
    ),
    Case(
        "agui tool message without toolCallId",
        "/agui",
        agui_with(messages=[{"id": "1", "role": "tool", "content": "x"}]),
        400,
        "invalid_request",
    ),
    Case("agui state not an object", "/agui", agui_with(state=[1]), 400, "invalid_request"),
    Case("agui tools not a list", "/agui", agui_with(tools={"x": 1}), 400, "invalid_request"),
    Case(
        "agui tool without a name",
        "/agui",
        agui_with(tools=[{"description": "x"}]),
        400,
        "invalid_request",
    ),
    Case(
        "agui tool with an invalid schema",
        "/agui",
        agui_with(tools=[{"name": "t", "parameters": {"type": "nonsense"}}]),
        400,
        "invalid_tool",
    ),
    Case(
        "agui client tool shadows a server tool",
        "/agui",
        agui_with(tools=SHADOW),
        409,
        "tool_conflict",
    ),
    Case(
        "agui missing threadId",
        "/agui",
        lambda e: {"runId": "r", "messages": []},
        400,
        "missing_thread_id",
    ),
    Case("agui oversized body (declared)", "/agui", raw(BIG), 413, "body_too_large"),
    Case("agui too deeply nested", "/agui", raw(nested(100)), 400, "too_deep"),
    Case("agui pathologically nested", "/agui", raw(nested(50_000)), 413, "body_too_large"),
    Case("agui too many messages", "/agui", agui_with(messages=MANY), 413, "too_many_messages"),
    Case("agui too many tools", "/agui", agui_with(tools=FIVE_TOOLS), 413, "too_many_tools"),
    Case(
        "agui too many parts",
        "/agui",
        agui_with(
            messages=[
                {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}] * 31}
            ]
        ),
        413,
        "too_many_parts",
    ),
    Case("agui resume not a list", "/agui", agui_with(resume={"x": 1}), 400, "invalid_request"),
    Case(
        "agui too many values",
        "/agui",
        agui_with(forwardedProps=MANY_LISTS),
        413,
        "too_many_values",
    ),
    Case("agui state too large", "/agui", agui_with(state=WIDE_STATE), 413, "state_too_large"),
    Case(
        "agui forwardedProps too large",
        "/agui",
        agui_with(forwardedProps=WIDE_STATE),
        413,
        "state_too_large",
    ),
    Case(
        "agui tool schema too large", "/agui", agui_with(tools=ENUM_TOOL), 413, "schema_too_large"
    ),
    Case(
        "agui resume without interruptId",
        "/agui",
        agui_with(resume=[{"status": "resolved"}]),
        400,
        "invalid_request",
    ),
    Case(
        "agui resume with a bad status",
        "/agui",
        agui_with(resume=[{"interruptId": "x", "status": "maybe"}]),
        400,
        "invalid_request",
    ),
    Case(
        "agui resume payload without approved",
        "/agui",
        agui_with(resume=[{"interruptId": "x", "status": "resolved", "payload": {"ok": 1}}]),
        400,
        "invalid_request",
    ),
    Case(
        "agui forged approval id",
        "/agui",
        agui_with(resume=resume("apr_forged")),
        404,
        "unknown_approval",
    ),
    Case("agui replayed approval", "/agui", replayed_agui, 409, "already_answered"),
    Case("agui approval from another thread", "/agui", cross_thread_agui, 403, "wrong_thread"),
    Case(
        "agui arguments edited (edits not allowed)", "/agui", edited_agui, 409, "arguments_changed"
    ),
    Case("agui edited arguments fail the schema", "/agui", invalid_edit_agui, 422, "invalid_edit"),
    Case(
        "agui tool result for a call never issued",
        "/agui",
        tool_result_for_unknown_call,
        404,
        "unknown_call",
    ),
    Case(
        "agui tool result answering an approval",
        "/agui",
        result_instead_of_approval,
        404,
        "unknown_call",
    ),
    Case("agui duplicate request (same runId)", "/agui", duplicate_run, 409, "duplicate_request"),
    # --- AI SDK --------------------------------------------------------------
    Case(
        "chat malformed JSON", "/api/chat", raw(b'{"id": "c", "messages": ['), 400, "invalid_json"
    ),
    Case("chat invalid UTF-8", "/api/chat", raw(b'{"id": "\xc3\x28"}'), 400, "invalid_utf8"),
    Case("chat messages missing", "/api/chat", lambda e: {"id": "c"}, 400, "invalid_request"),
    Case(
        "chat message without parts",
        "/api/chat",
        lambda e: {"id": "c", "messages": [{"id": "1", "role": "user"}]},
        400,
        "invalid_request",
    ),
    Case(
        "chat unknown role",
        "/api/chat",
        lambda e: {"id": "c", "messages": [{"id": "1", "role": "robot", "parts": []}]},
        400,
        "invalid_request",
    ),
    Case(
        "chat approval part without approval id",
        "/api/chat",
        lambda e: chat(
            "c",
            None,
            [
                {
                    "id": "a",
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool-pay",
                            "toolCallId": "x",
                            "state": "approval-responded",
                            "input": {},
                            "approval": {"approved": True},
                        }
                    ],
                }
            ],
        ),
        400,
        "invalid_request",
    ),
    Case("chat missing chat id", "/api/chat", lambda e: {"messages": []}, 400, "missing_thread_id"),
    Case(
        "chat unsupported client version",
        "/api/chat",
        lambda e: (json.dumps(chat("c")).encode(), {"x-ai-sdk-version": "99"}),
        400,
        "unsupported_version",
    ),
    Case(
        "chat oversized body (streamed)",
        "/api/chat",
        lambda e: (iter([b'{"id": "c", "x": "', b"y" * 70_000, b'"}']), {}),
        413,
        "body_too_large",
    ),
    Case("chat too deeply nested", "/api/chat", raw(nested(60)), 400, "too_deep"),
    Case(
        "chat too many tools",
        "/api/chat",
        lambda e: {**chat("c-tools"), "tools": FIVE_TOOLS},
        413,
        "too_many_tools",
    ),
    Case(
        "chat too many parts",
        "/api/chat",
        lambda e: chat("c-parts", None, MANY_PARTS),
        413,
        "too_many_parts",
    ),
    Case(
        "chat too many values",
        "/api/chat",
        lambda e: {**chat("c-values"), "messages": [{"role": "user", "parts": [{}] * 6_000}]},
        413,
        "too_many_values",
    ),
    Case(
        "chat tool schema too large",
        "/api/chat",
        lambda e: {**chat("c-schema"), "tools": ENUM_TOOL},
        413,
        "schema_too_large",
    ),
    Case(
        "chat client tool shadows a server tool",
        "/api/chat",
        lambda e: {**chat("c"), "tools": SHADOW},
        409,
        "tool_conflict",
    ),
    Case("chat forged approval id", "/api/chat", forged_chat, 404, "unknown_approval"),
    Case(
        "chat approval for a call never asked about",
        "/api/chat",
        not_requested_chat,
        409,
        "approval_not_requested",
    ),
    Case("chat replayed approval", "/api/chat", replayed_chat, 409, "already_answered"),
    Case("chat approval from another thread", "/api/chat", cross_thread_chat, 403, "wrong_thread"),
    Case(
        "chat client output for a call never issued",
        "/api/chat",
        unknown_client_output_chat,
        404,
        "unknown_call",
    ),
    # --- ids, content types, origins, hosts ---------------------------------
    Case("agui run id with CR/LF", "/agui", agui_with(runId="r\r\nx-a: 1"), 400, "invalid_id"),
    Case(
        "agui run id of 5,000 characters", "/agui", agui_with(runId="r" * 5000), 400, "invalid_id"
    ),
    Case("agui thread id with a space", "/agui", agui_with(threadId="a b"), 400, "invalid_id"),
    Case(
        "agui tool call id with markup",
        "/agui",
        agui_with(
            messages=[
                {
                    "id": "a1",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "<b>",
                            "type": "function",
                            "function": {"name": "x", "arguments": "{}"},
                        }
                    ],
                }
            ]
        ),
        400,
        "invalid_id",
    ),
    Case(
        "agui interrupt id with CR/LF",
        "/agui",
        agui_with(resume=resume("apr\r\nx")),
        400,
        "invalid_id",
    ),
    Case(
        "agui text/plain body",
        "/agui",
        lambda e: (json.dumps(agui("t")).encode(), {"content-type": "text/plain"}),
        415,
        "unsupported_media_type",
    ),
    Case(
        "agui form post from another site",
        "/agui",
        lambda e: (
            b"threadId=t",
            {
                "content-type": "application/x-www-form-urlencoded",
                "origin": "https://evil.example",
            },
        ),
        403,
        "origin_not_allowed",
    ),
    Case(
        "agui JSON from another site",
        "/agui",
        lambda e: (
            json.dumps(agui("t")).encode(),
            {"content-type": "application/json", "origin": "https://evil.example"},
        ),
        403,
        "origin_not_allowed",
    ),
    Case(
        "agui DNS-rebinding Host",
        "/agui",
        lambda e: (
            json.dumps(agui("t")).encode(),
            {"content-type": "application/json", "host": "evil.example"},
        ),
        400,
        "invalid_host",
    ),
    Case("chat chat id with CR/LF", "/api/chat", lambda e: chat("c\r\nx"), 400, "invalid_id"),
    Case(
        "chat approval id of 200 characters",
        "/api/chat",
        lambda e: chat("c", None, [approval_part("pay", "c1", "a" * 200, {"amount": 1})]),
        400,
        "invalid_id",
    ),
    Case(
        "chat text/plain body",
        "/api/chat",
        lambda e: (json.dumps(chat("c")).encode(), {"content-type": "text/plain;charset=UTF-8"}),
        415,
        "unsupported_media_type",
    ),
    Case(
        "replay of a run id with CR/LF",
        "GET /runs/r%0D%0Ax/events",
        lambda e: None,
        400,
        "invalid_id",
    ),
    # --- the HTTP shell ------------------------------------------------------
    Case("GET on the AG-UI endpoint", "GET /agui", lambda e: None, 405, "method_not_allowed"),
    Case("unknown path", "/nowhere", lambda e: {}, 404, "not_found"),
    Case("replay of an unknown run", "GET /runs/nope/events", lambda e: None, 404, "unknown_run"),
    Case(
        "replay with a bad offset",
        "GET /runs/nope/events?after=-3",
        lambda e: None,
        400,
        "invalid_request",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_request(env: Env, case: Case) -> None:
    made = case.make(env)
    before = env.journal.snapshot()
    method, _, path = case.path.rpartition(" ")
    if method == "GET":
        response = env.http.get(path)
    elif isinstance(made, tuple):
        content, headers = made
        response = env.http.post(path, content=content, headers=headers)
    else:
        response = env.http.post(path, json=made)
    assert response.status_code == case.status, response.text
    error = response.json()["error"]
    assert error["code"] == case.code, error
    assert error["message"] and "Traceback" not in response.text
    assert env.journal.snapshot() == before


# --- the library API ----------------------------------------------------------------


def library_cases() -> list[tuple[str, Callable[[], Any], type[Exception], str]]:
    agent = make_agent()
    paused = [UserMessage("delete"), AssistantMessage("", [])]
    return [
        (
            "blueprint without a name",
            lambda: Tool.from_schema({"parameters": {}}),
            ValueError,
            "a tool needs a name",
        ),
        (
            "blueprint with an invalid schema",
            lambda: Tool.from_schema({"name": "x", "parameters": {"type": 3}}),
            Exception,
            "is not valid",
        ),
        ("batched(0)", lambda: batched(0), ValueError, "batched(n) needs n >= 1"),
        (
            "unknown strategy",
            lambda: Agent(ScriptedModel([]), strategy="random"),
            ValueError,
            "unknown strategy",
        ),
        (
            "mode the model lacks",
            lambda: Agent(ScriptedModel([]), mode="structured"),
            ValueError,
            "does not support structured mode",
        ),
        (
            "unknown model string",
            lambda: Agent("nosuch:pro"),
            ValueError,
            "unknown model 'nosuch:pro'",
        ),
        (
            "decision for a call that is not waiting",
            lambda: agent.start(messages=paused, decisions={"nope": Decision(True)}),
            ValueError,
            "decisions for calls that are not waiting: nope",
        ),
        (
            "decision after the call got its result",
            lambda: agent.start(
                messages=[
                    *paused[:1],
                    AssistantMessage(
                        "",
                        [__import__("callwright").ToolCallPart("c1", "delete_file", {"path": "a"})],
                    ),
                    ToolResultMessage("c1", "delete_file", "done"),
                ],
                decisions={"c1": Decision(True)},
            ),
            ValueError,
            "not waiting: c1",
        ),
    ]


@pytest.mark.parametrize(
    "name,make,error,text", library_cases(), ids=[c[0] for c in library_cases()]
)
def test_bad_library_input(
    name: str, make: Callable[[], Any], error: type[Exception], text: str
) -> None:
    with pytest.raises(error) as info:
        make()
    assert text in str(info.value)


def test_matrix_is_large_enough() -> None:
    assert len(CASES) + len(library_cases()) >= 40
