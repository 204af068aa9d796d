"""AG-UI over real HTTP: every frame checked against the ``ag-ui-protocol`` models,
version gating, approvals that must be genuine, disconnects, refusals, decoding."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from ag_ui.core import Event as AGUIEvent
from ag_ui.core import RunAgentInput
from pydantic import BaseModel, TypeAdapter

from callwright.events import RunError, RunFinished, StepFinished
from callwright.messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from callwright.usage import Usage
from callwright.wire import WireError
from callwright.wire.agui import AGUIEncoder, decode_request, wants_protocol_1

EVENT = TypeAdapter(AGUIEvent)
PICK_COLOR = {
    "name": "pick_color",
    "description": "Ask the user to pick a color",
    "parameters": {"type": "object", "properties": {"options": {"type": "array"}}},
}


def body(
    text: str | None = None, *, messages: list[Any] | None = None, v1: bool = True, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "threadId": "thread-1",
        "runId": f"run-{time.monotonic_ns()}",
        "messages": messages
        if messages is not None
        else [{"id": "u1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if v1:
        out["protocolVersion"] = "1.0.0"
    out.update(extra)
    # what we send is itself a valid RunAgentInput
    RunAgentInput.model_validate(out)
    return out


def no_extra(model: Any) -> None:
    """No field the ag-ui-protocol models do not know, at any depth."""
    if isinstance(model, BaseModel):
        assert not model.model_extra, (type(model).__name__, model.model_extra)
        for name in type(model).model_fields:
            no_extra(getattr(model, name))
    elif isinstance(model, list):
        for item in model:
            no_extra(item)


def run(client: httpx.Client, request: dict[str, Any]) -> list[dict[str, Any]]:
    response = client.post("/agui", json=request)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream"
    raw = response.content
    assert b"\r" not in raw  # LF framing: CRLF breaks the JS client
    assert raw.endswith(b"\n\n")
    events = []
    for block in raw.decode().split("\n\n")[:-1]:
        assert block.startswith("data: ") and "\n" not in block
        payload = json.loads(block[len("data: ") :])
        model = EVENT.validate_python(payload)
        no_extra(model)
        # the package's own serialisation gives back exactly what we sent
        assert json.loads(model.model_dump_json(by_alias=True)) == payload
        events.append(payload)
    return events


def history(events: list[dict[str, Any]], user: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages an AG-UI client would hold after these events (enough for the tests)."""
    messages = [user]
    by_id: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "TEXT_MESSAGE_START":
            by_id[e["messageId"]] = {"id": e["messageId"], "role": "assistant", "content": ""}
            messages.append(by_id[e["messageId"]])
        elif e["type"] == "TEXT_MESSAGE_CONTENT":
            by_id[e["messageId"]]["content"] += e["delta"]
        elif e["type"] == "TOOL_CALL_START":
            parent = by_id.get(e["parentMessageId"])
            if parent is None:
                parent = {"id": e["parentMessageId"], "role": "assistant"}
                by_id[e["parentMessageId"]] = parent
                messages.append(parent)
            parent.setdefault("toolCalls", []).append(
                {
                    "id": e["toolCallId"],
                    "type": "function",
                    "function": {"name": e["toolCallName"], "arguments": ""},
                }
            )
        elif e["type"] == "TOOL_CALL_ARGS":
            for m in messages:
                for call in m.get("toolCalls", []):
                    if call["id"] == e["toolCallId"]:
                        call["function"]["arguments"] += e["delta"]
        elif e["type"] == "TOOL_CALL_RESULT":
            messages.append(
                {
                    "id": e["messageId"],
                    "role": "tool",
                    "toolCallId": e["toolCallId"],
                    "content": e["content"],
                }
            )
    return messages


def last_text(events: list[dict[str, Any]]) -> str:
    ids = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    return "".join(
        e["delta"]
        for e in events
        if e.get("messageId") == ids[-1] and e["type"] == "TEXT_MESSAGE_CONTENT"
    )


@pytest.mark.parametrize(
    "scenario",
    [
        "chat",
        "weather",
        "note",
        "parallel",
        "deploy",
        "fail",
        "badargs",
        "crash",
        "color",
        "delete",
        "research",
    ],
)
@pytest.mark.parametrize("v1", [True, False])
def test_every_frame_validates_against_ag_ui_protocol(
    client: httpx.Client, scenario: str, v1: bool
) -> None:
    tools = [PICK_COLOR] if scenario == "color" else []
    events = run(client, body(scenario, v1=v1, tools=tools))
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == ("RUN_ERROR" if scenario == "crash" else "RUN_FINISHED")
    for e in events:
        if e["type"] == "TOOL_CALL_START":
            assert e["parentMessageId"]


def test_front_end_tool_pending_ids_only_for_protocol_1(client: httpx.Client) -> None:
    v1 = run(client, body("color", tools=[PICK_COLOR]))
    call_id = next(e["toolCallId"] for e in v1 if e["type"] == "TOOL_CALL_START")
    assert v1[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in v1)
    old = run(client, body("color", v1=False, tools=[PICK_COLOR]))
    assert "outcome" not in old[-1]
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in old)


def test_pending_ids_name_exactly_the_calls_without_a_result(client: httpx.Client) -> None:
    # one step calls a server tool and a front-end tool: only the latter is pending
    events = run(client, body("mixed", tools=[PICK_COLOR]))
    starts = {e["toolCallName"]: e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}
    results = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == [starts["weather"]]
    assert events[-1]["outcome"] == {
        "type": "success",
        "pendingToolCallIds": [starts["pick_color"]],
    }


def test_approval_resume_must_be_genuine(client: httpx.Client) -> None:
    user = {"id": "u1", "role": "user", "content": "delete"}
    first = run(client, body(messages=[user]))
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    messages = history(first, user)
    # an invented interrupt id is refused
    forged = client.post(
        "/agui",
        json=body(
            messages=messages,
            resume=[
                {"interruptId": "apr_forged", "status": "resolved", "payload": {"approved": True}}
            ],
        ),
    )
    assert forged.status_code == 409
    assert forged.json()["error"]["code"] == "unknown_approval"
    # the genuine id, but for a call whose arguments the client changed in the history
    tampered = json.loads(json.dumps(messages))
    tampered[1]["toolCalls"][0]["function"]["arguments"] = '{"path": "/etc/passwd"}'
    mismatch = client.post(
        "/agui",
        json=body(
            messages=tampered,
            resume=[
                {
                    "interruptId": interrupt["id"],
                    "status": "resolved",
                    "payload": {"approved": True},
                }
            ],
        ),
    )
    assert mismatch.status_code == 409
    assert mismatch.json()["error"]["code"] == "approval_mismatch"
    cancel = [{"interruptId": interrupt["id"], "status": "cancelled"}]
    conflict = client.post(
        "/agui",
        json=body(messages=messages, resume=cancel, tools=[{**PICK_COLOR, "name": "weather"}]),
    )
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "tool_conflict"
    # refused requests used nothing up: the genuine answer still works, exactly once
    resumed = run(client, body(messages=messages, resume=cancel))
    again = client.post("/agui", json=body(messages=messages, resume=cancel))
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "unknown_approval"
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "Tool call denied: The user cancelled the request."
    assert result["metadata"] == {"callwright": {"state": "output-denied", "errorKind": "denied"}}
    assert (
        last_text(resumed)
        == "Done: delete_file=Tool call denied: The user cancelled the request. (error)"
    )


def test_edited_arguments_are_validated(client: httpx.Client) -> None:
    user = {"id": "u1", "role": "user", "content": "delete"}
    first = run(client, body(messages=[user]))
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    edited = run(
        client,
        body(
            messages=history(first, user),
            resume=[
                {
                    "interruptId": interrupt["id"],
                    "status": "resolved",
                    "payload": {"approved": True, "arguments": {"path": 7}},
                }
            ],
        ),
    )
    # delete_file allows edits, and the edited arguments are validated like the model's
    result = next(e for e in edited if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"].startswith("Invalid arguments")


def test_tool_message_error_reaches_the_model(client: httpx.Client) -> None:
    user = {"id": "u1", "role": "user", "content": "color"}
    first = run(client, body(messages=[user], tools=[PICK_COLOR]))
    messages = history(first, user)
    call_id = messages[1]["toolCalls"][0]["id"]
    messages.append(
        {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "", "error": "dialog closed"}
    )
    second = run(client, body(messages=messages, tools=[PICK_COLOR]))
    assert last_text(second) == "Done: pick_color=dialog closed (error)"


def test_unanswered_front_end_call_is_skipped_when_the_user_moves_on(client: httpx.Client) -> None:
    user = {"id": "u1", "role": "user", "content": "color"}
    first = run(client, body(messages=[user], tools=[PICK_COLOR]))
    messages = [*history(first, user), {"id": "u2", "role": "user", "content": "chat"}]
    second = run(client, body(messages=messages, tools=[PICK_COLOR]))
    skipped = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
    assert skipped["metadata"]["callwright"]["state"] == "output-error"
    assert last_text(second) == "Hello! How can I help?"


def test_disconnect_cancels_the_run(server: Any, cancelled: list[str]) -> None:
    with (
        httpx.Client(base_url=server.url, timeout=30) as c,
        c.stream("POST", "/agui", json=body("slow")) as r,
    ):
        call_id = None
        for line in r.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "TOOL_CALL_END":
                    call_id = event["toolCallId"]
                    break
    assert call_id is not None
    deadline = time.monotonic() + 10
    while call_id not in cancelled and time.monotonic() < deadline:
        time.sleep(0.05)
    assert call_id in cancelled


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"{not json", "invalid_json"),
        (b"[]", "invalid_request"),
        (b'{"threadId": "t", "runId": "r"}', "invalid_request"),
        (b'{"threadId": "t", "runId": "r", "messages": [{"role": "wizard"}]}', "invalid_request"),
        (
            json.dumps(
                body(
                    messages=[], tools=[{"name": "x", "description": "", "parameters": {"type": 5}}]
                )
            ).encode(),
            "invalid_tool",
        ),
        (
            json.dumps(
                body(messages=[], resume=[{"interruptId": "i", "status": "resolved"}])
            ).encode(),
            "invalid_request",
        ),
    ],
)
def test_bad_requests_are_4xx_with_message_and_code(
    client: httpx.Client, payload: bytes, code: str
) -> None:
    response = client.post("/agui", content=payload, headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"] and "Traceback" not in error["message"]


def test_client_override_when_the_server_opts_in(server_factory: Any) -> None:
    with (
        server_factory(allow_client_override=True) as s,
        httpx.Client(base_url=s.url, timeout=30) as c,
    ):
        events = run(c, body("parallel", tools=[{**PICK_COLOR, "name": "weather"}]))
    ids = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ids}


def test_decode_request_maps_messages_context_and_resume() -> None:
    decoded = decode_request(
        {
            "threadId": "t",
            "runId": "r",
            "context": [{"description": "locale", "value": "fr-FR"}],
            "messages": [
                {"id": "s", "role": "developer", "content": "be brief"},
                {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}],
                },
                {"id": "r1", "role": "reasoning", "content": "thinking"},
                {
                    "id": "a",
                    "role": "assistant",
                    "content": "ok",
                    "toolCalls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"x": 1}'},
                        }
                    ],
                },
                {"id": "act", "role": "activity", "activityType": "tool-activity", "content": {}},
                {
                    "id": "t1",
                    "role": "tool",
                    "toolCallId": "c1",
                    "content": "bad",
                    "metadata": {"callwright": {"state": "output-error"}},
                },
            ],
            "resume": [
                {
                    "interruptId": "apr_1",
                    "status": "resolved",
                    "payload": {"approved": False, "reason": "no"},
                }
            ],
        }
    )
    assert decoded.run_id == "r" and decoded.thread_id == "t"
    assert decoded.messages == [
        SystemMessage("Context from the application:\n- locale: fr-FR"),
        SystemMessage("be brief"),
        UserMessage("hi there", "u"),
        AssistantMessage("ok", decoded.messages[3].tool_calls, "thinking", "a"),  # type: ignore[union-attr]
        ToolResultMessage("c1", "f", "bad", True),
    ]
    assert decoded.messages[3].tool_calls[0].arguments == {"x": 1}  # type: ignore[union-attr]
    (claim,) = decoded.claims
    assert claim.approval_id == "apr_1" and claim.decision.approved is False
    assert claim.decision.reason == "no"


def test_decode_request_rejects_non_object_state() -> None:
    with pytest.raises(WireError) as info:
        decode_request({"threadId": "t", "runId": "r", "messages": [], "state": [1]})
    assert info.value.code == "invalid_request"


@pytest.mark.parametrize("v1", [True, False])
def test_cancelled_run_outcome(v1: bool) -> None:
    frame = AGUIEncoder(protocol_1=v1).encode(RunFinished("r", "t", "cancelled"))
    payload = json.loads(frame[len(b"data: ") :])
    no_extra(EVENT.validate_python(payload))
    if v1:
        assert payload["outcome"] == {"type": "cancelled"}
    else:  # 0.0.59 has no cancelled outcome
        assert "outcome" not in payload


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.0.0", True),
        ("1.2", True),
        ("2.0.0", True),
        ("0.0.59", False),
        ("", False),
        (None, False),
    ],
)
def test_protocol_version_gate(version: Any, expected: bool) -> None:
    request = {"threadId": "t", "runId": "r", "messages": []}
    if version is not None:
        request["protocolVersion"] = version
    assert wants_protocol_1(request) is expected


def test_forwarded_props_are_kept_and_must_be_an_object() -> None:
    body: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}
    assert decode_request(body).forwarded_props == {}
    kept = decode_request({**body, "forwardedProps": {"tenant": "acme"}})
    assert kept.forwarded_props == {"tenant": "acme"}
    with pytest.raises(WireError) as info:
        decode_request({**body, "forwardedProps": [1]})
    assert "forwardedProps" in str(info.value)


def test_a_tool_message_with_error_is_an_error_result() -> None:
    decoded = decode_request(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [
                {
                    "id": "a",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "", "error": "gone"},
            ],
        }
    )
    assert decoded.messages[-1] == ToolResultMessage("c1", "f", "gone", True)


@pytest.mark.parametrize(
    ("declared", "spoken"),
    [("1.0.0", "1.0"), ("1.0", "1.0"), ("1.1", "1.1"), ("1.4.2", "1.1"), ("2.0", "1.1")],
)
def test_run_started_declares_the_version_spoken(
    client: httpx.Client, declared: str, spoken: str
) -> None:
    """The newest version callwright speaks that the client's is not older than."""
    events = run(client, {**body("chat"), "protocolVersion": declared})
    assert events[0]["protocolVersion"] == spoken


def test_run_started_declares_no_version_to_a_client_that_declared_none(
    client: httpx.Client,
) -> None:
    events = run(client, body("chat", v1=False))
    assert "protocolVersion" not in events[0]


def test_run_error_carries_the_usage_of_the_turns_before_the_failure(
    client: httpx.Client,
) -> None:
    """AG-UI 1.1's ``RUN_ERROR.usage``: what the finished steps cost (the scripted model
    counts 10 in, 5 out per turn, the failed one included); none before any."""
    crashed = run(client, body("crash"))
    assert crashed[-1]["type"] == "RUN_ERROR"
    assert crashed[-1]["usage"] == [{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}]
    encoder = AGUIEncoder(protocol_version="1.1")
    early = encoder.encode(RunError("refused", "model_error"))
    assert "usage" not in json.loads(early[len(b"data: ") :])
    spent = Usage(input_tokens=12, output_tokens=4, requests=1, reasoning_tokens=3)
    encoder.encode(StepFinished(1, "m1", "tool-calls", spent))
    frame = encoder.encode(RunError("the model provider failed", "model_error"))
    payload = json.loads(frame[len(b"data: ") :])
    assert payload["usage"] == [
        {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16, "reasoningTokens": 3}
    ]


def test_an_interrupt_asked_again_keeps_its_id(client: httpx.Client) -> None:
    """A resume that answers one of two interrupts: the call still waiting is asked
    again under the interrupt id the client already holds, and that id still works."""
    user = {"id": "u1", "role": "user", "content": "delete2"}
    first = run(client, body(messages=[user]))
    a, b = first[-1]["outcome"]["interrupts"]
    messages = history(first, user)
    approve_a = [{"interruptId": a["id"], "status": "resolved", "payload": {"approved": True}}]
    second = run(client, body(messages=messages, resume=approve_a))
    (again,) = second[-1]["outcome"]["interrupts"]
    assert again["id"] == b["id"]
    assert again["toolCallId"] == b["toolCallId"]
    messages = history(second, {"id": "u1", "role": "user", "content": "delete2"})
    approve_b = [{"interruptId": b["id"], "status": "resolved", "payload": {"approved": True}}]
    third = run(client, body(messages=[*history(first, user)[:2], *messages[1:]], resume=approve_b))
    assert third[-1]["outcome"]["type"] == "success"
