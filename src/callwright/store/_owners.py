"""Which process owns a running segment, and whether that process is still there.

An owner is one journal opened for serving in one process: an ``owners`` row with
its host, process id and a lease that its heartbeat renews. An owner is gone when
its row is missing, its lease has expired, or it ran on this host and its process
no longer exists (a killed server is noticed at once, not after the lease). A
reused process id would look alive only until the lease runs out.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ._sql import Db

log = logging.getLogger("callwright.store")
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


def lapse(db: Db, owner_id: str, now: float) -> str | None:
    """Why this process's own lease is no longer its (None: it is held). Read under the
    row's lock, so that no other process takes it between this check and the renewal."""
    row = db.execute(
        "SELECT host, pid, expires_at, taken_by FROM owners WHERE id = ?" + db.for_update,
        (owner_id,),
    ).fetchone()
    if row is None:
        return "its row was gone"
    host, pid, expires_at, taken_by = row
    if taken_by is not None:
        return f"it was taken over by {taken_by}"
    if expires_at < now:
        return f"it expired {now - expires_at:.1f} s ago"
    if host != HOST or pid != os.getpid():
        return "another process registered under its id"
    return None


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
    """Forget owners that are gone and own nothing that still runs. In id order, so two
    processes sweeping at once lock the rows they delete in the same order (no deadlock)."""
    for (owner_id,) in db.execute("SELECT id FROM owners ORDER BY id").fetchall():
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


RETRY_SECONDS = 0.1
"""The first retry after a failed beat; each next one waits twice as long, up to
``RETRY_MAX_SECONDS``."""
RETRY_MAX_SECONDS = 0.5
"""The longest wait between beats while they fail: a beat on a database that refuses
connections costs next to nothing, and the beat after an outage also settles the runs
it stopped (their clients' replays end then), so it comes within this of the database
answering, not within a heartbeat interval."""


class Heartbeat:
    """A thread that has the journal's writer run ``tick`` every ``interval`` seconds.

    One beat at a time: the next is queued only once the last one is over, whether it
    succeeded or failed (a slow writer is not buried; a batch that failed at ``BEGIN``
    before the beat ran does not stop the beats). A failed beat (the database away, its
    write lock held elsewhere) is tried again sooner, backing off from
    ``RETRY_SECONDS`` to ``RETRY_MAX_SECONDS``: the lease is renewed as soon as the
    database answers again. An outage is logged once when it starts and once when it is over.
    """

    def __init__(
        self,
        interval: float,
        call: Callable[[Callable[[], None]], concurrent.futures.Future[None]],
        tick: Callable[[], None],
    ) -> None:
        self.interval = interval
        self._call = call
        self._tick = tick
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="callwright-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)

    def soon(self) -> None:
        """Beat within ``RETRY_SECONDS`` rather than at the interval's end: a write just
        failed (the database away), and the beat that succeeds settles what it stopped,
        so beats go at the retry pace until one does."""
        self._wake.set()

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``, or ``RETRY_SECONDS`` once ``soon`` is called; True when
        stopped."""
        if self._wake.wait(seconds) and not self._stop.is_set():
            self._wake.clear()
            return self._stop.wait(RETRY_SECONDS)
        return self._stop.is_set()

    def _beat(self) -> None:
        delay = self.interval
        failing_since: float | None = None
        while not self._pause(delay):
            error = self._once()
            if error is None:
                if failing_since is not None:
                    log.warning(
                        "journal heartbeat renewed the lease again after %.1f s of failures",
                        time.monotonic() - failing_since,
                    )
                failing_since, delay = None, self.interval
                continue
            if failing_since is None:
                log.warning("journal heartbeat failed (%s); trying again until it succeeds", error)
                failing_since, delay = time.monotonic(), RETRY_SECONDS
            else:
                delay = min(delay * 2, RETRY_MAX_SECONDS, self.interval)

    def _once(self) -> BaseException | None:
        """One beat on the writer: its error, or None (also when stopped meanwhile)."""
        future = self._call(self._tick)
        while not self._stop.is_set():
            try:
                return future.exception(timeout=1.0)
            except concurrent.futures.TimeoutError:
                continue
        return None
