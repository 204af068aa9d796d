"""A request's new segment row.

A new thread's first segment is inserted in the round trip that takes the thread's
lock and reads the thread (``first_segment``): on Postgres a request then starts in one
round trip, where inserting it after the read took a second one (about 30 µs of the
database's CPU and a wake-up of the writer thread per run). The statement inserts only
where the thread does not exist and the transaction holds its lock, so a request on an
existing or busy thread inserts nothing here and goes on as before
(``insert_segment``, once the reads have said which run it continues).

A thread is its principal's: its lock is taken by ``thread_key``, and a request id, a
segment's deduplication key and a new run's id are made from the principal with the
thread, so that another principal's thread of the same id never meets this one.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from ._rows import check_request_id
from ._sql import Db, thread_key
from .base import Answer, Rejected, Segment, canonical_json, digest

_INSERT = (
    "INSERT INTO segments (run_id, seq, request_id, thread_id, principal, dedup_key, "
    "status, owner, closing, spec, created_at) "
)
_FIRST = (
    _INSERT + "SELECT ?, 0, ?, ?, ?, ?, 'running', ?, ?, ?, {clock} "
    "WHERE NOT EXISTS (SELECT 1 FROM threads WHERE principal = ? AND id = ?) AND {locked} "
    "ON CONFLICT DO NOTHING RETURNING id"
)


@dataclass(frozen=True, slots=True)
class FirstSegment:
    """The statement that inserts a new thread's first segment (see the module)."""

    run_id: str
    sql: str
    args: tuple[Any, ...]


def first_segment(
    db: Db,
    thread_id: str,
    request_id: str,
    principal: str,
    owner: str | None,
    closing: bytes,
    spec: str = "",
) -> FirstSegment:
    run_id = new_run_id(principal, thread_id, request_id, time.time())
    sql = _FIRST.format(clock=db.clock_sql, locked=db.thread_lock_sql)
    dedup = digest([principal, thread_id, request_id])
    row = (run_id, request_id, thread_id, principal, dedup, owner, closing or None, spec or None)
    return FirstSegment(run_id, sql, (*row, principal, thread_id, thread_key(principal, thread_id)))


def new_run_id(principal: str, thread_id: str, request_id: str, now: float) -> str:
    return f"run_{digest([principal, thread_id, request_id, now])[:24]}"


def insert_segment(
    db: Db,
    thread_id: str,
    run_id: str | None,
    request_id: str,
    principal: str,
    answers: list[Answer],
    owner: str | None,
    now: float,
    closing: bytes,
    spec: str = "",
) -> Segment:
    """The new segment: of the run it resumes (``run_id``), else of a new run (``spec``:
    what another process needs to continue it, see ``Journal.begin``)."""
    seq = 0
    if run_id is None:
        run_id = new_run_id(principal, thread_id, request_id, now)
    else:
        seq = db.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM segments WHERE run_id = ?", (run_id,)
        ).fetchone()[0]
    answered = sorted(canonical_json([a.kind, a.approval_id, a.call_id]) for a in answers)
    dedup = digest([run_id, answered] if answers else [principal, thread_id, request_id])
    row = (run_id, seq, request_id, thread_id, principal, dedup, owner, closing or None)
    rows = db.execute(
        _INSERT
        + "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
        (*row, spec or None, now),
    ).fetchall()
    return inserted(db, rows, Segment(thread_id, run_id, seq, request_id, 0, principal))


def inserted(db: Db, rows: list[Any], segment: Segment) -> Segment:
    """``segment`` with the id its insert returned; none returned: the request id or the
    answers were seen before (a replay), or the request id names another thread's."""
    if not rows:
        check_request_id(db, segment.thread_id, segment.request_id, segment.principal)
        raise Rejected("this request was already processed (a replay)", "duplicate_request")
    return dataclasses.replace(segment, id=int(rows[0][0]))
