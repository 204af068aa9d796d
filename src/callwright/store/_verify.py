"""Checking a request's answers against the calls a thread is waiting on.

Three kinds of answer: an approval's decision, a client tool's result, and the answer
to a question a running tool asked (kind ``input``, MCP elicitation). Decisions and
answers are found by the id the server issued (``approval_id``, an ``inp_...`` id for
a question) and the principal; a question's answer gets the question back as the
server stored it (its ``state`` is never the client's).
"""

from __future__ import annotations

import json
from typing import Any

from ..call import Decision, Remember, strip_meta
from ..elicitation import InputAnswer, InputRequest
from ..messages import AssistantMessage, Message, ToolResultMessage
from ._sql import Db
from .base import Answer, EditValidator, PendingRecord, Rejected, canonical_json

PENDING_COLUMNS = (
    "thread_id, run_id, call_id, kind, tool_name, arguments, approval_id, "
    "reason_for_call, created_at, resolved_at, principal, request"
)
RESOLVED_AT = 9
"""Where ``resolved_at`` is in a row of ``PENDING_COLUMNS``."""


def pending_record(row: tuple[Any, ...]) -> PendingRecord:
    return PendingRecord(
        thread_id=row[0],
        run_id=row[1],
        call_id=row[2],
        kind=row[3],
        tool_name=row[4],
        arguments=json.loads(row[5]),
        approval_id=row[6],
        reason_for_call=row[7],
        created_at=row[8] or 0.0,
        request=input_request(row[11]),
    )


def request_json(request: InputRequest | None) -> str | None:
    """A question as the ``pending.request`` column keeps it (its state must be JSON: an
    MCP call's is its server's name and the parked call's handle)."""
    if request is None:
        return None
    fields = {"id": request.id, "message": request.message, "schema": request.schema}
    try:
        return canonical_json({**fields, "url": request.url, "state": request.state})
    except (TypeError, ValueError):
        raise TypeError(
            f"the state of question {request.id!r} is not JSON, and a journal keeps it in "
            "its database"
        ) from None


def input_request(text: str | None) -> InputRequest | None:
    if text is None:
        return None
    raw = json.loads(text)
    return InputRequest(raw["message"], raw["schema"], raw["state"], raw["url"], raw["id"])


def verify_answers(
    db: Db,
    thread_id: str,
    principal: str,
    history: list[Message],
    answers: list[Answer],
    edits: dict[str, EditValidator | None],
) -> tuple[dict[str, Decision | InputAnswer], dict[str, ToolResultMessage], list[str]]:
    """The answers as decisions and results, and the call each answer is for (an
    AG-UI ``resume`` names only the approval, not the call)."""
    decisions: dict[str, Decision | InputAnswer] = {}
    results: dict[str, ToolResultMessage] = {}
    call_ids: list[str] = []
    issued = {part.id for m in history if isinstance(m, AssistantMessage) for part in m.tool_calls}
    for answer in answers:
        row = _find(db, thread_id, principal, answer, issued)
        if answer.call_id is not None and answer.call_id != row.call_id:
            raise Rejected(
                f"approval {answer.approval_id!r} was issued for call {row.call_id!r}, "
                f"not {answer.call_id!r}",
                "approval_mismatch",
            )
        if answer.tool_name is not None and answer.tool_name != row.tool_name:
            raise Rejected(
                f"call {row.call_id!r} is a call of {row.tool_name!r}, not {answer.tool_name!r}",
                "tool_mismatch",
            )
        if row.call_id in decisions or row.call_id in results:
            raise Rejected(f"call {row.call_id!r} is answered twice", "duplicate_answer", 400)
        call_ids.append(row.call_id)
        if answer.kind == "client":
            results[row.call_id] = ToolResultMessage(
                row.call_id, row.tool_name, answer.result or "", answer.is_error
            )
        elif answer.kind == "input":
            decisions[row.call_id] = _input_answer(row, answer)
        else:
            decisions[row.call_id] = _decision(row, answer, edits)
    return decisions, results, call_ids


def _input_answer(row: PendingRecord, answer: Answer) -> InputAnswer:
    """The answer with the question the server stored (state included)."""
    if answer.action not in ("accept", "decline", "cancel"):
        raise Rejected(
            f"an answer to a question is accept, decline or cancel, not {answer.action!r}",
            "invalid_answer",
            400,
        )
    content = answer.content if answer.action == "accept" else None
    return InputAnswer(answer.action, content, row.request)


def _decision(
    row: PendingRecord, answer: Answer, edits: dict[str, EditValidator | None]
) -> Decision:
    """The decision, with edited arguments where the tool allows edits and they validate,
    and what the approver sent along (``data``, ``remember``)."""
    if answer.remember not in (None, "thread"):
        raise Rejected('remember must be "thread" when given', "invalid_answer", 400)
    arguments = None
    if answer.arguments is not None and params(answer.arguments) != params(row.arguments):
        validate = edits.get(row.tool_name)
        if validate is None:
            raise Rejected(
                f"the arguments of call {row.call_id!r} were changed; "
                f"{row.tool_name} does not allow edits",
                "arguments_changed",
            )
        edited = strip_meta(answer.arguments)
        try:
            validate(edited)
        except Exception as exc:
            raise Rejected(
                f"edited arguments for {row.tool_name} are invalid: {exc}", "invalid_edit", 422
            ) from None
        arguments = edited
    remember: Remember | None = "thread" if answer.remember == "thread" else None
    return Decision(
        bool(answer.approved), answer.reason, arguments, data=answer.data, remember=remember
    )


def _find(
    db: Db, thread_id: str, principal: str, answer: Answer, issued: set[str]
) -> PendingRecord:
    """The pending row an answer is for; another principal's approval is unknown."""
    if answer.kind == "client":
        row = db.execute(
            f"SELECT {PENDING_COLUMNS} FROM pending "
            "WHERE principal = ? AND thread_id = ? AND call_id = ? AND kind = 'client'",
            (principal, thread_id, answer.call_id),
        ).fetchone()
        if row is None:
            raise Rejected(
                f"no client tool call {answer.call_id!r} was issued in this thread",
                "unknown_call",
                404,
            )
    else:
        row = _issued(db, thread_id, principal, answer, issued)
    record = pending_record(row)
    if record.thread_id != thread_id:
        raise Rejected(
            f"approval {answer.approval_id!r} belongs to another thread", "wrong_thread", 403
        )
    if row[RESOLVED_AT] is not None:
        raise Rejected(f"call {record.call_id!r} was already answered", "already_answered")
    if record.kind != answer.kind:
        raise Rejected(
            f"{answer.approval_id!r} is answered the wrong way (an approval needs a decision, "
            "a question an answer)",
            "answer_mismatch",
        )
    return record


def _issued(
    db: Db, thread_id: str, principal: str, answer: Answer, issued: set[str]
) -> tuple[Any, ...]:
    """The row of an approval or a question, by the id the server issued for it."""
    row = db.execute(
        f"SELECT {PENDING_COLUMNS} FROM pending WHERE approval_id = ? AND principal = ?",
        (answer.approval_id, principal),
    ).fetchone()
    if row is not None:
        return tuple(row)
    if answer.kind == "approval":
        asked = db.execute(
            "SELECT 1 FROM pending "
            "WHERE principal = ? AND thread_id = ? AND call_id = ? AND kind = 'approval'",
            (principal, thread_id, answer.call_id),
        ).fetchone()
        if answer.call_id in issued and asked is None:
            raise Rejected(
                f"no approval was requested for call {answer.call_id!r}",
                "approval_not_requested",
            )
    raise Rejected(
        f"approval {answer.approval_id!r} was not issued by this server",
        "unknown_approval",
        404,
    )


def answered_decision(text: str | None) -> Decision | None:
    """The decision an approval row keeps (``pending.answer``), for a call recovery leaves
    to run: the run goes on with the decision the human gave, not a new question."""
    if text is None:
        return None
    raw = json.loads(text)
    return Decision(
        raw["approved"],
        raw.get("reason"),
        raw.get("arguments"),
        data=raw.get("data"),
        remember="thread" if raw.get("remember") == "thread" else None,
    )


def decision_json(decision: Decision) -> str:
    """What ``pending.answer`` keeps of a verified decision (see ``answered_decision``)."""
    return canonical_json(
        {
            "approved": decision.approved,
            "reason": decision.reason,
            "arguments": decision.arguments,
            "data": decision.data,
            "remember": decision.remember,
        }
    )


def params(arguments: dict[str, Any]) -> str:
    """Arguments without runtime meta (clients need not echo ``_outputPath``...), canonical."""
    return canonical_json(strip_meta(arguments))
