"""The journal's tables, its connections, and the migrations from older layouts.

``PRAGMA user_version`` holds the layout: 0 is an empty file or the first
layout (no principals, owners or segment ids), 2 the second (thread ids global), 3 is
this one: a thread is keyed by its principal and its id, and so are its messages
and pending calls (two principals' threads of one id are two threads). A file of
this layout gets what was added to it since when opened (``ADDED_COLUMNS``, the
index of running segments). Migrating from the first layout adds the new columns
(existing rows belong to the principal ``""``), gives segments an id and keys the
event log by it (a row per chunk of frames, not per frame); a run id that the first
layout let two threads share keeps its first segment's events. Migrating from
either rebuilds ``threads``, ``messages`` and ``pending`` with the principal in
their keys (``rekey_threads``; a message or pending call gets its thread's
principal).
"""

from __future__ import annotations

import sqlite3

from ._sql import SQLiteDb

VERSION = 3
CACHE_KIB = 32 * 1024
"""Page cache per connection (SQLite's default, 2 MiB, is smaller than the pages a
busy server touches between checkpoints: misses become reads)."""

TABLES = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT NOT NULL, state TEXT, created_at REAL, updated_at REAL,
    principal TEXT NOT NULL DEFAULT '', PRIMARY KEY (principal, id));
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT, body TEXT,
    principal TEXT NOT NULL DEFAULT '', PRIMARY KEY (principal, thread_id, seq));
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, thread_id TEXT, status TEXT, reason TEXT,
    created_at REAL, updated_at REAL, principal TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS operations (
    run_id TEXT, seq INTEGER, segment INTEGER, name TEXT, call_id TEXT, input_hash TEXT,
    idempotency_key TEXT, status TEXT, output TEXT, started_at REAL,
    completed_at REAL, idempotent INTEGER NOT NULL DEFAULT 0, handle TEXT,
    PRIMARY KEY (run_id, seq));
CREATE INDEX IF NOT EXISTS operations_by_call ON operations (run_id, call_id);
CREATE TABLE IF NOT EXISTS pending (
    thread_id TEXT NOT NULL, call_id TEXT NOT NULL, run_id TEXT, kind TEXT,
    approval_id TEXT UNIQUE, tool_name TEXT, arguments TEXT, reason_for_call TEXT,
    created_at REAL, resolved_at REAL, principal TEXT NOT NULL DEFAULT '', request TEXT,
    answer TEXT, remember TEXT, PRIMARY KEY (principal, thread_id, call_id));
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY, thread_id TEXT, run_id TEXT, call_id TEXT, kind TEXT,
    payload TEXT, dedup_key TEXT UNIQUE, created_at REAL, principal TEXT NOT NULL DEFAULT '');
"""

V2_TABLES = """
CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL, request_id TEXT NOT NULL,
    thread_id TEXT NOT NULL, principal TEXT NOT NULL DEFAULT '', dedup_key TEXT UNIQUE,
    status TEXT, owner TEXT, closing BLOB, purged INTEGER NOT NULL DEFAULT 0,
    created_at REAL, closed_at REAL, UNIQUE (run_id, seq), UNIQUE (principal, request_id));
CREATE INDEX IF NOT EXISTS segments_to_purge ON segments (closed_at) WHERE purged = 0;
CREATE TABLE IF NOT EXISTS events (
    segment INTEGER, "first" INTEGER, "last" INTEGER, offsets TEXT, lengths TEXT, frames BLOB,
    packed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (segment, "first"));
CREATE TABLE IF NOT EXISTS owners (
    id TEXT PRIMARY KEY, host TEXT, pid INTEGER, started_at REAL, expires_at REAL,
    taken_by TEXT);
"""

RUNNING_INDEX = (
    "CREATE INDEX IF NOT EXISTS segments_running ON segments (owner) WHERE status = 'running'"
)
"""The running segments by owner (what recovery and take-over look up on every beat)."""

THREAD_RUNS_INDEX = (
    "CREATE INDEX IF NOT EXISTS runs_of_thread ON runs (principal, thread_id, created_at)"
)
"""A thread's runs (what a request on it looks up); made once ``runs.principal`` is there
(layout 2 had ``runs_by_thread``, without the principal)."""

ADDED_COLUMNS = [
    ("threads", "principal TEXT NOT NULL DEFAULT ''"),
    ("messages", "principal TEXT NOT NULL DEFAULT ''"),
    ("runs", "principal TEXT NOT NULL DEFAULT ''"),
    ("pending", "principal TEXT NOT NULL DEFAULT ''"),
    ("inbox", "principal TEXT NOT NULL DEFAULT ''"),
    ("operations", "idempotent INTEGER NOT NULL DEFAULT 0"),
    ("owners", "taken_by TEXT"),
    ("pending", "request TEXT"),
    ("pending", "answer TEXT"),
    ("pending", "remember TEXT"),
    ("events", "packed INTEGER NOT NULL DEFAULT 0"),
    ("runs", "settings TEXT"),
    ("segments", "spec TEXT"),
    ("operations", "handle TEXT"),
]
"""Columns added since a table was first made: an older file gets them when opened
(``messages.principal``: its thread's, part of the key from layout 3 on;
``pending.request``: a question's JSON; ``answer``: the decision taken, for recovery;
``remember``: ``'thread'`` on an approval a human gave for the rest of the thread;
``events.packed``: 1 where the chunk's frames are zlib-compressed; ``runs.settings``:
the run's own model settings, JSON; ``segments.spec``: what another process needs to
continue a durable segment, as JSON, NULL where none may; ``operations.handle``: what a
running tool saved to find its work again after a restart, JSON, ``ToolContext.save_handle``)."""


def connect(path: str, busy_seconds: float) -> SQLiteDb:
    """A connection in autocommit mode (transactions are explicit), WAL, short syncs."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout={int(busy_seconds * 1000)}")
        db.execute(f"PRAGMA cache_size={-CACHE_KIB}")
    except BaseException:
        db.close()
        raise
    return SQLiteDb(db)


def prepare(wrapped: SQLiteDb) -> None:
    """Create or migrate the tables (in one transaction)."""
    db = wrapped.raw
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version >= VERSION and _current(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have
        if version >= VERSION:
            _add_columns(db)
            db.execute(RUNNING_INDEX)
        else:
            legacy = version < 2 and _has_table(db, "segments")
            if legacy:
                _add_columns(db)
            _run_script(db, TABLES)
            if legacy:
                _migrate_segments_and_events(db)
            _run_script(db, V2_TABLES)
            _add_columns(db)
            if not _keyed_by_principal(db):
                rekey_threads(db)
            db.execute(THREAD_RUNS_INDEX)
            db.execute(RUNNING_INDEX)
            db.execute(f"PRAGMA user_version={VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


REKEYED = ("threads", "messages", "pending")
"""The tables keyed by thread, whose keys gained the principal in layout 3."""
_COPY = {
    "threads": "INSERT INTO threads (id, state, created_at, updated_at, principal) "
    "SELECT id, state, created_at, updated_at, principal FROM threads_v2",
    "messages": "INSERT INTO messages (thread_id, seq, run_id, body, principal) "
    "SELECT m.thread_id, m.seq, m.run_id, m.body, COALESCE(t.principal, '') "
    "FROM messages_v2 m LEFT JOIN threads_v2 t ON t.id = m.thread_id",
    "pending": "INSERT INTO pending (thread_id, call_id, run_id, kind, approval_id, "
    "tool_name, arguments, reason_for_call, created_at, resolved_at, principal, request, "
    "answer, remember) "
    "SELECT p.thread_id, p.call_id, p.run_id, p.kind, p.approval_id, p.tool_name, "
    "p.arguments, p.reason_for_call, p.created_at, p.resolved_at, "
    "COALESCE(t.principal, p.principal), p.request, p.answer, p.remember "
    "FROM pending_v2 p LEFT JOIN threads_v2 t ON t.id = p.thread_id",
}
"""Each rekeyed table's rows into its new table: a message or a pending call belongs to
its thread's principal (layout 2 had one thread per id)."""


def rekey_threads(db: sqlite3.Connection) -> None:
    """Rebuild the tables keyed by thread with the principal in their keys (SQLite cannot
    change a table's primary key in place)."""
    for table in REKEYED:
        db.execute(f'ALTER TABLE "{table}" RENAME TO "{table}_v2"')
    _run_script(db, TABLES)
    for table in REKEYED:
        db.execute(_COPY[table])
    for table in REKEYED:
        db.execute(f'DROP TABLE "{table}_v2"')
    db.execute("DROP INDEX IF EXISTS runs_by_thread")


def _keyed_by_principal(db: sqlite3.Connection) -> bool:
    """Whether ``threads`` is keyed by principal and id (layout 3)."""
    return any(
        row[1] == "principal" and row[5] > 0 for row in db.execute("PRAGMA table_info(threads)")
    )


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Statement by statement: ``executescript`` would commit the open transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _current(db: sqlite3.Connection) -> bool:
    """Whether a file of this layout has what was added to it since (see the docstring)."""
    index = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'segments_running'"
    ).fetchone()
    return (
        index is not None
        and "taken_by" in _columns(db, "owners")
        and "remember" in _columns(db, "pending")
        and "packed" in _columns(db, "events")
        and "settings" in _columns(db, "runs")
        and "spec" in _columns(db, "segments")
        and "handle" in _columns(db, "operations")
    )


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}


def _add_columns(db: sqlite3.Connection) -> None:
    for table, column in ADDED_COLUMNS:
        if _has_table(db, table) and column.split()[0] not in _columns(db, table):
            db.execute(f'ALTER TABLE "{table}" ADD COLUMN {column}')


def _migrate_segments_and_events(db: sqlite3.Connection) -> None:
    """Segments get ids and their thread; the event log is keyed by segment id."""
    db.execute("ALTER TABLE segments RENAME TO segments_v1")
    db.execute("ALTER TABLE events RENAME TO events_v1")
    _run_script(db, V2_TABLES)
    db.execute(
        "INSERT OR IGNORE INTO segments (run_id, seq, request_id, thread_id, principal, "
        "dedup_key, status, created_at, closed_at) "
        "SELECT s.run_id, s.seq, s.request_id, r.thread_id, r.principal, s.dedup_key, "
        "s.status, s.created_at, CASE WHEN s.status = 'running' THEN NULL ELSE r.updated_at END "
        "FROM segments_v1 s JOIN runs r ON r.id = s.run_id ORDER BY s.created_at"
    )
    db.execute(
        'INSERT OR IGNORE INTO events (segment, "first", "last", offsets, lengths, frames) '
        'SELECT s.id, e."offset", e."offset", '
        'CAST(e."offset" AS TEXT), CAST(LENGTH(e.frame) AS TEXT), e.frame '
        "FROM events_v1 e JOIN segments s ON s.request_id = e.run_id WHERE LENGTH(e.frame) > 0"
    )
    db.execute("DROP TABLE segments_v1")
    db.execute("DROP TABLE events_v1")
