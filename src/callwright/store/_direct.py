"""A connection of its own to a journal's database, for a side table kept next to the
journal's (artifacts, cancel requests): the journal's connections are busy with runs.

Autocommit, ``?`` placeholders on either database; a Postgres connection lost to a
restart is opened again once. Its methods block: callers run them in worker threads,
under a lock of their own.
"""

from __future__ import annotations

import sqlite3
from typing import Any


class DirectConnection:
    """One connection in autocommit mode: ``sqlite3`` or psycopg, ``?`` placeholders."""

    def __init__(self, target: str, busy_seconds: float) -> None:
        self.target = target
        self.busy_seconds = busy_seconds
        self.postgres = target.startswith(("postgresql://", "postgres://"))
        self._raw: Any = self._open()

    def _open(self) -> Any:
        if self.postgres:
            import psycopg

            timeout = max(int(self.busy_seconds), 1)
            return psycopg.connect(self.target, autocommit=True, connect_timeout=timeout)
        raw = sqlite3.connect(self.target, check_same_thread=False, isolation_level=None)
        raw.execute(f"PRAGMA busy_timeout={int(self.busy_seconds * 1000)}")
        return raw

    def ddl(self, script: str) -> str:
        if not self.postgres:
            return script
        for sqlite_type, pg_type in (("BLOB", "BYTEA"), ("REAL", "DOUBLE PRECISION")):
            script = script.replace(sqlite_type, pg_type)
        return script.replace("INTEGER", "BIGINT")

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        if not self.postgres:
            return self._raw.execute(sql, args)
        import psycopg

        sql = sql.replace("?", "%s")
        if self._raw.closed:
            self._raw = self._open()
        try:
            return self._raw.execute(sql, args)
        except psycopg.OperationalError:
            if not self._raw.closed:
                raise
        # the connection was lost (a database restart): once more on a new one; in
        # autocommit, the failed statement did nothing
        self._raw = self._open()
        return self._raw.execute(sql, args)

    def close(self) -> None:
        self._raw.close()
