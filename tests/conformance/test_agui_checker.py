"""The AG-UI checker against the specification's own fixtures, and its sequencing rules
against streams that break them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance import agui
from conformance.traffic import Exchange

FIXTURES = agui.VENDOR / "fixtures"
VALID = sorted(FIXTURES.glob("*/valid/*.json"))
INVALID = sorted(
    p for p in FIXTURES.glob("*/invalid/*.json") if not p.name.endswith(".expect.json")
)


def _errors(version: str | None, anchor: str, document: Any) -> list[tuple[str, str]]:
    """(keyword, instance location) of each error, JSON Schema's own output vocabulary."""
    check = agui.validator(version, anchor)
    return [
        (str(e.schema_path[-1]), "".join(f"/{p}" for p in e.instance_path))
        for e in check.iter_errors(document)
    ]


def test_the_vendored_corpus_is_there() -> None:
    assert len(VALID) > 100 and len(INVALID) > 50


@pytest.mark.parametrize("version", [None, "1.0", "1.1"])
@pytest.mark.parametrize("path", VALID, ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_valid_fixtures_pass(path: Path, version: str | None) -> None:
    document = json.loads(path.read_text())
    if version is not None and document.get("type") == "RUN_STARTED":
        document = {**document, "protocolVersion": version}
    assert _errors(version, path.parts[-3], document) == []


def _rules(version: str | None, anchor: str, document: Any) -> set[tuple[str, str]]:
    """Every rule ``document`` breaks, the branches of a union included: the checker's
    validator reports a failed ``oneOf`` as one error, the reference one keeps the tree."""
    schema = {**agui.schema_for(version), "$ref": f"#/$defs/{anchor}"}
    found: set[tuple[str, str]] = set()
    pending = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    while pending:
        error = pending.pop()
        found.add((str(error.validator), "".join(f"/{p}" for p in error.absolute_path)))
        pending += error.context or []
    return found


@pytest.mark.parametrize("version", [None, "1.1"])
@pytest.mark.parametrize("path", INVALID, ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_invalid_fixtures_fail_for_the_stated_rule(path: Path, version: str | None) -> None:
    """Rejected by the checker, and for the rule the fixture's ``.expect.json`` names (a
    document rejected for another reason would pass a checker missing that rule)."""
    expect = json.loads(path.with_name(path.stem + ".expect.json").read_text())
    document = json.loads(path.read_text())
    assert _errors(version, path.parts[-3], document) != []
    rules = _rules(version, path.parts[-3], document)
    assert (expect["keyword"], expect["instanceLocation"]) in rules, rules


# --- sequencing rules -------------------------------------------------------------------

BODY = {"threadId": "t1", "runId": "r1", "protocolVersion": "1.1", "messages": []}
START = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1", "protocolVersion": "1.1"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "success"}}
TEXT = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
]


def _call(call_id: str, name: str = "weather") -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def _exchange(
    events: list[Any], body: dict[str, Any] = BODY, *, raw: bytes | None = None
) -> Exchange:
    exchange = Exchange("POST", "/agui", "", {}, json.dumps(body).encode(), complete=True)
    exchange.stream.extend(raw or b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events))
    return exchange


def test_a_conforming_stream_passes() -> None:
    tools = [{"name": "pick", "description": "", "parameters": {}}]
    pending = {"type": "success", "pendingToolCallIds": ["c2"]}
    events = [
        START,
        *TEXT,
        *_call("c1"),
        {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c1", "content": "ok"},
        *_call("c2", "pick"),
        {**FINISH, "outcome": pending},
    ]
    assert agui.check(_exchange(events, {**BODY, "tools": tools})) == []


BROKEN: dict[str, tuple[list[Any], str]] = {
    "no RUN_STARTED first": ([*TEXT, FINISH], "not RUN_STARTED"),
    "no terminal event": ([START, *TEXT], "ends without RUN_FINISHED"),
    "an event after the end": ([START, FINISH, *TEXT[:1]], "after RUN_FINISHED"),
    "a message never closed": ([START, *TEXT[:2], FINISH], "never closed"),
    "content of a message not open": ([START, TEXT[1], FINISH], "not open"),
    "a result for no call": (
        [
            START,
            {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c9", "content": ""},
            FINISH,
        ],
        "never started",
    ),
    "another run's id": ([{**START, "runId": "r2"}, FINISH], "not the request's"),
    "a finish for another run": ([START, {**FINISH, "runId": "r2"}], "not RUN_STARTED's"),
    "a null optional": ([START, {**TEXT[0], "role": None}, *TEXT[1:], FINISH], "null"),
    "a field of no version": ([{**START, "extra": 1}, FINISH], "extra"),
    "another protocol version": ([{**START, "protocolVersion": "1.0"}, FINISH], "protocolVersion"),
    "interrupts sharing an id": (
        [
            START,
            *_call("c1"),
            *_call("c2"),
            {
                **FINISH,
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [
                        {"id": "i1", "reason": "tool_call", "toolCallId": "c1"},
                        {"id": "i1", "reason": "tool_call", "toolCallId": "c2"},
                    ],
                },
            },
        ],
        "interrupt ids repeat",
    ),
    "a front-end call not named pending": (
        [START, *_call("c1", "pick"), FINISH],
        "leave out front-end calls",
    ),
    "a pending call that is not open": (
        [START, {**FINISH, "outcome": {"type": "success", "pendingToolCallIds": ["zz"]}}],
        "not open",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_stream_fails(case: str) -> None:
    events, expected = BROKEN[case]
    tools = [{"name": "pick", "description": "", "parameters": {}}]
    problems = agui.check(_exchange(events, {**BODY, "tools": tools}))
    assert any(expected in p for p in problems), problems


def test_fields_of_version_1_are_refused_to_a_client_that_declared_none() -> None:
    body = {k: v for k, v in BODY.items() if k != "protocolVersion"}
    bare = {k: v for k, v in START.items() if k != "protocolVersion"}
    assert agui.check(_exchange([bare, FINISH], body)) == []
    problems = agui.check(_exchange([START, FINISH], body))
    assert any("protocolVersion" in p for p in problems), problems
    cancelled = {**FINISH, "outcome": {"type": "cancelled"}}
    assert agui.check(_exchange([bare, cancelled], body)) != []


def test_crlf_framing_fails() -> None:
    raw = b"".join(f"data: {json.dumps(e)}\r\n\r\n".encode() for e in [START, FINISH])
    problems = agui.check(_exchange([], raw=raw))
    assert any("CR" in p for p in problems), problems


@pytest.mark.parametrize(
    ("declared", "spoken"),
    [
        (None, None),
        ("0.0.59", None),
        ("1.0", "1.0"),
        ("1.0.3", "1.0"),
        ("1.1", "1.1"),
        ("1.4", "1.1"),
        ("2.0", "1.1"),
    ],
)
def test_the_version_is_negotiated_down(declared: str | None, spoken: str | None) -> None:
    assert agui.negotiated(declared) == spoken


STREAMS_1_1 = json.loads((agui.VENDOR / "streams-1.1.json").read_text())


@pytest.mark.parametrize("name", sorted(STREAMS_1_1))
def test_the_specs_1_1_tool_result_streams_pass_as_1_1_only(name: str) -> None:
    """spec/1.1's conformance streams of a tool result as content parts: every event is
    valid 1.1; the result's part list is not valid 1.0 (whose content is a string)."""
    events = STREAMS_1_1[name]
    assert [e for e in events if agui.schema_errors(e, "1.1")] == []
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert agui.schema_errors(result, "1.0") != []
    assert agui.schema_errors({**result, "content": "text"}, "1.0") == []
