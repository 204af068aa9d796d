"""Cancel requests for one call, passed between replicas through the journal's database.

Behind a load balancer, ``POST /runs/{run_id}/calls/{call_id}/cancel`` may reach a
replica other than the one streaming the run. That replica checks the request against
the journal (the run's principal, the call's operation) and leaves an ``inbox`` row of
kind ``cancel`` (payload ``requested``); the replica streaming the run takes the
requests of its own runs on its next poll (payload ``taken``) and fires the calls'
tokens. One row per call (its ``dedup_key``): a call is never asked to stop twice.
The row's ``run_id`` is the run's id as its client knows it (the segment's request id,
what the URL names), not the journal's run id that answers' rows hold.

The partial index that keeps the poll cheap is made with ``CREATE INDEX IF NOT
EXISTS`` on this store's own connection, outside the journal's layout (like the
artifacts' table): a journal without it is the same journal.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Collection

from ._direct import DirectConnection
from .base import digest

INDEX = (
    "CREATE INDEX IF NOT EXISTS inbox_cancel_requests ON inbox (run_id) "
    "WHERE kind = 'cancel' AND payload = 'requested'"
)
CHUNK = 500
"""Run ids per poll statement."""


class Verdict(enum.Enum):
    """What the journal says of a cancel request."""

    ACCEPTED = "accepted"
    """The call is running: the request is recorded for the replica streaming it."""
    FINISHED = "finished"
    """The call is known but not running (finished, in doubt, or not started), or it
    was already asked to stop (like a second ``Run.cancel_call``)."""
    UNKNOWN = "unknown"
    """No such run or call, or the run is another principal's."""


class CancelRequests:
    """The cancel requests in the database of a journal ``target`` (a SQLite file path
    or a ``postgresql://`` URL). Its methods block: call them from worker threads."""

    def __init__(self, target: str, *, busy_seconds: float = 10.0) -> None:
        self.target = target
        self._busy_seconds = busy_seconds
        self._db: DirectConnection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> DirectConnection:
        """The store's connection, opened on first use (under the lock): a server whose
        runs are never cancelled from elsewhere never opens it."""
        if self._db is None:
            db = DirectConnection(self.target, self._busy_seconds)
            try:
                try:
                    db.execute(INDEX)
                except Exception:
                    # two replicas starting at once: the other one made it
                    db.execute(INDEX)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def request(self, principal: str, run_id: str, call_id: str) -> Verdict:
        """Record a request to stop ``call_id`` of ``run_id`` (a segment's request id) if
        that run is ``principal``'s and streams, and the call is running; say what was
        found."""
        with self._lock:
            db = self._connection()
            segment = db.execute(
                "SELECT run_id, thread_id, status FROM segments "
                "WHERE principal = ? AND request_id = ?",
                (principal, run_id),
            ).fetchone()
            if segment is None:
                return Verdict.UNKNOWN
            call = db.execute(
                "SELECT status FROM operations WHERE run_id = ? AND call_id = ? "
                "AND name != 'model' ORDER BY seq DESC LIMIT 1",
                (segment[0], call_id),
            ).fetchone()
            if call is None:
                return Verdict.UNKNOWN
            if segment[2] != "running" or call[0] != "started":
                return Verdict.FINISHED
            added = db.execute(
                "INSERT INTO inbox (thread_id, run_id, call_id, kind, payload, dedup_key, "
                "created_at, principal) VALUES (?, ?, ?, 'cancel', 'requested', ?, ?, ?) "
                "ON CONFLICT (dedup_key) DO NOTHING RETURNING id",
                (
                    segment[1],
                    run_id,
                    call_id,
                    digest(["cancel", run_id, call_id]),
                    time.time(),
                    principal,
                ),
            ).fetchone()
        return Verdict.ACCEPTED if added is not None else Verdict.FINISHED

    def take(self, run_ids: Collection[str]) -> list[tuple[str, str]]:
        """The ``(run_id, call_id)`` requested for ``run_ids`` and not yet taken; taken
        now, so that no later poll (here or elsewhere) returns them again."""
        ids = sorted(run_ids)
        taken: list[tuple[str, str]] = []
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ", ".join("?" for _ in chunk)
            with self._lock:
                rows = (
                    self._connection()
                    .execute(
                        "UPDATE inbox SET payload = 'taken' WHERE kind = 'cancel' "
                        f"AND payload = 'requested' AND run_id IN ({marks}) "
                        "RETURNING run_id, call_id",
                        tuple(chunk),
                    )
                    .fetchall()
                )
            taken.extend((str(row[0]), str(row[1])) for row in rows)
        return taken

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
