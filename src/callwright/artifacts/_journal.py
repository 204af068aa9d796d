"""Artifacts in the journal's database (SQLite or Postgres), so that they last as long
as the runs that refer to them and every replica sees them.

The table is the artifacts' own (``artifacts``), made with ``CREATE TABLE IF NOT
EXISTS`` on a connection of this store, outside the journal's layout and its version:
the journal's migrations never touch it, and a journal file without it is the same
journal. The store keeps its own connection (the journal's are busy with runs) and a
lock around it; its methods block and are called from worker threads.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ..store._direct import DirectConnection
from ._store import ArtifactInfo, is_artifact_id

if TYPE_CHECKING:
    from ..store.base import Journal

TABLE = """
CREATE TABLE IF NOT EXISTS artifacts (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, thread_id TEXT NOT NULL, run_id TEXT NOT NULL,
    call_id TEXT NOT NULL, tool_name TEXT NOT NULL, size INTEGER NOT NULL,
    lines INTEGER NOT NULL, media_type TEXT NOT NULL, created_at REAL NOT NULL,
    expires_at REAL NOT NULL, data BLOB NOT NULL)
"""
INDEX = "CREATE INDEX IF NOT EXISTS artifacts_by_expiry ON artifacts (expires_at)"
_COLUMNS = (
    "id, owner, thread_id, run_id, call_id, tool_name, size, lines, media_type, "
    "created_at, expires_at"
)


class JournalArtifactStore:
    """An ``ArtifactStore`` in the database of ``journal`` (a ``SQLiteJournal`` or a
    ``PostgresJournal``), or of a journal ``target`` (a file path or a
    ``postgresql://`` URL)."""

    def __init__(self, journal: Journal | str, *, busy_seconds: float = 10.0) -> None:
        target = journal if isinstance(journal, str) else getattr(journal, "target", None)
        if not isinstance(target, str):
            raise ValueError("JournalArtifactStore needs a SQLite or Postgres journal")
        self.target = target
        self._db = DirectConnection(target, busy_seconds)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute(self._db.ddl(TABLE))
            self._db.execute(INDEX)

    def put(self, info: ArtifactInfo, data: bytes) -> None:
        row = (
            info.id,
            info.owner,
            info.thread_id,
            info.run_id,
            info.call_id,
            info.tool_name,
            info.size,
            info.lines,
            info.media_type,
            info.created_at,
            info.expires_at,
            data,
        )
        with self._lock:
            self._db.execute(
                f"INSERT INTO artifacts ({_COLUMNS}, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

    def get(self, artifact_id: str, now: float | None = None) -> ArtifactInfo | None:
        if not is_artifact_id(artifact_id):
            return None
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM artifacts WHERE id = ? AND expires_at > ?",
                (artifact_id, time.time() if now is None else now),
            ).fetchone()
        return None if row is None else _info(row)

    def read(self, artifact_id: str, start: int = 0, end: int | None = None) -> bytes:
        if not is_artifact_id(artifact_id):
            return b""
        first = max(start, 0) + 1  # SQL counts from 1
        with self._lock:
            if end is None:
                row = self._db.execute(
                    "SELECT SUBSTR(data, ?) FROM artifacts WHERE id = ?", (first, artifact_id)
                ).fetchone()
            else:
                count = max(end - max(start, 0), 0)
                row = self._db.execute(
                    "SELECT SUBSTR(data, ?, ?) FROM artifacts WHERE id = ?",
                    (first, count, artifact_id),
                ).fetchone()
        return b"" if row is None or row[0] is None else bytes(row[0])

    def delete(self, artifact_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM artifacts WHERE id = ?", (artifact_id,))

    def expire(self, now: float | None = None) -> int:
        moment = time.time() if now is None else now
        with self._lock:
            rows = self._db.execute(
                "DELETE FROM artifacts WHERE expires_at <= ? RETURNING id", (moment,)
            ).fetchall()
        return len(rows)

    def close(self) -> None:
        """Close the store's connection."""
        with self._lock:
            self._db.close()


def _info(row: Any) -> ArtifactInfo:
    return ArtifactInfo(
        id=row[0],
        owner=row[1],
        thread_id=row[2],
        run_id=row[3],
        call_id=row[4],
        tool_name=row[5],
        size=int(row[6]),
        lines=int(row[7]),
        media_type=row[8],
        created_at=float(row[9]),
        expires_at=float(row[10]),
    )
