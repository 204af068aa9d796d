"""Which process owns a running segment, and whether that process is still there.

An owner is one journal opened for serving in one process: an ``owners`` row with
its host, process id and a lease that its heartbeat renews. An owner is gone when
its row is missing, its lease has expired, or it ran on this host and its process
no longer exists (a killed server is noticed at once, not after the lease). A
reused process id would look alive only until the lease runs out.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._sql import Db

HOST = socket.gethostname()

LIVE_HERE: set[str] = set()
"""The owners this process holds (journals not yet closed): any other owner with this
process's id is a closed or abandoned journal of ours, hence gone."""


@dataclass(frozen=True, slots=True)
class Owner:
    id: str
    host: str
    pid: int
    expires_at: float


def new_owner_id() -> str:
    return f"{HOST}:{os.getpid()}:{secrets.token_hex(6)}"


def register(db: Db, owner_id: str, now: float, lease: float) -> None:
    """Write the owner's row (a process reusing an owner id takes it back: no longer
    taken over)."""
    db.execute(
        "INSERT INTO owners (id, host, pid, started_at, expires_at, taken_by) "
        "VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (id) DO UPDATE SET host = excluded.host, "
        "pid = excluded.pid, started_at = excluded.started_at, "
        "expires_at = excluded.expires_at, taken_by = NULL",
        (owner_id, HOST, os.getpid(), now, now + lease),
    )


def renew(db: Db, owner_id: str, now: float, lease: float) -> None:
    """Extend the lease (and write the row again if another process dropped it)."""
    db.execute(
        "INSERT INTO owners (id, host, pid, started_at, expires_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at",
        (owner_id, HOST, os.getpid(), now, now + lease),
    )


def alive(db: Db, owner_id: str | None, now: float) -> bool:
    """Whether the owner of a segment may still be running it."""
    if owner_id is None:
        return False  # written outside a serving process (the synchronous library API)
    row = db.execute(
        "SELECT host, pid, expires_at FROM owners WHERE id = ?", (owner_id,)
    ).fetchone()
    if row is None:
        return False
    host, pid, expires_at = row
    if expires_at < now:
        return False
    if host != HOST:
        return True
    if pid == os.getpid():
        return owner_id in LIVE_HERE
    return process_exists(pid)


def drop_gone(db: Db, now: float) -> None:
    """Forget owners that are gone and own nothing that still runs."""
    for (owner_id,) in db.execute("SELECT id FROM owners").fetchall():
        if alive(db, owner_id, now):
            continue
        running = db.execute(
            "SELECT 1 FROM segments WHERE owner = ? AND status = 'running' LIMIT 1", (owner_id,)
        ).fetchone()
        if running is None:
            db.execute("DELETE FROM owners WHERE id = ?", (owner_id,))


def process_exists(pid: int) -> bool:
    """A process with this id exists here and is not a zombie (killed, not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True  # no /proc (macOS): the signal check is all there is
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


class Heartbeat:
    """A thread that posts ``tick`` to the journal's writer every ``interval`` seconds
    (never a second one while the first is still queued: a slow writer is not buried)."""

    def __init__(
        self, interval: float, post: Callable[[Callable[[], None]], None], tick: Callable[[], None]
    ) -> None:
        self.interval = interval
        self._post = post
        self._tick = tick
        self._stop = threading.Event()
        self._queued = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="callwright-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            if not self._queued.is_set():
                self._queued.set()
                self._post(self.heartbeat)

    def heartbeat(self) -> None:
        """One beat, on the writer (named so: the writer logs a failed call by its name)."""
        try:
            self._tick()
        finally:
            self._queued.clear()
