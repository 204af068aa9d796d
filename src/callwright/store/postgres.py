"""The run journal on Postgres: one database shared by every replica and worker.

The same journal as on SQLite (``_journal.SQLJournal``: one code path, the
differences in ``_pg.PgDb``), on psycopg 3's synchronous connections: one for the
writer thread, one for reads. What several writing processes add (a thread's lock
taken by a request, recovery re-checking under it, ``claim``/``reopen`` under row
locks, the database's clock for leases) is described in ``_pg`` and ``_journal``.
A lost connection (Postgres restarted) is opened again by the next transaction; a
write that fails meanwhile stops its run with ``JournalUnavailable``, as a full disk
does on SQLite.
"""

from __future__ import annotations

import functools

from . import _pg
from ._journal import SQLJournal
from ._sql import Db
from .base import JournalLimits


class PostgresJournal(SQLJournal):
    """A ``Journal`` on Postgres at ``url`` (``postgresql://user@host:port/database``).

    The parameters are ``SQLiteJournal``'s: ``busy_seconds`` bounds how long a
    statement waits for another transaction's lock (``lock_timeout``) and how long
    connecting may take. ``statement_seconds`` bounds one statement
    (``statement_timeout``) and, with ``busy_seconds`` added, how long the journal waits
    on a database that sends nothing (a frozen server, which no server-side timeout
    ends): the write then fails as on a lost connection, and its run stops with
    ``journal_unavailable``. None turns both off. TCP keepalives are on. Parameters of
    ``url`` (``connect_timeout``, ``keepalives_idle``, ``options=-c statement_timeout=…``)
    win over these defaults.
    """

    def __init__(
        self,
        url: str,
        *,
        limits: JournalLimits | None = None,
        lease_seconds: float = 30.0,
        heartbeat_seconds: float | None = None,
        retention_days: float | None = None,
        busy_seconds: float = 10.0,
        statement_seconds: float | None = _pg.STATEMENT_SECONDS,
        owner_id: str | None = None,
        settle_gone: bool = True,
    ) -> None:
        self.url = url
        super().__init__(
            url,
            functools.partial(_pg.connect, url, busy_seconds, statement_seconds),
            _prepare,
            limits=limits,
            lease_seconds=lease_seconds,
            heartbeat_seconds=heartbeat_seconds,
            retention_days=retention_days,
            owner_id=owner_id,
            settle_gone=settle_gone,
        )


def _prepare(db: Db) -> None:
    assert isinstance(db, _pg.PgDb)
    _pg.prepare(db)


def is_postgres_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))
