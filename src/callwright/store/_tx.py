"""The write connection's transactions: one of its own, or a part of a batch.

``batch`` is the writer thread's group commit: one ``BEGIN IMMEDIATE`` for every call
queued together. A call that checks a request and may refuse it (``begin``, a
takeover: ``tx()``) is a savepoint in it, so that its refusal rolls back that call
only. A call that only writes (``tx(writes_only=True)``: a run's recorded steps) has
neither a savepoint nor, on Postgres, a round trip of its own: its writes are held
and sent with the next statement that is read (``Db.deferred``). Should one of them
fail (a bug's constraint violation, a failing disk), the batch rolls back whole and
raises ``RolledBack``: the writer runs its calls again without the one that failed,
or each alone when a held write's error cannot be told whose it was (a savepoint's
last writes are held as well: its refusals come from its reads). Calls run again
must find this process's memory as it was, so a call changes it through ``changed``,
which undoes the change when its transaction (or savepoint) rolls back.

When the database rolls the whole transaction back itself (a full disk, an I/O error,
a lost connection to Postgres), the rest of the batch fails with the same error
instead of running outside any transaction. A lost connection is opened again
(``reconnect``) when the next transaction starts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from ._sql import Db
from ._writer import RolledBack


class Transactions:
    """The write connection's transactions (see the module docstring)."""

    def __init__(self, db: Db, reconnect: Callable[[], Db] | None = None) -> None:
        self.db = db
        self._reconnect = reconnect
        self.lock = threading.RLock()
        """Held by whoever uses the connection (the writer thread, or a synchronous call)."""
        self._in_batch = False
        self._lost: BaseException | None = None
        """The error the database rolled the batch back with (the rest of it fails so)."""
        self._doomed: BaseException | None = None
        """A writes-only call's failure: the batch rolls back and its calls run again."""
        self._culprit: BaseException | None = None
        """That failure when it is surely the failing call's own (not a held write of an
        earlier call surfacing in it)."""
        self._unsynced = False
        """Earlier calls' writes may be held (Postgres), their outcome not known yet: an
        error a call meets may be theirs."""
        self._undo: list[Callable[[], None]] | None = None
        self._depth = 0

    def changed(self, undo: Callable[[], None]) -> None:
        """Register how to take back a change to memory made in the current transaction,
        should it (or the call's savepoint) roll back; outside a transaction, nothing."""
        if self._undo is not None:
            self._undo.append(undo)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for the calls made inside (see the module docstring)."""
        with self.lock:
            db = self._begin()
            self._in_batch, self._lost, self._doomed, self._culprit = True, None, None, None
            self._unsynced, self._undo = False, []
            try:
                try:
                    with db.deferred():  # a failed batch's held writes are not sent
                        yield
                        if self._lost is not None:
                            raise self._lost
                        if self._doomed is not None:
                            raise RolledBack(self._doomed, self._culprit)
                        db.execute("COMMIT")  # with the held writes: one round trip
                finally:
                    self._in_batch = False
            except RolledBack:
                self._abort(db)
                raise
            except BaseException as exc:
                statement_error = db.in_transaction and isinstance(exc, db.errors)
                self._abort(db)
                if statement_error:  # a held write's, surfacing at the end
                    raise RolledBack(exc, None) from exc
                raise
            self._undo = None

    @contextlib.contextmanager
    def tx(self, *, writes_only: bool = False) -> Iterator[Db]:
        """A transaction of its own, or a part of a ``batch`` (a savepoint, unless
        ``writes_only``); inside another ``tx`` (a group of calls), part of that one."""
        with self.lock:
            if self._depth:
                yield self.db
                return
            self._depth += 1
            try:
                if self._in_batch:
                    db = self.db
                    part = self._unguarded(db) if writes_only else self._savepoint(db)
                    with part:
                        yield db
                else:
                    db = self._begin()
                    self._undo = []
                    try:
                        yield db
                    except BaseException:
                        self._abort(db)
                        raise
                    self._commit(db)
            finally:
                self._depth -= 1

    def _begin(self) -> Db:
        """Start a transaction, on a connection opened again if it was lost (Postgres
        restarted: the first statement after it is what finds out)."""
        for attempt in (1, 2):
            if self.db.broken and self._reconnect is not None:
                self.db.close()
                self.db = self._reconnect()
            db = self.db
            try:
                db.execute(db.begin_sql)
            except db.errors:
                if attempt == 2 or not db.broken or self._reconnect is None:
                    raise
                continue
            return db
        raise AssertionError("unreachable")

    def _refuse_doomed(self) -> None:
        """A batch that will roll back runs no more calls (they run again after it)."""
        if self._lost is not None:
            raise self._lost
        if self._doomed is not None:
            raise self._doomed

    @contextlib.contextmanager
    def _unguarded(self, db: Db) -> Iterator[None]:
        self._refuse_doomed()
        unsynced = self._unsynced
        try:
            yield
        except BaseException as exc:
            if not db.in_transaction:
                self._lost = exc
            else:
                self._doomed = exc
                if not unsynced or not isinstance(exc, db.errors):
                    self._culprit = exc
            raise
        self._unsynced = self._unsynced or db.defers_errors

    @contextlib.contextmanager
    def _savepoint(self, db: Db) -> Iterator[None]:
        self._refuse_doomed()
        assert self._undo is not None
        mark = len(self._undo)
        db.write("SAVEPOINT call")
        try:
            yield
        except BaseException as exc:
            self._undo_to(mark)
            if not db.in_transaction:  # the database rolled the whole transaction back
                self._lost = exc
                raise
            try:
                with contextlib.suppress(*db.errors):
                    db.sync()  # writes it made before it raised
                db.execute("ROLLBACK TO call")  # no savepoint: the error was an earlier call's
                db.write("RELEASE call")
            except db.errors:
                if not db.in_transaction:
                    self._lost = exc
                else:
                    self._doomed = exc
            raise
        db.write("RELEASE call")
        self._unsynced = db.defers_errors  # its last writes may be held, as the release

    def _undo_to(self, mark: int) -> None:
        undo = self._undo
        if undo is None:
            return
        while len(undo) > mark:
            undo.pop()()

    def _abort(self, db: Db) -> None:
        """Roll back (if the database has not) and undo what the transaction changed."""
        try:
            if db.in_transaction:
                db.execute("ROLLBACK")
        finally:
            self._undo_to(0)
            self._undo = None

    def _commit(self, db: Db) -> None:
        try:
            db.execute("COMMIT")
        except BaseException:
            self._abort(db)
            raise
        self._undo = None
