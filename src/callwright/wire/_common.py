"""What both wire protocols share: the decoded run input, request errors, client ids
and fast JSON.

A decoder turns a protocol's request into a ``RunInput``; it never decides
whether an approval is genuine. An approval in a request is only a *claim*
(``ApprovalClaim``), which a verifier of ``callwright.approvals`` honours only for
an approval this server issued, to the same principal on the same thread, for the
exact call, once.

Every id a client chooses (thread, run, message, tool call, approval) passes
``client_id``: at most 128 characters of ``[A-Za-z0-9._:-]``, which covers what
the real clients generate (uuids, nanoid-style ids, model call ids such as
``call_…``, ``toolu_…`` or ``functions.name:0``) and keeps ids out of headers,
logs and SQL trouble.

JSON is written with ``pydantic_core.to_json`` (already a dependency through
pydantic): it is several times faster than ``json.dumps`` and serialises the
values tools return (datetimes, UUIDs, pydantic models) without a custom
encoder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pydantic_core

from .._errors import CallwrightError
from .._run_start import RunStart
from ..approvals import ApprovalClaim as ApprovalClaim  # the decoders make them
from ..call import Decision
from ..messages import Message
from ..tool import Tool


def to_json(value: Any) -> bytes:
    """Compact JSON bytes; anything unknown is written as its ``str``."""
    return pydantic_core.to_json(value, fallback=str)


# json's C-accelerated string escaper: the fast path for the per-token events.
quote: Callable[[str], str] = json.encoder.encode_basestring


class WireError(CallwrightError):
    """A request the server refuses: an HTTP status, a stable code and a message.

    Never carries a stack trace; the server turns it into
    ``{"error": {"message": ..., "code": ...}}``.
    """

    def __init__(self, message: str, code: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "code": self.code}}


MAX_ID_LENGTH = 128
"""The longest id a client may choose."""

_ID = re.compile(rf"[A-Za-z0-9._:-]{{1,{MAX_ID_LENGTH}}}")


def client_id(value: str, what: str) -> str:
    """``value`` if it is a valid client-chosen id, else a 400 ``invalid_id``.

    The message names the field, never the value: a bad id may be megabytes long or
    carry CR/LF, and must not travel on into a response.
    """
    if _ID.fullmatch(value) is None:
        raise WireError(
            f"{what} must be 1 to {MAX_ID_LENGTH} characters from A-Z a-z 0-9 . _ : -",
            "invalid_id",
        )
    return value


def optional_id(value: Any, what: str) -> str | None:
    """A client id where one is optional: None unless a non-empty string, then checked."""
    return client_id(value, what) if isinstance(value, str) and value else None


@dataclass(slots=True)
class RunInput:
    """A decoded request: everything ``Agent.start`` needs, approvals still unverified."""

    messages: list[Message]
    client_tools: list[Tool] = field(default_factory=list)
    claims: list[ApprovalClaim] = field(default_factory=list)
    state: dict[str, Any] | None = None
    run_id: str | None = None
    thread_id: str | None = None
    forwarded_props: dict[str, Any] = field(default_factory=dict)
    """AG-UI ``forwardedProps``: handed to the agent's code as ``ToolContext.forwarded_props``."""

    def run_start(self) -> RunStart:
        """The run the request asks for, as far as the request alone says: the server adds
        the decisions its claims verify to, the thread, the principal and the options."""
        return RunStart(
            messages=self.messages,
            client_tools=tuple(self.client_tools),
            state=self.state,
            run_id=self.run_id,
            thread_id=self.thread_id,
            forwarded_props=self.forwarded_props,
        )


MAX_MESSAGES = 2_000
"""The most messages a request may carry (``ServerLimits.max_messages``)."""
MAX_CLIENT_TOOLS = 128
"""The most front-end tools a request may declare (``ServerLimits.max_client_tools``):
each costs a schema check and a validator, so their number is bounded before either."""
MAX_PARTS = 20_000
"""The most parts a request's messages may hold in all (``ServerLimits.max_parts``): AI
SDK parts, AG-UI content parts and tool calls."""
MAX_STATE_VALUES = 10_000
"""The most JSON values AG-UI ``state`` or ``forwardedProps`` may hold, each, at any depth
(``ServerLimits.max_state_values``): the run copies, journals and sends its state back on
the event loop, a few microseconds a value."""
MAX_SCHEMA_VALUES = 5_000
"""The most JSON values one client tool's ``parameters`` schema may hold, enum entries
included (``ServerLimits.max_schema_values``): the schema is checked, compiled and sent to
the model on every turn."""


def check_count(items: Any, most: int, what: str, code: str) -> None:
    """Refuse a list longer than ``most`` (413 ``code``) before any of it is decoded."""
    if isinstance(items, list) and len(items) > most:
        raise WireError(f"too many {what} ({len(items)} > {most})", code, 413)


def check_values(value: Any, most: int, what: str, code: str) -> None:
    """Refuse a JSON value holding more than ``most`` values at any depth (413 ``code``):
    every entry of an object and item of a list counts, whatever it holds. The walk stops
    at the first value over the limit."""
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        count += len(children)
        if count > most:
            raise WireError(f"too many values in {what} (more than {most})", code, 413)
        pending.extend(v for v in children if isinstance(v, dict | list))


def check_parts(messages: list[Any], most: int, keys: tuple[str, ...]) -> None:
    """Refuse messages whose parts (the lists under ``keys``: AI SDK ``parts``, AG-UI
    ``content`` and ``toolCalls``) number more than ``most`` in all (413)."""
    parts = sum(
        len(m[key])
        for m in messages
        if isinstance(m, dict)
        for key in keys
        if isinstance(m.get(key), list)
    )
    if parts > most:
        raise WireError(f"too many message parts ({parts} > {most})", "too_many_parts", 413)


def client_tools_from(
    definitions: Any,
    where: str,
    most: int = MAX_CLIENT_TOOLS,
    schema_values: int = MAX_SCHEMA_VALUES,
) -> list[Tool]:
    """``[{name, description, parameters}]`` (AG-UI ``tools``, our AI SDK ``tools``) -> tools,
    at most ``most`` of them (413 ``too_many_tools`` beyond, before any is decoded), each
    schema of at most ``schema_values`` values (413 ``schema_too_large``)."""
    if definitions is None:
        return []
    if not isinstance(definitions, list):
        raise WireError(f"{where} must be a list of tool definitions", "invalid_request")
    check_count(definitions, most, f"client tools in {where}", "too_many_tools")
    for item in definitions:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise WireError(f"each entry of {where} needs a string name", "invalid_request")
        what = f"the parameters of tool {item['name'][:MAX_ID_LENGTH]!r}"
        check_values(item.get("parameters"), schema_values, what, "schema_too_large")
    tools: list[Tool] = []
    for item in definitions:
        blueprint = {
            "name": item["name"],
            "description": item.get("description") or "",
            "parameters": item.get("parameters") or {"type": "object", "properties": {}},
        }
        try:
            tools.append(Tool.from_schema(blueprint, client=True))
        except Exception as exc:  # an invalid JSON Schema is the client's mistake
            raise WireError(f"tool {item['name']!r}: {exc}", "invalid_tool") from None
    return tools


# --- approvals: what a request says of them (the approvals room checks it) ----------


def with_extras(decision: Decision, raw: Any) -> Decision:
    """The decision with what an approval may carry besides yes or no: ``data`` for the
    tool (``ToolContext.approval.data``) and ``remember: "thread"`` (allow the tool for
    the rest of the thread), read from ``raw`` (an AI SDK part's ``approval`` object or
    an entry of the request's ``approvals``, an AG-UI resume payload)."""
    if not isinstance(raw, dict):
        return decision
    remember = raw.get("remember")
    if remember not in (None, "thread"):
        raise WireError('remember must be "thread" when given', "invalid_request")
    data = raw.get("data", decision.data)
    return replace(decision, data=data, remember=remember or decision.remember)


def text_of(content: Any) -> str:
    """A message body as text: a string, or the text parts of a part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def parse_arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, from a JSON string (AG-UI) or an object (AI SDK)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}
