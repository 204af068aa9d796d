"""Settling a run whose process is gone (or could not write): its history made whole.

The step the model had answered is rebuilt from the operations: completed tool
calls get their journaled output, a call that had started is in doubt (its
operation's status becomes ``in_doubt`` and it gets an ``InDoubt`` result, which the
resumed run reconciles where the tool can) unless its tool is idempotent or it saved a
handle to its work (``ToolContext.save_handle``: then it runs again on resume, with the
handle to re-attach), calls that never started run on resume. Results for calls of a
message already in the history are merged in place (call order, before anything
written after it), a reply not yet in the history is appended with its results:
history is never reordered. The run becomes ``interrupted`` (the next request on its thread
resumes it), its running segment is closed, and the segment's closing frame
ends its event log so that a replay ends with an error, not forever. Continuing a run
on another process (``reopen``) rebuilds the history the same way but keeps it running.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._tool_files import file_from_dict
from ..call import InDoubt, edit_note, is_in_doubt, strip_meta
from ..messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    last_assistant_index,
    merge_results,
    message_from_dict,
)
from ._rows import append_frame, load_history, write_messages
from ._sql import Db
from .base import JournalLimits

INTERRUPTED = "the server stopped during the run"


@dataclass(frozen=True, slots=True)
class Unwritten:
    """What a segment whose writes failed could not write, kept in memory until it is
    settled (``Journal.release``)."""

    outcomes: list[tuple[str, Any]]
    """Tool outcomes, as (call id, output)."""
    frames: list[tuple[int, str, bytes]]
    """Frames the client was sent, as (offset, kind, frame), in offset order."""


def settle_run(
    db: Db,
    run_id: str,
    thread_id: str,
    principal: str,
    idempotent: set[str],
    limits: JournalLimits,
    now: float,
    reason: str = INTERRUPTED,
) -> None:
    """Make the run's history whole and close it (inside the caller's transaction)."""
    rebuild(db, run_id, thread_id, principal, idempotent, limits)
    db.execute(
        "UPDATE runs SET status = 'interrupted', reason = ?, updated_at = ? WHERE id = ?",
        (reason, now, run_id),
    )
    for segment, closing in db.execute(
        "SELECT id, closing FROM segments WHERE run_id = ? AND status = 'running'", (run_id,)
    ).fetchall():
        db.execute(
            "UPDATE segments SET status = 'interrupted', closed_at = ? WHERE id = ?",
            (now, segment),
        )
        if closing:
            append_frame(db, segment, bytes(closing))


def rebuild(
    db: Db,
    run_id: str,
    thread_id: str,
    principal: str,
    idempotent: set[str],
    limits: JournalLimits,
) -> list[Message]:
    """Write the run's unrecorded replies and outcomes into its thread's history (what
    settling a run and continuing it elsewhere share); returns the history."""
    history = load_history(db, thread_id, principal)
    ops = _operations(db, run_id)
    settled = rebuilt_history(history, ops, idempotent)
    _mark_in_doubt(db, run_id, settled, ops)
    first = 0
    while first < len(history) and first < len(settled) and settled[first] is history[first]:
        first += 1
    write_messages(db, thread_id, principal, run_id, first, settled[first:], limits, replace=True)
    return settled


def rebuilt_history(
    history: list[Message], ops: list[dict[str, Any]], idempotent: set[str]
) -> list[Message]:
    """``history`` with the run's unrecorded replies and outcomes added in place."""
    known = {m.id for m in history if isinstance(m, AssistantMessage) and m.id}
    replies: list[AssistantMessage] = []
    for op in ops:
        if op["name"] == "model" and op["output"] is not None:
            reply = message_from_dict(op["output"])
            if isinstance(reply, AssistantMessage) and reply.id not in known:
                replies.append(reply)
    outcomes = _outcomes(history, replies, ops, idempotent)
    settled = list(history)
    index = last_assistant_index(settled)
    if index >= 0:
        last = settled[index]
        assert isinstance(last, AssistantMessage)
        in_place = [outcomes.pop(p.id) for p in last.tool_calls if p.id in outcomes]
        if in_place:
            merge_results(settled, in_place)
    for reply in replies:
        settled.append(reply)
        settled.extend(outcomes.pop(p.id) for p in reply.tool_calls if p.id in outcomes)
    return settled


def _outcomes(
    history: list[Message],
    replies: list[AssistantMessage],
    ops: list[dict[str, Any]],
    idempotent: set[str],
) -> dict[str, ToolResultMessage]:
    """The result each call without one gets: its journaled output, or in doubt."""
    answered = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
    parts = {
        p.id: p
        for m in [*history, *replies]
        if isinstance(m, AssistantMessage)
        for p in m.tool_calls
    }
    names = {call_id: p.name for call_id, p in parts.items()}
    outcomes: dict[str, ToolResultMessage] = {}
    for op in ops:
        call_id = op["call_id"]
        if op["name"] == "model" or call_id in answered or call_id not in names:
            continue
        name = names[call_id]
        if op["status"] == "completed" and op["output"] is not None:
            out = op["output"]
            files = [file_from_dict(f) for f in out.get("files", ())]
            outcomes[call_id] = ToolResultMessage(
                call_id, name, out["content"], out["is_error"], files
            )
        elif op["status"] == "started" and not (
            op["idempotent"] or name in idempotent or op.get("handle")
        ):
            # an approver's edit stays in the result: the model sees what ran, and
            # reconciling uses the key the call ran with
            edited = (op["output"] or {}).get("edited")
            note = edit_note(strip_meta(parts[call_id].arguments), edited)
            text = note + InDoubt().model_text()
            outcomes[call_id] = ToolResultMessage(call_id, name, text, True)
    return outcomes


def _mark_in_doubt(db: Db, run_id: str, settled: list[Message], ops: list[dict[str, Any]]) -> None:
    """Record in the journal which started calls were left in doubt."""
    doubted = {
        m.call_id
        for m in settled
        if isinstance(m, ToolResultMessage) and m.is_error and is_in_doubt(m.content)
    }
    for op in ops:
        if op["name"] != "model" and op["status"] == "started" and op["call_id"] in doubted:
            db.execute(
                "UPDATE operations SET status = 'in_doubt' WHERE run_id = ? AND call_id = ? "
                "AND status = 'started'",
                (run_id, op["call_id"]),
            )


def _operations(db: Db, run_id: str) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT name, call_id, status, output, idempotent, handle FROM operations "
        "WHERE run_id = ? ORDER BY seq",
        (run_id,),
    ).fetchall()
    return [
        {
            "name": name,
            "call_id": call_id,
            "status": status,
            "output": json.loads(output) if output else None,
            "idempotent": bool(idem),
            "handle": handle is not None,
        }
        for name, call_id, status, output, idem, handle in rows
    ]
