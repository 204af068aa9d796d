"""The run journal on SQLite: one file, WAL, short transactions, one writer thread.

The standard library's ``sqlite3`` is used directly: the journal is a handful of
tables and statements, an ORM would hide the transaction boundaries that are the
point of it. The journal itself is ``_journal.SQLJournal`` (shared with Postgres).
"""

from __future__ import annotations

import functools

from ._journal import SQLJournal
from ._schema import connect, prepare
from ._sql import Db
from .base import JournalLimits


class SQLiteJournal(SQLJournal):
    """The default ``Journal``.

    ``lease_seconds``: how long a serving process's claim on its running segments
    lasts without a heartbeat (renewed every ``heartbeat_seconds``, which is also
    how often runs of gone processes are settled). ``retention_days``: event logs
    of segments closed longer ago are deleted (replay then answers 410); None
    keeps them. ``busy_seconds``: how long a write waits for another process's
    lock before the run stops with an error. ``owner_id`` and ``settle_gone``: see
    ``SQLJournal``.
    """

    def __init__(
        self,
        path: str = "callwright.db",
        *,
        limits: JournalLimits | None = None,
        lease_seconds: float = 30.0,
        heartbeat_seconds: float | None = None,
        retention_days: float | None = None,
        busy_seconds: float = 10.0,
        owner_id: str | None = None,
        settle_gone: bool = True,
    ) -> None:
        self.path = path
        super().__init__(
            path,
            functools.partial(connect, path, busy_seconds),
            _prepare,
            limits=limits,
            lease_seconds=lease_seconds,
            heartbeat_seconds=heartbeat_seconds,
            retention_days=retention_days,
            owner_id=owner_id,
            settle_gone=settle_gone,
        )


def _prepare(db: Db) -> None:
    from ._sql import SQLiteDb

    assert isinstance(db, SQLiteDb)
    prepare(db)
