"""What both wire protocols share: the decoded run input, request errors, approval
claims checked against the approvals the server issued, and fast JSON.

A decoder turns a protocol's request into a ``RunInput``; it never decides
whether an approval is genuine. An approval in a request is only a *claim*
(``ApprovalClaim``); ``resolve_claims`` honours it only for an approval this
server issued, for the exact call (tool name and arguments) it was issued for,
and only once (the ``ApprovalLedger`` forgets it when redeemed). Without that
check a client could approve a call by inventing an approval id.

JSON is written with ``pydantic_core.to_json`` (already a dependency through
pydantic): it is several times faster than ``json.dumps`` and serialises the
values tools return (datetimes, UUIDs, pydantic models) without a custom
encoder.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic_core

from ..call import Decision
from ..messages import AssistantMessage, Message, ToolCallPart
from ..tool import Tool
from ..toolbox import Toolbox


def to_json(value: Any) -> bytes:
    """Compact JSON bytes; anything unknown is written as its ``str``."""
    return pydantic_core.to_json(value, fallback=str)


# json's C-accelerated string escaper: the fast path for the per-token events.
quote: Callable[[str], str] = json.encoder.encode_basestring


class WireError(Exception):
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


@dataclass(slots=True)
class ApprovalClaim:
    """A decision a client sent for an approval id; ``call_id`` where the protocol names it."""

    approval_id: str
    decision: Decision
    call_id: str | None = None


@dataclass(slots=True)
class RunInput:
    """A decoded request: everything ``Agent.start`` needs, approvals still unverified."""

    messages: list[Message]
    client_tools: list[Tool] = field(default_factory=list)
    claims: list[ApprovalClaim] = field(default_factory=list)
    state: dict[str, Any] | None = None
    run_id: str | None = None
    thread_id: str | None = None


def client_tools_from(definitions: Any, where: str) -> list[Tool]:
    """``[{name, description, parameters}]`` (AG-UI ``tools``, our AI SDK ``tools``) -> tools."""
    if definitions is None:
        return []
    if not isinstance(definitions, list):
        raise WireError(f"{where} must be a list of tool definitions", "invalid_request")
    tools: list[Tool] = []
    for item in definitions:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise WireError(f"each entry of {where} needs a string name", "invalid_request")
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


# --- approvals --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IssuedApproval:
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ApprovalLedger(Protocol):
    """Where the server remembers the approvals it asked for until they are answered."""

    def issue(self, approval_id: str, approval: IssuedApproval) -> None: ...

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        """The approval, forgotten as it is returned (so it is honoured once)."""
        ...


class MemoryApprovalLedger:
    """In-process ledger, bounded: the oldest open approvals are forgotten past ``limit``."""

    def __init__(self, limit: int = 10_000) -> None:
        self._open: OrderedDict[str, IssuedApproval] = OrderedDict()
        self._limit = limit

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        self._open[approval_id] = approval
        while len(self._open) > self._limit:
            self._open.popitem(last=False)

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        return self._open.pop(approval_id, None)


def resolve_claims(
    claims: Iterable[ApprovalClaim],
    messages: list[Message],
    ledger: ApprovalLedger,
    toolbox: Toolbox,
) -> dict[str, Decision]:
    """Turn claims into ``Agent.start`` decisions, or refuse the request (409).

    All or nothing: when any claim is refused, the approvals already redeemed
    are issued again, so a refused request uses none of them up.
    """
    claims = list(claims)
    if not claims:
        return {}
    calls = {}
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            calls = {part.id: part for part in message.tool_calls}
            break
    decisions: dict[str, Decision] = {}
    redeemed: list[tuple[str, IssuedApproval]] = []
    try:
        for claim in claims:
            issued = ledger.redeem(claim.approval_id)
            if issued is None:
                raise WireError(
                    f"approval {claim.approval_id!r} was not issued by this server or was "
                    "already answered",
                    "unknown_approval",
                    409,
                )
            redeemed.append((claim.approval_id, issued))
            _check_claim(claim, issued, calls.get(issued.call_id), toolbox)
            decisions[issued.call_id] = claim.decision
    except WireError:
        for approval_id, issued in redeemed:
            ledger.issue(approval_id, issued)
        raise
    return decisions


def _check_claim(
    claim: ApprovalClaim, issued: IssuedApproval, part: ToolCallPart | None, toolbox: Toolbox
) -> None:
    """The claim answers the exact call the approval was issued for."""
    if claim.call_id is not None and claim.call_id != issued.call_id:
        part = None
    if part is None or part.name != issued.tool_name:
        raise WireError(
            f"approval {claim.approval_id!r} does not belong to a call of the last "
            "assistant message",
            "approval_mismatch",
            409,
        )
    tool = toolbox.get(issued.tool_name)
    fixed = tool.fixed_meta() if tool is not None else {}
    if _without(part.arguments, fixed) != _without(issued.arguments, fixed):
        raise WireError(
            f"approval {claim.approval_id!r} was issued for other arguments",
            "approval_mismatch",
            409,
        )


def _without(arguments: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """Arguments less the runtime-filled meta (which some protocols never carry back)."""
    if not keys:
        return arguments
    return {k: v for k, v in arguments.items() if k not in keys}


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
