"""What both wire protocols share: the decoded run input, request errors, client ids,
approval claims checked against the approvals the server issued, and fast JSON.

A decoder turns a protocol's request into a ``RunInput``; it never decides
whether an approval is genuine. An approval in a request is only a *claim*
(``ApprovalClaim``); ``resolve_claims`` honours it only for an approval this
server issued, to the same principal on the same thread, for the exact call
(tool name and arguments) it was issued for, and only once (the
``ApprovalLedger`` forgets it when redeemed). Without that check a client could
approve a call by inventing an approval id, or answer someone else's.

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
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import pydantic_core

from .._errors import CallwrightError
from ..call import Decision, strip_meta
from ..elicitation import InputAnswer, InputRequest
from ..messages import AssistantMessage, Message, ToolCallPart
from ..tool import Tool
from ..toolbox import Toolbox


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
class ApprovalClaim:
    """A decision a client sent for an approval id; ``call_id`` where the protocol names it."""

    approval_id: str
    decision: Decision | InputAnswer
    """An approval's decision, or the answer to a question the call asked (``inp_`` ids)."""
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
    forwarded_props: dict[str, Any] = field(default_factory=dict)
    """AG-UI ``forwardedProps``: handed to the agent's code as ``ToolContext.forwarded_props``."""


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


# --- approvals --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IssuedApproval:
    """An approval the server asked for: the call, and whose it is."""

    call_id: str
    """The call waiting on the approval."""
    tool_name: str
    """The tool it calls."""
    arguments: dict[str, Any]
    """The arguments it was issued for."""
    principal: str | None = None
    """Who the run that asked belongs to; only they may answer (None: no users)."""
    thread_id: str | None = None
    """The thread it was asked in; it is answered in that thread only."""
    request: InputRequest | None = None
    """Set for a question a running call asked (``InputRequested``) instead of an approval:
    the question, whose ``state`` stays with the server."""

    @property
    def owner(self) -> tuple[str, str | None]:
        """Whose share of a bounded ledger it counts against: its principal's, or, with no
        users to tell apart, its thread's (so one thread cannot push out the others')."""
        if self.principal is not None:
            return ("principal", self.principal)
        return ("thread", self.thread_id)


class ApprovalLedger(Protocol):
    """Where the server remembers the approvals it asked for until they are answered."""

    def issue(self, approval_id: str, approval: IssuedApproval) -> None: ...

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        """The approval, forgotten as it is returned (so it is honoured once)."""
        ...


class MemoryApprovalLedger:
    """In-process ledger, bounded twice: each owner (see ``IssuedApproval.owner``) keeps at
    most ``per_owner`` open approvals, dropping its own oldest beyond that, and the whole
    ledger at most ``limit``, dropping the oldest of all. One request that asks for ten
    thousand approvals thus forgets only its own, never another user's."""

    def __init__(self, limit: int = 10_000, per_owner: int = 1_000) -> None:
        if not 0 < per_owner <= limit:
            raise ValueError("need 0 < per_owner <= limit")
        self._open: OrderedDict[str, IssuedApproval] = OrderedDict()
        self._owned: dict[tuple[str, str | None], OrderedDict[str, None]] = {}
        self._limit = limit
        self._per_owner = per_owner

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        self.redeem(approval_id)
        self._open[approval_id] = approval
        mine = self._owned.setdefault(approval.owner, OrderedDict())
        mine[approval_id] = None
        while len(mine) > self._per_owner:
            self.redeem(next(iter(mine)))
        while len(self._open) > self._limit:
            self.redeem(next(iter(self._open)))

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        approval = self._open.pop(approval_id, None)
        if approval is not None:
            mine = self._owned[approval.owner]
            del mine[approval_id]
            if not mine:
                del self._owned[approval.owner]
        return approval

    def __len__(self) -> int:
        return len(self._open)


@dataclass(frozen=True, slots=True)
class OwnedLedger:
    """A ledger as one request sees it: what it issues is stamped with the request's
    principal and thread, so that only that principal, in that thread, can redeem it."""

    ledger: ApprovalLedger
    """The server's ledger."""
    principal: str | None
    """The request's principal."""
    thread_id: str | None
    """The request's thread."""

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        owned = replace(approval, principal=self.principal, thread_id=self.thread_id)
        self.ledger.issue(approval_id, owned)

    def redeem(self, approval_id: str) -> IssuedApproval | None:
        return self.ledger.redeem(approval_id)


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


def resolve_claims(
    claims: Iterable[ApprovalClaim],
    messages: list[Message],
    ledger: ApprovalLedger,
    toolbox: Toolbox,
    *,
    principal: str | None = None,
    thread_id: str | None = None,
) -> dict[str, Decision | InputAnswer]:
    """Turn claims into ``Agent.start`` decisions, or refuse the request (409).

    An approval issued to another principal or in another thread is refused
    exactly like one never issued: the answer does not confirm that it exists.
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
    decisions: dict[str, Decision | InputAnswer] = {}
    redeemed: list[tuple[str, IssuedApproval]] = []
    try:
        for claim in claims:
            issued = ledger.redeem(claim.approval_id)
            if issued is not None:
                redeemed.append((claim.approval_id, issued))
            if issued is None or (issued.principal, issued.thread_id) != (principal, thread_id):
                raise WireError(
                    f"approval {claim.approval_id!r} was not issued by this server or was "
                    "already answered",
                    "unknown_approval",
                    409,
                )
            _check_claim(claim, issued, calls.get(issued.call_id), toolbox)
            decisions[issued.call_id] = _answer(claim, issued, toolbox)
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


def _answer(
    claim: ApprovalClaim, issued: IssuedApproval, toolbox: Toolbox
) -> Decision | InputAnswer:
    """An approval's checked decision, or the answer to the question a call asked, with
    the question as the server issued it (its state is never the client's)."""
    decision = claim.decision
    if isinstance(decision, InputAnswer) != (issued.request is not None):
        raise WireError(
            f"{claim.approval_id!r} is answered the wrong way (an approval needs a decision, "
            "a question an answer)",
            "answer_mismatch",
            409,
        )
    if isinstance(decision, InputAnswer):
        return InputAnswer(decision.action, decision.content, issued.request)
    return checked_edit(decision, issued.tool_name, issued.arguments, toolbox)


def checked_edit(
    decision: Decision, tool_name: str, issued: dict[str, Any], toolbox: Toolbox
) -> Decision:
    """The decision with its edited arguments, if any, refused the journal's way where the
    tool does not allow edits (409 ``arguments_changed``), so that an edit gets the same
    answer in every mode. Runtime meta (``_outputPath``...) is not part of an edit. An
    allowed edit is validated by the run, like the model's arguments: invalid ones are
    the call's "Invalid arguments" result."""
    if decision.arguments is None:
        return decision
    params = strip_meta(decision.arguments)
    if params == strip_meta(issued):
        return replace(decision, arguments=None)
    tool = toolbox.get(tool_name)
    if tool is None or not tool.allow_edits:
        raise WireError(
            f"the arguments of this {tool_name} call were changed; {tool_name} does not "
            "allow edits",
            "arguments_changed",
            409,
        )
    return replace(decision, arguments=params)


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
