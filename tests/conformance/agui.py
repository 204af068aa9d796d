"""AG-UI conformance: every frame against the schema of the version the client declared,
and the stream against the sequencing rules the specification states in prose.

The schema is the vendored ``vendor/agui/schema.json`` (see ``vendor/README.md``), closed
(``unevaluatedProperties: false``), so a field a version does not define fails. Versions:

* ``0``: a client that declared no ``protocolVersion`` (``@ag-ui/client`` 0.0.x): the
  vendored schema as is;
* ``1.0`` and ``1.1``: the vendored schema plus ``VERSION_1_FIELDS``, the fields
  ``@ag-ui/core`` 1.0.0 declares beyond it, and ``RUN_STARTED.protocolVersion`` fixed to
  the version the producer speaks (``negotiated``);
* ``1.1`` also: ``VERSION_1_1_FIELDS``, the tool result as a list of content parts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

from .traffic import Exchange

VENDOR = Path(__file__).parent / "vendor" / "agui"
SPOKEN = ("1.0", "1.1")
"""The AG-UI versions callwright speaks, oldest first."""

# What @ag-ui/core 1.0.0 (tests/js: agui-client-1) declares beyond the vendored draft; each
# entry is a JSON pointer into $defs and the schema put there.
VERSION_1_FIELDS: dict[str, Any] = {
    "RunStartedEvent/properties/protocolVersion": {"type": "string"},
    "RunFinishedSuccessOutcome/properties/pendingToolCallIds": {
        "type": "array",
        "items": {"type": "string"},
    },
    "RunFinishedCancelledOutcome": {
        "type": "object",
        "properties": {"type": {"const": "cancelled"}},
        "required": ["type"],
        "unevaluatedProperties": False,
    },
}

# 1.1's tool results as content parts (spec/1.1/events/tool-calls; @ag-ui/core 1.0.0's
# ToolCallResultEventSchema: content is string | ContentPart[]): the draft's InputContent
# union, plus what 1.0.0's parts add to it, an optional part id and the provider-file
# source. The producer sends parts only to clients that declared 1.1.
VERSION_1_1_FIELDS: dict[str, Any] = {
    "ToolCallResultEvent/properties/content": {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/$defs/InputContent"}},
        ]
    },
    **{
        f"{part}InputContent/properties/id": {"type": "string"}
        for part in ("Image", "Audio", "Video", "Document")
    },
    "InputContentFileSource": {
        "$anchor": "InputContentFileSource",
        "type": "object",
        "properties": {
            "type": {"const": "file"},
            "value": {"type": "string"},
            "provider": {"type": "string"},
            "mimeType": {"type": "string"},
        },
        "required": ["type", "value"],
        "unevaluatedProperties": False,
    },
    "InputContentSource/oneOf": [
        {"$ref": "#/$defs/InputContentDataSource"},
        {"$ref": "#/$defs/InputContentUrlSource"},
        {"$ref": "#/$defs/InputContentFileSource"},
    ],
}

OPENERS = {
    "TEXT_MESSAGE_START": ("TEXT_MESSAGE_END", "messageId"),
    "TOOL_CALL_START": ("TOOL_CALL_END", "toolCallId"),
    "REASONING_START": ("REASONING_END", "messageId"),
    "REASONING_MESSAGE_START": ("REASONING_MESSAGE_END", "messageId"),
    "STEP_STARTED": ("STEP_FINISHED", "stepName"),
    "SUBAGENT_STARTED": ("SUBAGENT_FINISHED", "subagentRunId"),
}
CLOSERS = {end: (start, key) for start, (end, key) in OPENERS.items()}
CLOSERS["SUBAGENT_ERROR"] = ("SUBAGENT_STARTED", "subagentRunId")
CONTENT = {
    "TEXT_MESSAGE_CONTENT": ("TEXT_MESSAGE_START", "messageId"),
    "TOOL_CALL_ARGS": ("TOOL_CALL_START", "toolCallId"),
    "REASONING_MESSAGE_CONTENT": ("REASONING_MESSAGE_START", "messageId"),
}
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
ANY_VALUE = ("value", "result", "rawEvent")
"""Fields that hold any JSON value, null included."""


def schema_for(version: str | None) -> dict[str, Any]:
    """The whole schema a client of ``version`` (None: undeclared) is held to."""
    schema = json.loads((VENDOR / "schema.json").read_text())
    if version is None:
        return schema
    defs = schema["$defs"]
    fields = {**VERSION_1_FIELDS, **(VERSION_1_1_FIELDS if version == "1.1" else {})}
    for pointer, value in fields.items():
        *parents, last = pointer.split("/")
        node = defs
        for part in parents:
            node = node[part]
        node[last] = copy.deepcopy(value)
    defs["RunFinishedCancelledOutcome"]["$anchor"] = "RunFinishedCancelledOutcome"
    defs["RunFinishedOutcome"]["oneOf"].append({"$ref": "#/$defs/RunFinishedCancelledOutcome"})
    defs["RunStartedEvent"]["properties"]["protocolVersion"] = {"const": version}
    return schema


@cache
def validator(version: str | None, anchor: str) -> Any:
    """A validator of one definition (``anchor``) of the schema for ``version``."""
    schema = schema_for(version)
    return jsonschema_rs.validator_for({**schema, "$ref": f"#/$defs/{anchor}"})


@cache
def event_anchors() -> dict[str, str]:
    """Each event type's definition, read from the schema's ``Event`` union."""
    defs = json.loads((VENDOR / "schema.json").read_text())["$defs"]
    out = {}
    for ref in defs["Event"]["oneOf"]:
        name = ref["$ref"].rsplit("/", 1)[-1]
        out[defs[name]["properties"]["type"]["const"]] = name
    return out


def negotiated(declared: Any) -> str | None:
    """The version a producer speaking ``SPOKEN`` answers a client that declared
    ``declared`` with: the newest it speaks not newer than the client's (None: undeclared)."""
    if not isinstance(declared, str):
        return None
    try:
        wanted = tuple(int(p) for p in declared.split(".")[:2])
    except ValueError:
        return None
    if wanted[0] < 1:
        return None
    usable = [v for v in SPOKEN if tuple(int(p) for p in v.split(".")) <= wanted]
    return usable[-1] if usable else None


def schema_errors(event: Any, version: str | None) -> list[str]:
    """Why ``event`` is not a valid event of ``version`` (empty: it is)."""
    if not isinstance(event, dict) or event.get("type") not in event_anchors():
        return [f"not an AG-UI event: {str(event)[:80]}"]
    check = validator(version, event_anchors()[event["type"]])
    return [f"{e.instance_path}: {e.message}"[:300] for e in check.iter_errors(event)]


def frames(raw: bytes) -> Iterator[tuple[str, Any]]:
    """``(problem, None)`` for a badly framed block, else ``("", payload)``; heartbeats
    (SSE comments) are skipped."""
    text = raw.decode("utf-8", "replace")
    if "\r" in text:
        yield "a CR in the stream (frames must be LF only)", None
    blocks = text.split("\n\n")
    if blocks and blocks[-1] == "":
        blocks.pop()
    for block in blocks:
        if block.startswith(":"):
            continue
        if not block.startswith("data: ") or "\n" in block:
            yield f"a frame that is not one `data: ` line: {block[:80]!r}", None
            continue
        try:
            yield "", json.loads(block[len("data: ") :])
        except ValueError:
            yield f"a frame whose data is not JSON: {block[:80]!r}", None


def check(exchange: Exchange, known: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The AG-UI stream of ``exchange`` against the schema and the sequencing rules;
    ``known``: the tool calls earlier runs of the thread started (a journal answers them
    from its own history, not the request's)."""
    body = exchange.json_body()
    body = body if isinstance(body, dict) else {}
    version = negotiated(body.get("protocolVersion"))
    replay = exchange.method == "GET"
    if replay:  # the journal replays another request's stream: the stream says its version
        version = _declared(exchange) if b'"RUN_STARTED"' in exchange.stream else SPOKEN[-1]
    problems: list[str] = []
    events: list[dict[str, Any]] = []
    text = exchange.stream.decode("utf-8", "replace")
    if exchange.complete and text and not text.endswith("\n\n"):
        problems.append("the stream does not end with a blank line")
    for problem, payload in frames(bytes(exchange.stream)):
        if problem:
            problems.append(problem)
            continue
        for error in schema_errors(payload, version):
            problems.append(f"{payload.get('type')}: {error}")
        if isinstance(payload, dict):
            events.append(payload)
            nulls = [k for k, v in payload.items() if v is None and k not in ANY_VALUE]
            if nulls:
                problems.append(f"{payload.get('type')}: null optional field(s) {nulls}")
    from_start = not replay or exchange.query in ("", "after=0")
    first = events[0] if events else {}
    declares = first.get("type") == "RUN_STARTED" and "protocolVersion" in first
    if version is not None and first.get("type") == "RUN_STARTED" and not declares:
        problems.append(f"RUN_STARTED does not declare protocolVersion {version}")
    found = sequence_errors(events, body, exchange.complete, from_start, version, known)
    return problems + found


def sequence_errors(
    events: list[dict[str, Any]],
    body: dict[str, Any],
    complete: bool,
    from_start: bool = True,
    version: str | None = "1.1",
    known: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """The rules a validator of single documents cannot see."""
    problems: list[str] = []
    if not events:
        return ["an empty stream"] if complete else []
    if from_start:
        first = events[0]
        if first.get("type") not in ("RUN_STARTED", "RUN_ERROR"):  # a run refused at once
            problems.append(f"the first event is {first.get('type')}, not RUN_STARTED")
        for key in ("threadId", "runId"):
            if isinstance(body.get(key), str) and first.get(key) not in (None, body[key]):
                problems.append(f"RUN_STARTED.{key} {first.get(key)!r} is not the request's")
    started = next((e for e in events if e.get("type") == "RUN_STARTED"), None)
    open_: dict[tuple[str, str, str], dict[str, Any]] = {}
    calls, results = _request_calls(body)
    earlier = calls | known
    names: dict[str, str] = {}
    terminal: dict[str, Any] | None = None
    for index, event in enumerate(events):
        kind = event.get("type")
        if terminal is not None:
            problems.append(f"{kind} after {terminal.get('type')} (event {index})")
            break
        if kind in OPENERS:
            key = (kind, _scope(event), str(event.get(OPENERS[kind][1])))
            if key in open_:
                problems.append(f"{kind} {key[2]} opened twice")
            open_[key] = event
            if kind == "TOOL_CALL_START":
                calls.add(str(event.get("toolCallId")))
                names[str(event.get("toolCallId"))] = str(event.get("toolCallName"))
        elif kind in CLOSERS:
            start, field = CLOSERS[kind]
            scope = "" if start == "SUBAGENT_STARTED" else _scope(event)
            if open_.pop((start, scope, str(event.get(field))), None) is None and from_start:
                problems.append(f"{kind} {event.get(field)} closes nothing open")
        elif kind in CONTENT:
            start, field = CONTENT[kind]
            if (start, _scope(event), str(event.get(field))) not in open_ and from_start:
                problems.append(f"{kind} for {event.get(field)}, which is not open")
        elif kind == "TOOL_CALL_RESULT":
            call_id = str(event.get("toolCallId"))
            if call_id not in calls | earlier and from_start:
                problems.append(f"TOOL_CALL_RESULT for {call_id}, a call never started")
            if call_id in results:
                problems.append(f"a second TOOL_CALL_RESULT for {call_id}")
            results.add(call_id)
        elif kind in TERMINAL:
            terminal = event
            if kind == "RUN_FINISHED" and started is not None:
                for key in ("threadId", "runId"):
                    if event.get(key) != started.get(key):
                        problems.append(f"RUN_FINISHED.{key} is not RUN_STARTED's")
    if terminal is None:
        if complete:
            problems.append("the stream ends without RUN_FINISHED or RUN_ERROR")
        return problems
    if terminal.get("type") == "RUN_FINISHED" and from_start:
        problems += [f"{kind} {key} is never closed" for kind, _, key in open_]
        client_tools = {t.get("name") for t in body.get("tools") or () if isinstance(t, dict)}
        front_end = {c for c, name in names.items() if name in client_tools} - results
        problems += _outcome_errors(terminal, calls - results, version, earlier, front_end)
    return problems


def _outcome_errors(
    finished: dict[str, Any],
    unanswered: set[str],
    version: str | None,
    earlier: set[str],
    front_end: set[str],
) -> list[str]:
    """The outcome against the calls: interrupts with unique ids, for open calls; a success
    names as pending every call of the request's ``tools`` left without a result, and only
    open calls (a server call waiting on one is open, not pending)."""
    outcome = finished.get("outcome")
    kind = outcome.get("type") if isinstance(outcome, dict) else None
    if kind == "interrupt":
        ids = [i.get("id") for i in outcome["interrupts"]]
        problems = [] if len(ids) == len(set(ids)) else [f"interrupt ids repeat: {ids}"]
        for interrupt in outcome["interrupts"]:
            call = interrupt.get("toolCallId")
            if call is not None and call not in unanswered | earlier:
                problems.append(f"an interrupt for {call}, which is not a call left open")
        return problems
    if kind == "success" or (kind is None and version is not None):
        pending = set(outcome.get("pendingToolCallIds", ())) if outcome else set()
        if not pending <= unanswered | earlier:
            return [f"pendingToolCallIds {sorted(pending)} name calls that are not open"]
        if not front_end <= pending:
            return [
                f"a success whose pendingToolCallIds {sorted(pending)} leave out front-end "
                f"calls without a result {sorted(front_end - pending)}"
            ]
    return []


def _declared(exchange: Exchange) -> str | None:
    """The ``protocolVersion`` the stream's ``RUN_STARTED`` declares."""
    for problem, event in frames(bytes(exchange.stream)):
        if not problem and isinstance(event, dict) and event.get("type") == "RUN_STARTED":
            version = event.get("protocolVersion")
            return version if isinstance(version, str) else None
    return None


def started_calls(exchange: Exchange) -> tuple[str | None, set[str]]:
    """The thread of ``exchange``'s run and the tool calls its stream started."""
    thread: str | None = None
    calls: set[str] = set()
    for problem, event in frames(bytes(exchange.stream)):
        if problem or not isinstance(event, dict):
            continue
        if event.get("type") == "RUN_STARTED":
            thread = event.get("threadId")
        elif event.get("type") == "TOOL_CALL_START":
            calls.add(str(event.get("toolCallId")))
    return thread, calls


def _scope(event: dict[str, Any]) -> str:
    """The sub-run an event belongs to ("" for the run's own): ids are unique per scope."""
    if event.get("type") == "SUBAGENT_STARTED":
        return ""
    return str(event.get("subagentRunId") or "")


def _request_calls(body: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The tool calls of the request's messages (a resumed run answers them), and those of
    them the request carries a result for."""
    calls: set[str] = set()
    answered: set[str] = set()
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        for call in message.get("toolCalls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                calls.add(call["id"])
        if message.get("role") == "tool" and isinstance(message.get("toolCallId"), str):
            answered.add(message["toolCallId"])
    return calls, answered
