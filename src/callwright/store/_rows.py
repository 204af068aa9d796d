"""Row helpers the journal's transactions share (each takes the open connection)."""

from __future__ import annotations

import bisect
import json
import zlib
from collections.abc import Sequence
from typing import Any

from ..call import Decision
from ..elicitation import InputAnswer
from ..messages import AssistantMessage, Message, ToolResultMessage, message_from_dict
from ._caps import cap_output, message_body
from ._sql import Db
from ._verify import (
    PENDING_COLUMNS,
    answered_decision,
    decision_json,
    pending_record,
)
from .base import Answer, JournalLimits, PendingRecord, Rejected, Segment, canonical_json, digest


def load_history(db: Db, thread_id: str, principal: str) -> list[Message]:
    rows = db.execute(
        "SELECT body FROM messages WHERE principal = ? AND thread_id = ? ORDER BY seq",
        (principal, thread_id),
    ).fetchall()
    return [message_from_dict(json.loads(body)) for (body,) in rows]


def open_pending(db: Db, thread_id: str, principal: str) -> list[PendingRecord]:
    rows = db.execute(
        f"SELECT {PENDING_COLUMNS} FROM pending WHERE principal = ? AND thread_id = ? "
        "AND resolved_at IS NULL ORDER BY created_at, call_id",
        (principal, thread_id),
    ).fetchall()
    return [pending_record(row) for row in rows]


def write_messages(
    db: Db,
    thread_id: str,
    principal: str,
    run_id: str,
    start: int,
    messages: list[Message],
    limits: JournalLimits,
    *,
    replace: bool = False,
) -> None:
    """Messages from position ``start`` on (``replace``: dropping what was there)."""
    if replace:
        db.write(
            "DELETE FROM messages WHERE principal = ? AND thread_id = ? AND seq >= ?",
            (principal, thread_id, start),
        )
    db.executemany(
        "INSERT INTO messages (thread_id, seq, run_id, body, principal) VALUES (?, ?, ?, ?, ?)",
        [
            (thread_id, start + i, run_id, message_body(m, limits), principal)
            for i, m in enumerate(messages)
        ],
    )


def append_events(db: Db, segment: int, events: Any) -> None:
    """Frames of the segment's event log, as one chunk row (empty frames are not kept:
    nothing was sent for them)."""
    kept = [(offset, frame) for offset, _, frame in events if frame]
    if not kept:
        return
    frames = b"".join([f for _, f in kept])
    if db.packs_frames:
        frames = zlib.compress(frames, 1)
    db.write(
        'INSERT INTO events (segment, "first", "last", offsets, lengths, frames, packed) '
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            segment,
            kept[0][0],
            kept[-1][0],
            ",".join([str(o) for o, _ in kept]),
            ",".join([str(len(f)) for _, f in kept]),
            frames,
            int(db.packs_frames),
        ),
    )


def append_frame(db: Db, segment: int, frame: bytes) -> None:
    """One frame after the segment's last (a closing error frame)."""
    last = db.execute(
        'SELECT COALESCE(MAX("last"), 0) FROM events WHERE segment = ?', (segment,)
    ).fetchone()[0]
    append_events(db, segment, [(int(last) + 1, "", frame)])


def append_missing(db: Db, segment: int, frames: Sequence[tuple[int, str, bytes]]) -> None:
    """Frames a segment's log lacks (their writes failed), each run of them between two
    kept chunks as a chunk of its own: the log reads in offset order, no frame twice."""
    kept = db.execute(
        'SELECT "first", "last" FROM events WHERE segment = ? ORDER BY "first"', (segment,)
    ).fetchall()
    ranges = [(int(first), int(last)) for first, last in kept]
    firsts = [first for first, _ in ranges]
    runs: list[list[tuple[int, str, bytes]]] = []
    place = -1
    for frame in frames:
        at = bisect.bisect_right(firsts, frame[0]) - 1
        if at >= 0 and frame[0] <= ranges[at][1]:
            continue  # written after all (its chunk was kept)
        if not runs or at != place:
            runs.append([])
            place = at
        runs[-1].append(frame)
    for run in runs:
        append_events(db, segment, run)


def split_chunk(
    offsets: str, lengths: str, frames: bytes, packed: int = 0
) -> list[tuple[int, bytes]]:
    """A chunk row back into (offset, frame) pairs."""
    out = []
    start = 0
    data = zlib.decompress(frames) if packed else bytes(frames)
    for offset, length in zip(offsets.split(","), lengths.split(","), strict=True):
        end = start + int(length)
        out.append((int(offset), data[start:end]))
        start = end
    return out


def check_request_id(db: Db, thread_id: str, request_id: str, principal: str) -> None:
    """A run id names one request of one thread (per principal)."""
    row = db.execute(
        "SELECT thread_id FROM segments WHERE principal = ? AND request_id = ?",
        (principal, request_id),
    ).fetchone()
    if row is None:
        return
    if row[0] == thread_id:
        raise Rejected("this request was already processed (a replay)", "duplicate_request")
    raise Rejected(
        f"run id {request_id!r} was already used in another thread; send a new run id",
        "run_id_in_use",
    )


def take_answers(
    db: Db,
    segment: Segment,
    answers: list[Answer],
    call_ids: list[str],
    decisions: dict[str, Decision | InputAnswer],
    now: float,
) -> None:
    """Resolve the answered pending calls and keep each answer as an inbox row; an
    approval's row keeps the decision (what recovery gives a call approved but not yet
    run) and ``remember = 'thread'`` when the human allowed the tool for the thread (a
    grant the call's later questions, on the same row, never take back)."""
    if not answers:
        return
    updates = []
    for call_id in call_ids:
        decision = decisions.get(call_id)
        kept = decision_json(decision) if isinstance(decision, Decision) else None
        remember = (
            "thread"
            if isinstance(decision, Decision) and decision.approved and decision.remember
            else None
        )
        updates.append((now, kept, remember, segment.principal, segment.thread_id, call_id))
    db.executemany(
        "UPDATE pending SET resolved_at = ?, answer = ?, remember = COALESCE(?, remember) "
        "WHERE principal = ? AND thread_id = ? AND call_id = ?",
        updates,
    )
    db.executemany(
        "INSERT INTO inbox (thread_id, run_id, call_id, kind, payload, dedup_key, created_at, "
        "principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                segment.thread_id,
                segment.run_id,
                call_id,
                answer.kind,
                canonical_json(answer_payload(answer)),
                digest([segment.run_id, segment.seq, answer.kind, call_id]),
                now,
                segment.principal,
            )
            for answer, call_id in zip(answers, call_ids, strict=True)
        ],
    )


def upsert_thread_and_run(
    db: Db,
    segment: Segment,
    state: dict[str, Any] | None,
    new_thread: bool,
    now: float,
) -> None:
    if new_thread:
        db.write(
            "INSERT INTO threads (id, state, created_at, updated_at, principal) "
            "VALUES (?, ?, ?, ?, ?)",
            (segment.thread_id, maybe_json(state), now, now, segment.principal),
        )
    else:
        db.write(
            "UPDATE threads SET updated_at = ? WHERE principal = ? AND id = ?",
            (now, segment.principal, segment.thread_id),
        )
    db.write(
        "INSERT INTO runs (id, thread_id, status, reason, created_at, updated_at, principal) "
        "VALUES (?, ?, 'running', NULL, ?, ?, ?) ON CONFLICT(id) DO UPDATE "
        "SET status = 'running', reason = NULL, updated_at = excluded.updated_at",
        (segment.run_id, segment.thread_id, now, now, segment.principal),
    )


def fence(db: Db, segment: Segment, owner: str | None = None) -> None:
    """Write only to a segment that is still running, under ``owner`` when given (not
    settled, nor taken over, by another process whose view was that this one's owner
    had gone)."""
    row = db.execute(
        "SELECT status, owner FROM segments WHERE id = ?" + db.for_update, (segment.id,)
    ).fetchone()
    if row is not None and row[0] != "running":
        raise RuntimeError(f"run {segment.run_id} was settled by recovery; it cannot go on")
    if row is not None and owner is not None and row[1] != owner:
        raise RuntimeError(f"run {segment.run_id} was taken over by another process; it stops here")


def operation_row(
    segment: Segment, row: dict[str, Any], limits: JournalLimits, now: float
) -> tuple[Any, ...]:
    """An operation as planned by the recorder: a model call carries its reply
    (``message``, None when the step is committed with it), a tool call its
    ``arguments``; the hashes and the stored output are made here, off the loop."""
    name = row["name"]
    if name == "model":
        input_hash = digest([segment.run_id, row.get("step")])
        message = row.get("message")
        output = None if message is None else message_body(message, limits)
    else:
        input_hash = digest(row.get("arguments") or {})
        output = None
    return (
        segment.run_id,
        row["seq"],
        segment.seq,
        name,
        row["call_id"],
        input_hash,
        f"{segment.run_id}:{row['seq']}:{name}:{row['call_id']}",
        row["status"],
        output,
        now,
        now if row["status"] == "completed" else None,
        int(bool(row.get("idempotent"))),
        None,
    )


def save_handle(db: Db, run_id: str, call_id: str, handle: Any) -> None:
    """Keep what a running call saved to find its work again (``ToolContext.save_handle``)."""
    db.write(
        "UPDATE operations SET handle = ? WHERE run_id = ? AND call_id = ? AND name != 'model'",
        (canonical_json(handle), run_id, call_id),
    )


def complete(
    db: Db,
    run_id: str,
    call_id: str,
    output: Any,
    limits: JournalLimits,
    now: float,
    status: str = "completed",
) -> None:
    db.write(
        "UPDATE operations SET status = ?, output = ?, completed_at = ? "
        "WHERE run_id = ? AND call_id = ? AND name != 'model'",
        (status, canonical_json(cap_output(output, limits)), now, run_id, call_id),
    )


def close(db: Db, segment: Segment, status: str, reason: str | None, now: float) -> None:
    db.write(
        "UPDATE runs SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
        (status, reason, now, segment.run_id),
    )
    db.write(
        "UPDATE segments SET status = ?, closed_at = ? WHERE id = ?", (status, now, segment.id)
    )


def purge(db: Db, before: float) -> None:
    """Delete the event logs of segments closed before ``before`` (a batch per call)."""
    ids = [
        row[0]
        for row in db.execute(
            "SELECT id FROM segments WHERE status != 'running' AND purged = 0 "
            "AND closed_at < ? LIMIT 500",
            (before,),
        )
    ]
    for segment in ids:
        db.execute("DELETE FROM events WHERE segment = ?", (segment,))
    db.executemany(
        "UPDATE segments SET purged = 1, closing = NULL WHERE id = ?", [(s,) for s in ids]
    )


def maybe_json(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def answer_payload(answer: Answer) -> dict[str, Any]:
    return {
        "approval_id": answer.approval_id,
        "approved": answer.approved,
        "reason": answer.reason,
        "arguments": answer.arguments,
        "result": answer.result,
        "is_error": answer.is_error,
        "action": answer.action,
        "content": answer.content,
        "data": answer.data,
        "remember": answer.remember,
    }


THREAD_APPROVALS = 64
"""The most tools a thread's remembered approvals hold when read back (the latest)."""


def thread_approvals(db: Db, thread_id: str, principal: str) -> list[str]:
    """The tools a human allowed for the rest of the thread, oldest first (the most
    recent ``THREAD_APPROVALS``)."""
    rows = db.execute(
        "SELECT tool_name FROM pending WHERE principal = ? AND thread_id = ? "
        "AND remember = 'thread' GROUP BY tool_name ORDER BY MAX(resolved_at) DESC LIMIT ?",
        (principal, thread_id, THREAD_APPROVALS),
    ).fetchall()
    return [name for (name,) in reversed(rows)]


def kept_decisions(
    db: Db, thread_id: str, principal: str, history: list[Message]
) -> dict[str, Decision]:
    """The decisions given for the last reply's calls that have no result yet (approved,
    or denied, before the process running them stopped): a recovered run applies them
    instead of asking again."""
    last = next((m for m in reversed(history) if isinstance(m, AssistantMessage)), None)
    if last is None or not last.tool_calls:
        return {}
    done = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
    open_calls = [p.id for p in last.tool_calls if p.id not in done]
    decisions: dict[str, Decision] = {}
    for call_id in open_calls:
        row = db.execute(
            "SELECT answer FROM pending WHERE principal = ? AND thread_id = ? AND call_id = ? "
            "AND kind = 'approval' AND resolved_at IS NOT NULL",
            (principal, thread_id, call_id),
        ).fetchone()
        decision = answered_decision(row[0]) if row is not None else None
        if decision is not None:
            decisions[call_id] = decision
    return decisions


def kept_handles(db: Db, run_id: str | None, history: list[Message]) -> dict[str, Any]:
    """The handles saved by the last reply's calls that started and have no result yet
    (their process stopped while they ran): a recovered run runs them again with their
    handle (``ToolContext.resumed_handle``), to re-attach to their work."""
    last = next((m for m in reversed(history) if isinstance(m, AssistantMessage)), None)
    if run_id is None or last is None or not last.tool_calls:
        return {}
    done = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
    open_calls = {p.id for p in last.tool_calls if p.id not in done}
    rows = db.execute(
        "SELECT call_id, handle FROM operations WHERE run_id = ? AND name != 'model' "
        "AND status = 'started' AND handle IS NOT NULL",
        (run_id,),
    ).fetchall()
    return {call_id: json.loads(h) for call_id, h in rows if call_id in open_calls}


def resumed(
    db: Db,
    run_id: str | None,
    thread_id: str,
    principal: str,
    history: list[Message],
    decisions: dict[str, Decision | InputAnswer],
) -> tuple[int, dict[str, Decision | InputAnswer]]:
    """A resumed run's next operation, and its decisions: the request's, and those kept
    for calls approved (or denied) before its process stopped and not run yet."""
    if run_id is None:
        return 1, decisions
    next_op = db.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM operations WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    return int(next_op), {**kept_decisions(db, thread_id, principal, history), **decisions}


def loads(text: str | None) -> Any:
    """A JSON column's value (None stays None)."""
    return None if text is None else json.loads(text)
