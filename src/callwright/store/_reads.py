"""The journal's reads: a connection of their own, so a replay never waits behind the writer."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..messages import Message
from ._rows import load_history, open_pending, split_chunk
from ._sql import Db
from .base import PendingRecord

T = TypeVar("T")

_AT_ONCE = 50


class JournalReads:
    """Read methods of ``SQLJournal`` (each one short statement or two, no transaction)."""

    def __init__(self, connect: Callable[[], Db]) -> None:
        self._connect = connect
        self._reader = connect()
        self._read_lock = threading.Lock()

    def _reading(self) -> Db:
        """The read connection (held under ``_read_lock``), opened again if it was lost."""
        if self._reader.broken:
            self._reader.close()
            self._reader = self._connect()
        return self._reader

    def _reads(self, fn: Callable[[Db], T]) -> T:
        """``fn`` on the read connection; once more on a new connection if the first
        found it lost (Postgres restarted: reads are safe to repeat)."""
        with self._read_lock:
            db = self._reading()
            try:
                return fn(db)
            except db.errors:
                if not db.broken:
                    raise
            return fn(self._reading())

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        return self._reads(lambda db: db.execute(sql, args).fetchall())

    def _close_reader(self) -> None:
        with self._read_lock:
            self._reader.close()

    def ping(self) -> None:
        """One read of a journal table on the read connection (opened again if lost): the
        database answers and the journal's tables are there."""
        self._read("SELECT 1 FROM owners LIMIT 1", ())

    def with_open_calls(self, request_ids: list[str]) -> set[str]:
        """Asked ``_AT_ONCE`` requests at a time (the last one repeated to fill a query):
        one statement, prepared once, whatever the number of requests."""
        sql = (
            "SELECT DISTINCT s.request_id FROM segments s JOIN operations o "
            "ON o.run_id = s.run_id AND o.status IN ('planned', 'started') "
            f"AND o.name != 'model' WHERE s.request_id IN ({', '.join('?' * _AT_ONCE)})"
        )
        found: set[str] = set()
        for start in range(0, len(request_ids), _AT_ONCE):
            ids = request_ids[start : start + _AT_ONCE]
            ids += ids[-1:] * (_AT_ONCE - len(ids))
            found.update(request_id for (request_id,) in self._read(sql, tuple(ids)))
        return found

    def history(self, thread_id: str, principal: str = "") -> list[Message]:
        return self._reads(lambda db: load_history(db, thread_id, principal))

    def state(self, thread_id: str, principal: str = "") -> dict[str, Any] | None:
        rows = self._read(
            "SELECT state FROM threads WHERE principal = ? AND id = ?", (principal, thread_id)
        )
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def pending(self, thread_id: str, principal: str = "") -> list[PendingRecord]:
        return self._reads(lambda db: open_pending(db, thread_id, principal))

    def run_status(self, run_id: str) -> str | None:
        rows = self._read("SELECT status FROM runs WHERE id = ?", (run_id,))
        return rows[0][0] if rows else None

    def operations(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT seq, segment, name, call_id, input_hash, idempotency_key, status, output "
            "FROM operations WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        keys = ("seq", "segment", "name", "call_id", "input_hash", "idempotency_key", "status")
        return [
            {**dict(zip(keys, row[:7], strict=True)), "output": json.loads(row[7] or "null")}
            for row in rows
        ]

    def _segment(self, request_id: str, principal: str) -> tuple[int, str, int] | None:
        rows = self._read(
            "SELECT id, status, purged FROM segments WHERE principal = ? AND request_id = ?",
            (principal, request_id),
        )
        return rows[0] if rows else None

    def events_after(
        self, request_id: str, offset: int, principal: str = "", chunks: int | None = None
    ) -> list[tuple[int, bytes]]:
        """The event log of one segment (one request's stream), after ``offset``; at most
        ``chunks`` of its stored chunks (a replay reads a long log a part at a time)."""
        sql = (
            "SELECT e.offsets, e.lengths, e.frames, e.packed FROM events e "
            "JOIN segments s ON s.id = e.segment "
            'WHERE s.principal = ? AND s.request_id = ? AND e."last" > ? ORDER BY e."first"'
        )
        args: tuple[Any, ...] = (principal, request_id, offset)
        if chunks is not None:
            sql, args = sql + " LIMIT ?", (*args, chunks)
        rows = self._read(sql, args)
        return [(o, f) for row in rows for o, f in split_chunk(*row) if o > offset]

    def has_events(self, request_id: str, principal: str = "") -> bool:
        """Whether the segment exists for this principal and its log is still kept."""
        row = self._segment(request_id, principal)
        return row is not None and not row[2]

    def expired(self, request_id: str, principal: str = "") -> bool:
        """Whether the segment's event log was deleted under ``retention_days``."""
        row = self._segment(request_id, principal)
        return row is not None and bool(row[2])

    def segment_done(self, request_id: str, principal: str = "") -> bool:
        row = self._segment(request_id, principal)
        return row is None or row[1] != "running"

    def live_segment(self, thread_id: str, principal: str = "") -> str | None:
        """The request id of the thread's running segment, if any (the AI SDK's resume
        request names the chat, not the run)."""
        rows = self._read(
            "SELECT request_id FROM segments WHERE principal = ? AND thread_id = ? "
            "AND status = 'running' AND purged = 0 ORDER BY id DESC LIMIT 1",
            (principal, thread_id),
        )
        return str(rows[0][0]) if rows else None

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table but the process leases: tests compare it before and
        after a refused request."""

        def read(db: Db) -> dict[str, list[tuple[Any, ...]]]:
            return {
                t: [tuple(row) for row in db.execute(f'SELECT * FROM "{t}" ORDER BY 1, 2')]
                for t in db.tables()
            }

        return self._reads(read)
