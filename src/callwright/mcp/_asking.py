"""Putting questions to an MCP client's user (serving callwright's tools over MCP).

A call that needs a human (an approval, or a question a tool asked) is put to the MCP
client's user through elicitation, in whichever way the connection's protocol has:

* **2025-11-25** (handshake): an ``elicitation/create`` request in the middle of the
  call, answered before the call goes on.
* **2026-07-28**: the call returns an ``InputRequiredResult`` carrying the questions and
  a ``requestState``; the client asks, then calls again with the answers and the state.
  What the call needs to go on (a paused run) waits here under a one-time nonce; the
  state that carries the nonce is sealed and bound to the call and to the caller's
  principal by the SDK's ``RequestStateBoundary``, so it can be neither forged, nor
  moved to other arguments, nor answered by another user.

A client that declared no elicitation cannot be asked: the call is refused with an
error result that says so.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..call import Decision
from ..elicitation import InputAnswer, InputRequest
from ..events import PendingCall

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve", "description": "Let the call run"},
        "reason": {"type": "string", "title": "Reason", "description": "Why (optional)"},
    },
    "required": ["approved"],
}
"""The form an approval is asked with."""


class CannotAsk(Exception):
    """The client declared no elicitation: nobody can be asked."""


@dataclass(frozen=True, slots=True)
class Question:
    """One thing to ask the user: an approval or a tool's own question."""

    key: str
    """Names the answer (the paused call's id)."""
    message: str
    schema: dict[str, Any]


def approval_question(pending: PendingCall) -> Question:
    arguments = json.dumps(pending.arguments, ensure_ascii=False, sort_keys=True)
    message = f"Allow {pending.tool_name} to run with {arguments}?"
    if pending.reason_for_call:
        message += f" Reason given: {pending.reason_for_call}"
    return Question(pending.call_id, message, APPROVAL_SCHEMA)


def input_question(pending: PendingCall, request: InputRequest) -> Question:
    message = request.message if request.url is None else f"{request.message} ({request.url})"
    return Question(pending.call_id, message, request.schema)


def question_for(pending: PendingCall) -> Question | None:
    """The question a paused call puts to the user; None for a call nobody here can answer
    (a front-end tool)."""
    if pending.kind == "approval":
        return approval_question(pending)
    if pending.kind == "input" and pending.request is not None:
        return input_question(pending, pending.request)
    return None


def reply_for(pending: PendingCall, answer: types.ElicitResult) -> Decision | InputAnswer:
    """The user's answer as what a resumed run takes for the paused call."""
    if pending.kind == "input":
        content = dict(answer.content) if answer.content is not None else None
        return InputAnswer(answer.action, content, request=pending.request)
    content = answer.content or {}
    reason = content.get("reason")
    text = reason if isinstance(reason, str) and reason else None
    if answer.action == "accept" and content.get("approved") is True:
        return Decision(True, text)
    why = {"decline": "the user declined", "cancel": "the user cancelled"}.get(answer.action)
    return Decision(False, text or why or "not approved")


def modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the call speaks the 2026-07-28 revision (questions ride the result)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def can_ask(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


async def ask_now(ctx: ServerRequestContext[Any, Any], question: Question) -> types.ElicitResult:
    """2025-11-25: ask in the middle of the call (``elicitation/create``)."""
    if not can_ask(ctx):
        raise CannotAsk
    return await ctx.session.elicit_form(
        question.message, question.schema, related_request_id=ctx.request_id
    )


def ask_later(questions: list[Question], nonce: str) -> types.InputRequiredResult:
    """2026-07-28: the questions as the call's result; the client calls again."""
    requests: dict[str, types.InputRequest] = {
        q.key: types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=q.message, requested_schema=q.schema)
        )
        for q in questions
    }
    return types.InputRequiredResult(input_requests=requests, request_state=nonce)


def answers(params: types.CallToolRequestParams) -> dict[str, types.ElicitResult]:
    """The elicitation answers a retried call carries, by question key."""
    out: dict[str, types.ElicitResult] = {}
    for key, value in (params.input_responses or {}).items():
        if isinstance(value, types.ElicitResult):
            out[key] = value
    return out


MAX_PAUSED_PER_PRINCIPAL = 1000
"""2026-07-28 calls one principal may keep paused on a question; past it, its oldest is
forgotten (answering it then says the question expired)."""

PAUSE_TTL = 600.0
"""Seconds a paused call waits for its answer: the SDK's own ``requestState`` lifetime."""


class Waiting:
    """What 2026-07-28 calls wait on between their rounds, under one-time nonces, kept
    apart by principal: one principal's nonce is unknown to every other, and each
    principal has ``limit`` places of its own (the oldest forgotten past it), so one
    user's pauses never push out another's.

    Timed (``ttl`` seconds, the SDK's own request-state lifetime), so clients that never
    come back cost nothing.
    """

    def __init__(self, limit: int = MAX_PAUSED_PER_PRINCIPAL, ttl: float = PAUSE_TTL) -> None:
        if limit < 1:
            raise ValueError("max_paused_per_principal must be at least 1")
        self._open: dict[str | None, OrderedDict[str, tuple[float, Any]]] = {}
        self._limit = limit
        self._ttl = ttl
        self._next_sweep = time.monotonic() + ttl

    def put(self, principal: str | None, value: Any) -> str:
        nonce = secrets.token_urlsafe(18)
        now = time.monotonic()
        if now >= self._next_sweep:
            self._sweep(now)
        held = self._open.setdefault(principal, OrderedDict())
        _drop_expired(held, now)
        held[nonce] = (now + self._ttl, value)
        while len(held) > self._limit:
            held.popitem(last=False)
        return nonce

    def take(self, principal: str | None, nonce: str | None) -> Any:
        """The principal's value, forgotten as it is returned; None if unknown (to this
        principal), used or expired."""
        held = self._open.get(principal)
        if nonce is None or held is None:
            return None
        entry = held.pop(nonce, None)
        if not held:
            del self._open[principal]
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def _sweep(self, now: float) -> None:
        """Forget the expired calls of every principal (once per ``ttl``), so the pauses
        of users who never come back do not stay until they pause again."""
        for principal, held in list(self._open.items()):
            _drop_expired(held, now)
            if not held:
                del self._open[principal]
        self._next_sweep = now + self._ttl


def _drop_expired(held: OrderedDict[str, tuple[float, Any]], now: float) -> None:
    """Oldest first: every entry has the same lifetime, so the expired ones lead."""
    while held and next(iter(held.values()))[0] < now:
        held.popitem(last=False)


def answered(
    pending: list[PendingCall], replies: Mapping[str, types.ElicitResult]
) -> dict[str, Decision | InputAnswer] | None:
    """Decisions for every paused call from a round's answers; None if one is missing."""
    out: dict[str, Decision | InputAnswer] = {}
    for call in pending:
        reply = replies.get(call.call_id)
        if reply is None:
            return None
        out[call.call_id] = reply_for(call, reply)
    return out
