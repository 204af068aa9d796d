"""The one connection type the journal's SQL runs on, and what differs between databases.

The journal's statements are written once, in the SQL that SQLite (3.35 and later:
``RETURNING``, upserts) and Postgres both accept, with ``?`` placeholders. ``Db`` is
that connection (``SQLiteDb`` for SQLite); ``_pg.PgDb`` is the same for Postgres and carries the
differences: psycopg's ``%s`` placeholders, ``BEGIN`` for ``BEGIN IMMEDIATE``, row
locks (``FOR UPDATE``), a per-thread lock (SQLite's single writer already serializes
every transaction; Postgres has several writers), the database's clock for leases,
holding a batch's writes to send them together (a few round trips per batch instead
of one per statement), its column types (``_pg.ddl``) and its errors.

No SQL toolkit (SQLAlchemy Core) is used: the differences are those few, and a toolkit
would put a layer between the journal and the transaction boundaries that are its point.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol


def thread_key(principal: str, thread_id: str) -> str:
    """What a thread's lock is taken by: its principal and its id, one string per pair
    (two principals' threads of one id are two threads, and never wait for each other)."""
    return json.dumps([principal, thread_id], ensure_ascii=False, separators=(",", ":"))


class Cursor(Protocol):
    """What the journal reads from a statement (``sqlite3.Cursor`` and psycopg's both are)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection as the journal uses it (``SQLiteDb``, ``_pg.PgDb``)."""

    begin_sql: str
    """Starts a write transaction (SQLite: ``BEGIN IMMEDIATE``, the write lock at once)."""
    for_update: str
    """Appended to a ``SELECT`` of rows the transaction will change (a row lock where the
    database has several writers)."""
    defers_errors: bool
    """Whether a write's error may surface later (it was held), not when it is made."""
    packs_frames: bool
    """Whether event frames are stored zlib-compressed (``events.packed``): on Postgres
    a chunk travels as a text literal the server parses and then compresses again, and
    compressing on this side first cost less than that (measured: about 0.1 ms of
    database CPU per run); SQLite takes the bytes as they are."""

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """What a failed statement raises."""
        ...

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor: ...

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        """A statement whose result is not read (inside ``deferred``, it may be held)."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """``write`` for each row."""
        ...

    @property
    def in_transaction(self) -> bool: ...

    @property
    def broken(self) -> bool:
        """Whether the connection is lost and must be opened again."""
        ...

    def lock_thread(self, key: str, *, wait: bool = False) -> bool:
        """Take the lock of the thread whose ``thread_key`` is ``key`` until the
        transaction ends; False when another transaction holds it (and ``wait`` is False)."""
        ...

    def now(self) -> float:
        """The clock leases are measured by."""
        ...

    clock_sql: str
    """``now``'s clock as an SQL expression (a row written in the round trip that reads
    ``now``)."""
    thread_lock_sql: str
    """An SQL condition, true where this transaction holds the lock of the thread whose
    ``thread_key`` is its one parameter (taking it if it is free; SQLite: always true)."""

    def lock_thread_and_read(
        self, key: str, reads: Sequence[tuple[str, Sequence[Any]]]
    ) -> tuple[bool, float, list[list[Any]]]:
        """``lock_thread`` (not waiting), ``now``, and the rows of each statement of
        ``reads``, run in order once the lock is taken (on Postgres one round trip: the
        statements come after the lock's, so they see what its last holder committed)."""
        ...

    def deferred(self) -> AbstractContextManager[None]:
        """Writes inside may be held and sent together with the next statement that is
        read, or at ``sync`` (and on the way out): a batch of writes costs a round
        trip, not one per statement. Their errors then surface there."""
        ...

    def sync(self) -> None:
        """Send the held writes and wait for them (raising the first one's error)."""
        ...

    def tables(self) -> list[str]:
        """The journal's tables but the process leases (for ``snapshot``)."""
        ...

    def close(self) -> None: ...


class SQLiteDb:
    """A SQLite connection as the journal uses it."""

    __slots__ = ("raw",)

    begin_sql = "BEGIN IMMEDIATE"
    for_update = ""
    defers_errors = False
    packs_frames = False
    clock_sql = "((julianday('now') - 2440587.5) * 86400.0)"
    thread_lock_sql = "? IS NOT NULL"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        return self.raw.execute(sql, args)

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.raw.execute(sql, args)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.raw.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction

    @property
    def broken(self) -> bool:
        return False

    def lock_thread(self, key: str, *, wait: bool = False) -> bool:
        """Always held: SQLite's write lock (``BEGIN IMMEDIATE``) is every thread's."""
        return True

    def now(self) -> float:
        """This machine's clock: a journal file is shared by processes of one machine."""
        return time.time()

    def lock_thread_and_read(
        self, key: str, reads: Sequence[tuple[str, Sequence[Any]]]
    ) -> tuple[bool, float, list[list[Any]]]:
        now = time.time()
        return True, now, [self.raw.execute(sql, args).fetchall() for sql, args in reads]

    def deferred(self) -> AbstractContextManager[None]:
        """Nothing to send: SQLite runs in this process."""
        return contextlib.nullcontext()

    def sync(self) -> None:
        pass

    def tables(self) -> list[str]:
        rows = self.raw.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'owners' ORDER BY name"
        )
        return [name for (name,) in rows]

    def close(self) -> None:
        self.raw.close()
