"""Checking a request's answers against the calls a thread is waiting on: the journal's
approval verifier (``callwright.approvals`` owns the rules; this is its SQL).

Three kinds of answer: an approval's decision, a client tool's result, and the answer
to a question a running tool asked (kind ``input``, MCP elicitation). Decisions and
answers are found by the id the server issued (``approval_id``, an ``inp_...`` id for
a question) and the principal; a question's answer gets the question back as the
server stored it (its ``state`` is never the client's).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ..approvals import (
    ApprovalClaim,
    ApprovalIds,
    Asked,
    Decisions,
    EditRules,
    IssuedApproval,
    answer_of,
)
from ..call import Decision, strip_meta
from ..elicitation import InputAnswer, InputRequest
from ..messages import AssistantMessage, Message, ToolResultMessage
from ._sql import Db
from .base import Answer, PendingRecord, Rejected, canonical_json

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


def pending_row(p: PendingRecord, principal: str, now: float) -> tuple[Any, ...]:
    return (
        p.thread_id,
        p.call_id,
        p.run_id,
        p.kind,
        p.approval_id,
        p.tool_name,
        canonical_json(p.arguments),
        p.reason_for_call,
        now,
        principal,
        request_json(p.request),
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


PENDING_UPSERT = (  # a call's question replaces its approval's row, but not its grant
    "INSERT INTO pending (thread_id, call_id, run_id, kind, approval_id, tool_name, "
    "arguments, reason_for_call, created_at, principal, request) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (principal, thread_id, call_id) DO UPDATE SET run_id = excluded.run_id, "
    "kind = excluded.kind, approval_id = excluded.approval_id, "
    "tool_name = excluded.tool_name, arguments = excluded.arguments, "
    "reason_for_call = excluded.reason_for_call, created_at = excluded.created_at, "
    "resolved_at = NULL, request = excluded.request, answer = NULL"
)


class JournalVerifier:
    """The journal's ``ApprovalVerifier``: an approval is a pending row, found by the id
    the server issued and the principal, in the thread, not answered yet; the rules from
    there are ``callwright.approvals``'. Works on the open transaction ``db``: the journal
    checks a request's answers (``check``) in the transaction that begins the segment and
    keeps them with it (``take_answers``); ``verify`` checks and resolves in one go.
    ``history``: the thread's calls, to tell a call that asked for no approval."""

    def __init__(self, db: Db, history: Sequence[Message] = (), run_id: str = "") -> None:
        self.db = db
        self.run_id = run_id
        """The run a row ``issue`` writes belongs to."""
        self._calls = {
            part.id for m in history if isinstance(m, AssistantMessage) for part in m.tool_calls
        }

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        record = PendingRecord(
            thread_id=approval.thread_id or "",
            run_id=self.run_id,
            call_id=approval.call_id,
            kind="input" if approval.request is not None else "approval",
            tool_name=approval.tool_name,
            arguments=approval.arguments,
            approval_id=approval_id,
            request=approval.request,
        )
        self.db.write(PENDING_UPSERT, pending_row(record, approval.principal or "", time.time()))

    def approval_ids(self, principal: str | None, thread_id: str | None) -> ApprovalIds | None:
        return None

    def verify(self, claims: Sequence[ApprovalClaim], asked: Asked) -> Decisions:
        decisions: Decisions = {row.call_id: answer for row, answer in self.check(claims, asked)}
        self.db.executemany(
            "UPDATE pending SET resolved_at = ? "
            "WHERE principal = ? AND thread_id = ? AND call_id = ?",
            [
                (time.time(), asked.principal or "", asked.thread_id or "", call_id)
                for call_id in decisions
            ],
        )
        return decisions

    def check(
        self, claims: Sequence[ApprovalClaim], asked: Asked
    ) -> list[tuple[PendingRecord, Decision | InputAnswer]]:
        """Each claim's pending row and checked answer, or ``Rejected``; writes nothing."""
        checked: list[tuple[PendingRecord, Decision | InputAnswer]] = []
        seen: set[str] = set()
        for claim in claims:
            row = self.row_of(claim, asked)
            if row.call_id in seen:
                raise Rejected(f"call {row.call_id!r} is answered twice", "duplicate_answer", 400)
            seen.add(row.call_id)
            checked.append((row, answer_of(claim, issued_of(row), asked.edit_rules())))
        return checked

    def row_of(self, claim: ApprovalClaim, asked: Asked) -> PendingRecord:
        """The pending row a claim answers; another principal's approval is unknown."""
        thread_id, principal = asked.thread_id or "", asked.principal or ""
        row = self.db.execute(
            f"SELECT {PENDING_COLUMNS} FROM pending WHERE approval_id = ? AND principal = ?",
            (claim.approval_id, principal),
        ).fetchone()
        if row is None:
            raise self._unknown(claim, thread_id, principal)
        record = pending_record(row)
        if record.thread_id != thread_id:
            raise Rejected(
                f"approval {claim.approval_id!r} belongs to another thread", "wrong_thread", 403
            )
        if row[RESOLVED_AT] is not None:
            raise Rejected(f"call {record.call_id!r} was already answered", "already_answered")
        if claim.call_id is not None and claim.call_id != record.call_id:
            raise Rejected(
                f"approval {claim.approval_id!r} was issued for call {record.call_id!r}, "
                f"not {claim.call_id!r}",
                "approval_mismatch",
            )
        return record

    def _unknown(self, claim: ApprovalClaim, thread_id: str, principal: str) -> Rejected:
        if not isinstance(claim.decision, InputAnswer) and claim.call_id in self._calls:
            asked = self.db.execute(
                "SELECT 1 FROM pending "
                "WHERE principal = ? AND thread_id = ? AND call_id = ? AND kind = 'approval'",
                (principal, thread_id, claim.call_id),
            ).fetchone()
            if asked is None:
                return Rejected(
                    f"no approval was requested for call {claim.call_id!r}",
                    "approval_not_requested",
                )
        return Rejected(
            f"approval {claim.approval_id!r} was not issued by this server",
            "unknown_approval",
            404,
        )


def open_approval_ids(rows: Sequence[PendingRecord], answered: Sequence[str]) -> dict[str, str]:
    """Call id to approval id of the approvals still waiting after a request's answers (a
    call asked again keeps its id: ``approvals.reissued_ids``)."""
    return {
        row.call_id: row.approval_id
        for row in rows
        if row.kind == "approval" and row.approval_id and row.call_id not in answered
    }


def issued_of(row: PendingRecord) -> IssuedApproval:
    """A pending approval or question as the approval rules see it."""
    return IssuedApproval(
        row.call_id, row.tool_name, row.arguments, None, row.thread_id, row.request
    )


def verify_answers(
    db: Db,
    thread_id: str,
    principal: str,
    history: list[Message],
    answers: list[Answer],
    edits: EditRules,
) -> tuple[dict[str, Decision | InputAnswer], dict[str, ToolResultMessage], list[str]]:
    """The answers as decisions (checked by the ``JournalVerifier``) and client tools'
    results, and the call each answer is for (an AG-UI ``resume`` names only the
    approval, not the call), in the answers' order."""
    decisions: dict[str, Decision | InputAnswer] = {}
    results: dict[str, ToolResultMessage] = {}
    call_ids: list[str] = []
    verifier = JournalVerifier(db, history)
    asked = Asked(principal, thread_id, edits=edits)
    for answer in answers:
        if answer.kind == "client":
            row = _client_row(db, thread_id, principal, answer)
            results[row.call_id] = ToolResultMessage(
                row.call_id, row.tool_name, answer.result or "", answer.is_error
            )
        else:
            [(row, decision)] = verifier.check([answer_claim(answer)], asked)
            decisions[row.call_id] = decision
        if answer.tool_name is not None and answer.tool_name != row.tool_name:
            raise Rejected(
                f"call {row.call_id!r} is a call of {row.tool_name!r}, not {answer.tool_name!r}",
                "tool_mismatch",
            )
        if row.call_id in call_ids:
            raise Rejected(f"call {row.call_id!r} is answered twice", "duplicate_answer", 400)
        call_ids.append(row.call_id)
    return decisions, results, call_ids


def _client_row(db: Db, thread_id: str, principal: str, answer: Answer) -> PendingRecord:
    """The client tool call a result answers."""
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
    record = pending_record(row)
    if row[RESOLVED_AT] is not None:
        raise Rejected(f"call {record.call_id!r} was already answered", "already_answered")
    return record


def answer_claim(answer: Answer) -> ApprovalClaim:
    """An approval's or a question's answer as the approval rules check it."""
    if answer.kind == "input":
        if answer.action not in ("accept", "decline", "cancel"):
            raise Rejected(
                f"an answer to a question is accept, decline or cancel, not {answer.action!r}",
                "invalid_answer",
                400,
            )
        return ApprovalClaim(
            answer.approval_id or "", InputAnswer(answer.action, answer.content), answer.call_id
        )
    if answer.remember not in (None, "thread"):
        raise Rejected('remember must be "thread" when given', "invalid_answer", 400)
    decision = Decision(
        bool(answer.approved),
        answer.reason,
        answer.arguments,
        data=answer.data,
        remember="thread" if answer.remember == "thread" else None,
    )
    return ApprovalClaim(answer.approval_id or "", decision, answer.call_id)


def claim_answer(claim: ApprovalClaim) -> Answer:
    """A claim as the journal takes it: an approval's decision (with its ``data`` and
    ``remember``, which the journal keeps), or the answer to a tool's question."""
    answer = claim.decision
    if isinstance(answer, InputAnswer):
        return Answer(
            "input", claim.call_id, claim.approval_id, action=answer.action, content=answer.content
        )
    return Answer(
        "approval",
        claim.call_id,
        claim.approval_id,
        answer.approved,
        answer.reason,
        arguments=answer.arguments,
        data=answer.data,
        remember=answer.remember,
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
