"""The run journal on a SQL database: SQLite (``SQLiteJournal``) or Postgres (``PostgresJournal``).

One code path for both: the statements are written in the SQL both accept, and
``_sql.Db`` carries what differs (see ``_sql`` and ``_pg``). Writes run on the
journal's writer thread (``submit``), several to a transaction; reads use a
connection of their own, so a replay never waits behind the writer. See ``base``
for the threading, ownership and process model.

**Several processes.** On SQLite, every transaction holds the one write lock. On
Postgres, several processes write at once: a request on a thread takes the thread's
lock first (another process starting one on the same thread at that moment is told
``thread_busy``), recovery settles a run only under its thread's lock and after
reading it again, and taking over a gone owner (``claim``) or its segment
(``reopen``) locks the row it changes. Leases are measured by the database's clock
on Postgres (processes on several machines), this machine's on SQLite.

**Continuing a gone owner's runs elsewhere.** With ``settle_gone=False`` the journal
never settles a segment whose owner is gone (a durable-execution layer continues it):
a request on its thread is refused as busy until then. ``gone_owners`` lists the
owners to take over, ``claim`` takes one (exactly one process wins), and ``reopen``
hands a segment of it over to this journal's owner with its history rebuilt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..messages import Message
from ..models._settings import ModelSettings
from . import _owners
from ._input import split_request
from ._lease import LEASE_LAPSED, LeaseHolder
from ._owners import Heartbeat
from ._reads import JournalReads
from ._recovery import INTERRUPTED, Unwritten, settle_run
from ._rows import (
    append_events,
    append_missing,
    close,
    complete,
    fence,
    kept_handles,
    load_history,
    loads,
    open_pending,
    operation_row,
    purge,
    resumed,
    save_handle,
    take_answers,
    thread_approvals,
    upsert_thread_and_run,
    write_messages,
)
from ._run_settings import keep_settings, settings_json
from ._segments import first_segment, insert_segment, inserted
from ._sql import Db, thread_key
from ._takeover import TakeOver
from ._tx import Transactions
from ._verify import PENDING_UPSERT, open_approval_ids, pending_row, verify_answers
from ._writer import JournalWriter
from .base import (
    Answer,
    EditValidator,
    JournalLimits,
    PendingRecord,
    Rejected,
    Segment,
    Started,
    canonical_json,
)

T = TypeVar("T")
log = logging.getLogger("callwright.store")
DAY = 86_400.0
STORED_ONCE_BYTES = 16 * 1024
JOURNAL_FAILED = "the run journal could not be written during the run"


class SQLJournal(JournalReads, LeaseHolder, TakeOver):
    """A ``Journal`` on one SQL database (see ``SQLiteJournal`` and ``PostgresJournal``
    for the parameters).

    ``owner_id``: the id this journal owns segments under once it serves (default:
    host, process id and a random part); a durable-execution layer passes its
    executor id, so that an owner gone is an executor dead. ``settle_gone``: False
    leaves gone owners' running segments to be continued (``reopen``) instead of
    settled as interrupted.
    """

    def __init__(
        self,
        target: str,
        connect: Callable[[], Db],
        prepare: Callable[[Db], None],
        *,
        limits: JournalLimits | None,
        lease_seconds: float,
        heartbeat_seconds: float | None,
        retention_days: float | None,
        owner_id: str | None,
        settle_gone: bool,
    ) -> None:
        self.target = target
        """Where the journal is (a file path or a database URL): another journal opened
        on it (``open_journal``) shares its runs."""
        self.limits = limits or JournalLimits()
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = heartbeat_seconds or min(lease_seconds / 3, 5.0)
        self.retention_days = retention_days
        self.settle_gone = settle_gone
        db = connect()
        try:
            prepare(db)
            JournalReads.__init__(self, connect)
        except BaseException:
            db.close()
            raise
        self._txs = Transactions(db, connect)
        self._tx = self._txs.tx
        self._lock = self._txs.lock
        self._errors = db.errors
        self._writer = JournalWriter(self.batch)
        self._owner_id = owner_id
        self._owner: str | None = None
        self._live: set[int] = set()
        self._lost: dict[int, str] = {}
        """Segments of ours that another process settled or took over while our lease
        had lapsed (and what happened to them): their runs stop at their next write."""
        self._orphans: dict[int, Unwritten] = {}
        """Segments of ours whose writes failed: the outcomes and frames to keep when
        they are settled."""
        self._planned: set[int] = set()
        self._renewed = 0.0
        self._idempotent: set[str] = set()
        self._heartbeat = Heartbeat(self.heartbeat_seconds, self._writer.call, self._tick)
        self._closed = False

    @property
    def _db(self) -> Db:
        """The write connection (hold ``_lock`` to use it)."""
        return self._txs.db

    @property
    def owner(self) -> str | None:
        """This process's owner id once it serves (``submit`` was called), else None."""
        return self._owner

    # --- transactions and the writer --------------------------------------------------

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """One transaction for the calls made inside; each call is a savepoint in it."""
        return self._txs.batch()

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """The journal calls made inside succeed or fail together. In a batch, the group
        has no savepoint of its own: it holds a run's recorded writes, which only fail
        for a database error or a settled segment (see ``_tx``)."""
        with self._txs.tx(writes_only=True):
            yield

    def _add(self, items: set[int], item: int) -> None:
        """``items.add(item)``, taken back if the transaction rolls back."""
        if item not in items:
            items.add(item)
            self._txs.changed(lambda: items.discard(item))

    def _discard(self, items: set[int], item: int) -> None:
        """``items.discard(item)``, taken back if the transaction rolls back."""
        if item in items:
            items.discard(item)
            self._txs.changed(lambda: items.add(item))

    def submit(self, fn: Callable[..., T], /, *args: Any) -> asyncio.Future[T] | None:
        """Run ``fn(*args)`` on the writer thread (see ``Journal.submit``); the first call
        makes this journal an owner (a lease row and its heartbeat)."""
        if self._owner is None and not self._closed:
            self._become_owner()
        return self._writer.submit(fn, *args)

    def _become_owner(self) -> str:
        with self._lock:
            if self._owner is not None:
                return self._owner
            owner = self._owner_id or _owners.new_owner_id()
            _owners.LIVE_HERE.add(owner)
            self._owner = owner
        self._writer.post(self._register)
        self._heartbeat.start()
        return owner

    def _register(self) -> None:
        assert self._owner is not None
        with self._tx() as db:
            _owners.register(db, self._owner, db.now(), self.lease_seconds)
            self._mark_renewed()

    def _tick(self) -> None:
        """On the writer thread, each heartbeat: hold the lease, settle what is due. A
        failure (the database away, a full disk) is the heartbeat's to log and retry."""
        with self._tx() as db:
            if self._owner is not None:
                self._hold_lease(db)
        self.sweep()

    def ping(self) -> None:
        """One read of a journal table; a closed journal fails (its reads would open a new
        connection to a Postgres database, and a closed journal is not one to serve)."""
        if self._closed:
            raise RuntimeError("the journal is closed")
        super().ping()

    def close(self) -> None:
        """Finish queued writes, give up this process's lease, close the connections."""
        if self._closed:
            return
        self._closed = True
        self._heartbeat.stop()
        self._writer.close()
        if self._owner is not None:
            with contextlib.suppress(*self._errors), self._tx() as db:
                db.execute("DELETE FROM owners WHERE id = ?", (self._owner,))
            _owners.LIVE_HERE.discard(self._owner)
        with self._lock:
            self._txs.db.close()
        self._close_reader()

    # --- starting a segment ----------------------------------------------------------

    def begin(
        self,
        thread_id: str,
        request_id: str,
        messages: list[Message],
        answers: list[Answer],
        edits: dict[str, EditValidator | None],
        state: dict[str, Any] | None = None,
        *,
        principal: str = "",
        closing: bytes = b"",
        settings: ModelSettings | None = None,
        spec: str = "",
    ) -> Started:
        """Check the request against the thread and start a segment, atomically (see
        ``Journal.begin``)."""
        if self._lease_lapsed():
            raise Rejected(LEASE_LAPSED, "journal_unavailable", 503)
        if settings is not None:
            settings_json(settings)  # settings it cannot keep: refused before any write
        with self._tx() as db:
            read = (
                "SELECT state FROM threads WHERE principal = ? AND id = ?",
                (principal, thread_id),
            )
            first = None
            if not answers:
                first = first_segment(
                    db, thread_id, request_id, principal, self._owner, closing, spec
                )
            reads = [read] if first is None else [read, (first.sql, first.args)]
            key = thread_key(principal, thread_id)
            locked, now, found = db.lock_thread_and_read(key, reads)
            if not locked:
                raise _busy(thread_id)
            rows = found[0]
            thread = rows[0] if rows else None
            resumable, history, open_rows = None, [], []
            if thread is not None:
                resumable = self._settle_or_refuse(db, thread_id, principal, now)
                history = load_history(db, thread_id, principal)
                open_rows = open_pending(db, thread_id, principal)
            new, answers, cut = split_request(history, bool(open_rows), messages, answers)
            decisions, results, call_ids = verify_answers(
                db, thread_id, principal, history, answers, edits
            )
            run_id = open_rows[0].run_id if open_rows else resumable
            if first is not None and thread is None:
                fresh = Segment(thread_id, first.run_id, 0, request_id, 0, principal)
                segment = inserted(db, found[1], fresh)
            else:
                segment = insert_segment(
                    db, thread_id, run_id, request_id, principal, answers, self._owner, now,
                    closing, spec,
                )  # fmt: skip
            still_open = open_rows
            if answers:
                take_answers(db, segment, answers, call_ids, decisions, now)
            elif (new or cut is not None) and open_rows:  # the user moved on: calls skipped
                db.write(
                    "UPDATE pending SET resolved_at = ? "
                    "WHERE principal = ? AND thread_id = ? AND resolved_at IS NULL",
                    (now, principal, thread_id),
                )
                still_open = []
            saved_state = state if thread is None else loads(thread[0])
            upsert_thread_and_run(db, segment, saved_state, thread is None, now)
            run_settings = keep_settings(db, segment.run_id, settings, new_run=segment.seq == 0)
            appended = [*results.values(), *new]
            if cut is not None:  # a re-sent message: what the client discarded goes
                del history[cut:]
            if appended or cut is not None:
                write_messages(
                    db, thread_id, principal, segment.run_id, len(history), appended,
                    self.limits, replace=cut is not None,
                )  # fmt: skip
                history += appended
            next_op, decisions = resumed(db, run_id, thread_id, principal, history, decisions)
            remembered = [] if thread is None else thread_approvals(db, thread_id, principal)
            if self._owner is not None:
                self._add(self._live, segment.id)
            handles = kept_handles(db, run_id, history)
        return Started(
            segment, history, decisions, saved_state, next_op, 0, remembered, run_settings,
            open_approvals=open_approval_ids(still_open, call_ids),
            handles=handles,
        )  # fmt: skip

    # --- one thread, one run ------------------------------------------------------

    def _settle_or_refuse(self, db: Db, thread_id: str, principal: str, now: float) -> str | None:
        """Refuse while the thread's run is live somewhere; settle it if its owner is gone.
        Returns the run a new request resumes (the latest interrupted one), if any."""
        rows = db.execute(
            "SELECT r.id, r.status, s.id, s.owner FROM runs r LEFT JOIN segments s "
            "ON s.run_id = r.id AND s.status = 'running' "
            "WHERE r.principal = ? AND r.thread_id = ? "
            "AND r.status IN ('running', 'interrupted') ORDER BY r.created_at DESC",
            (principal, thread_id),
        ).fetchall()
        resumable = None
        for run_id, status, segment, owner in rows:
            if status == "running":
                if self._running(db, segment, owner, now):
                    raise _busy(thread_id)
                self._settle(db, run_id, thread_id, principal, segment, now)
            resumable = resumable or run_id
        return resumable

    def _running(
        self,
        db: Db,
        segment: int | None,
        owner: str | None,
        now: float,
        seen: dict[str | None, bool] | None = None,
    ) -> bool:
        """Whether a running segment is to be left alone: its owner is live, or it is
        gone and ``settle_gone`` is off (a segment written outside a serving process,
        with no owner, is settled all the same: nobody could continue it). ``seen``
        keeps owners already looked up (a sweep: one query per owner, not per run)."""
        if segment is None:
            return False
        if owner is not None and owner == self._owner:
            if segment in self._orphans:
                return False
            return segment in self._live or not self.settle_gone
        live = None if seen is None else seen.get(owner)
        if live is None:
            live = _owners.alive(db, owner, now)
            if seen is not None:
                seen[owner] = live
        if live:
            return True
        return owner is not None and not self.settle_gone

    def _settle(
        self,
        db: Db,
        run_id: str,
        thread_id: str,
        principal: str,
        segment: int | None,
        now: float,
    ) -> None:
        orphan = self._orphans.get(segment) if segment is not None else None
        if orphan is not None and segment is not None:
            for call_id, output in orphan.outcomes:
                complete(db, run_id, call_id, output, self.limits, now)
            append_missing(db, segment, orphan.frames)
        reason = JOURNAL_FAILED if segment in self._orphans else INTERRUPTED
        settle_run(db, run_id, thread_id, principal, self._idempotent, self.limits, now, reason)
        if segment is not None:
            self._discard(self._live, segment)
            if segment in self._orphans:
                kept = self._orphans.pop(segment)

                def restore() -> None:
                    self._orphans.setdefault(segment, kept)

                self._txs.changed(restore)

    def recover(self, idempotent: set[str]) -> list[str]:
        """Settle the runs whose owner is gone (a previous process, a killed sibling);
        tools named in ``idempotent`` (or planned as such) run again on resume."""
        self._idempotent |= idempotent
        return self.sweep(retention=False)

    def sweep(self, *, retention: bool = True) -> list[str]:
        """Settle runs whose owner is gone and runs of ours whose writes failed; delete
        event logs past ``retention_days``. The heartbeat calls it."""
        with self._tx() as db:
            now = db.now()
            rows = db.execute(RUNNING + "ORDER BY r.created_at").fetchall()
            settled: list[str] = []
            seen: dict[str | None, bool] = {}
            for run_id, thread_id, principal, segment, owner in rows:
                if self._running(db, segment, owner, now, seen):
                    continue
                if not db.lock_thread(thread_key(principal, thread_id)):
                    continue
                again = db.execute(RUNNING + "AND r.id = ?", (run_id,)).fetchone()
                if again is None or self._running(db, again[3], again[4], now):
                    continue  # another process settled or continued it meanwhile
                self._settle(db, run_id, thread_id, principal, again[3], now)
                settled.append(run_id)
            for segment in set(self._orphans) - {row[3] for row in rows}:
                del self._orphans[segment]  # settled or continued elsewhere meanwhile
            _owners.drop_gone(db, now)
            if retention and self.retention_days is not None:
                purge(db, now - self.retention_days * DAY)
        return settled

    # --- recording a segment ---------------------------------------------------------

    def _fence(self, db: Db, segment: Segment) -> None:
        """Check that the segment still runs here unless this process's lease is surely
        held (renewed within half its length: no other process may have settled it or
        taken it over); one found taken after a lapse (``_lost``) never writes again."""
        self._refuse_lost(segment)
        held = time.monotonic() - self._renewed < self.lease_seconds / 2
        if self._owner is None or not held:
            fence(db, segment, self._owner)

    def next_operation(self, run_id: str) -> int:
        rows = self._read(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM operations WHERE run_id = ?", (run_id,)
        )
        return int(rows[0][0])

    def plan_operations(
        self, segment: Segment, rows: list[dict[str, Any]], events: Any = ()
    ) -> None:
        """Write operations in the model's order before any of them starts.

        A model operation keeps its reply until the step is committed; a large reply
        (over ``STORED_ONCE_BYTES``) is then dropped from it, so that it is stored
        once (a small one stays: the update would cost more than it saves)."""
        now = time.time()
        values = [operation_row(segment, row, self.limits, now) for row in rows]
        with self._txs.tx(writes_only=True) as db:
            self._fence(db, segment)
            db.executemany(
                "INSERT INTO operations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values
            )
            append_events(db, segment.id, events)
            if any(
                v[3] == "model" and v[8] is not None and len(v[8]) > STORED_ONCE_BYTES
                for v in values
            ):
                self._add(self._planned, segment.id)

    def mark_operation(
        self,
        segment: Segment,
        call_id: str,
        status: str,
        output: Any = None,
        events: Any = (),
    ) -> None:
        now = time.time()
        with self._txs.tx(writes_only=True) as db:
            self._fence(db, segment)
            if status == "started":
                # None, or the arguments an approver edited (``{"edited": ...}``)
                edited = None if output is None else canonical_json(output)
                db.write(
                    "UPDATE operations SET status = 'started', started_at = ?, output = ? "
                    "WHERE run_id = ? AND call_id = ? AND name != 'model'",
                    (now, edited, segment.run_id, call_id),
                )
            elif status == "handle":  # ToolContext.save_handle: the operation keeps it
                save_handle(db, segment.run_id, call_id, output)
            else:
                complete(db, segment.run_id, call_id, output, self.limits, now, status)
            append_events(db, segment.id, events)

    def append_events(self, segment: Segment, events: list[tuple[int, str, bytes]]) -> None:
        """Frames only: not fenced (a frame in a settled run's log harms nothing), but never
        in a run found taken over after a lapse (its log is the new owner's now)."""
        self._refuse_lost(segment)
        with self._txs.tx(writes_only=True) as db:
            append_events(db, segment.id, events)

    def commit(
        self,
        segment: Segment,
        start: int | None,
        messages: list[Message],
        state: dict[str, Any] | None,
        pending: list[PendingRecord],
        events: list[tuple[int, str, bytes]],
        status: str | None = None,
        reason: str | None = None,
    ) -> None:
        """One step's writes in one transaction: messages, state, pending calls, events, status.

        ``messages`` are the history from ``start`` on (None: unchanged); what the thread
        held from there is replaced, so a batch run again after a rollback writes the same
        rows. The model operations' copies of the replies are dropped once the replies are
        in the history: a reply is stored once.
        """
        now = time.time()
        with self._txs.tx(writes_only=True) as db:
            self._fence(db, segment)
            if start is not None:
                write_messages(
                    db, segment.thread_id, segment.principal, segment.run_id, start, messages,
                    self.limits, replace=True,
                )  # fmt: skip
            if segment.id in self._planned:
                db.write(
                    "UPDATE operations SET output = NULL WHERE run_id = ? AND name = 'model'",
                    (segment.run_id,),
                )
            if state is not None:
                db.write(
                    "UPDATE threads SET state = ?, updated_at = ? WHERE principal = ? AND id = ?",
                    (canonical_json(state), now, segment.principal, segment.thread_id),
                )
            if pending:
                db.executemany(
                    PENDING_UPSERT, [pending_row(p, segment.principal, now) for p in pending]
                )
            append_events(db, segment.id, events)
            if status is not None:
                close(db, segment, status, reason, now)
                self._discard(self._live, segment.id)
            self._discard(self._planned, segment.id)

    def release(
        self,
        segment: Segment,
        unwritten: list[tuple[str, Any]] | None = None,
        *,
        frames: Sequence[tuple[int, str, bytes]] = (),
    ) -> None:
        """See ``Journal.release``: a segment left running is settled now if the journal
        can be written, else on a later heartbeat (or when its thread is next used). Its
        unwritten outcomes and frames wait in memory until then (a segment found taken
        over keeps neither: its log is the new owner's)."""
        if unwritten is None or segment.id in self._lost:
            self._live.discard(segment.id)
            self._lost.pop(segment.id, None)
            return
        self._orphans[segment.id] = Unwritten(list(unwritten), list(frames))
        self._live.discard(segment.id)
        if not self._closed:
            self._writer.post(self._settle_orphans)
            self._heartbeat.soon()  # the beats settle it once the database answers

    def _settle_orphans(self) -> None:
        try:
            self.sweep(retention=False)
        except self._errors as exc:
            log.warning("could not settle a run whose journal writes failed: %s", exc)


RUNNING = (
    "SELECT r.id, r.thread_id, r.principal, s.id, s.owner FROM runs r LEFT JOIN segments s "
    "ON s.run_id = r.id AND s.status = 'running' WHERE r.status = 'running' "
)


def _busy(thread_id: str) -> Rejected:
    return Rejected(
        f"thread {thread_id!r} is running another request; send this one when it has finished",
        "thread_busy",
    )
