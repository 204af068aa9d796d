"""The write connection's transactions: one of its own, or a savepoint in a batch.

``batch`` is the writer thread's group commit: one ``BEGIN IMMEDIATE`` for every call
queued together, each call a savepoint, so that one call's failure (a refused request)
rolls back that call only. When SQLite rolls the whole transaction back itself (a full
disk, an I/O error, a lost connection to Postgres), the rest of the batch fails with
the same error instead of running outside any transaction. A lost connection is opened
again (``reconnect``) when the next transaction starts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from ._sql import Db


class Transactions:
    def __init__(self, db: Db, reconnect: Callable[[], Db] | None = None) -> None:
        self.db = db
        self._reconnect = reconnect
        self.lock = threading.RLock()
        """Held by whoever uses the connection (the writer thread, or a synchronous call)."""
        self._in_batch = False
        self._lost: BaseException | None = None
        self._depth = 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for the calls made inside; each call is a savepoint in it."""
        with self.lock:
            db = self._begin()
            self._in_batch, self._lost = True, None
            try:
                with db.pipelined():
                    yield
            except BaseException:
                self._in_batch = False
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            self._in_batch = False
            if self._lost is not None:
                raise self._lost
            commit(db)

    @contextlib.contextmanager
    def tx(self) -> Iterator[Db]:
        """A transaction of its own, or a savepoint inside a ``batch``; inside another
        ``tx`` (a group of calls), part of that one."""
        with self.lock:
            if self._depth:
                yield self.db
                return
            self._depth += 1
            try:
                if self._in_batch:
                    db = self.db
                    with self._savepoint(db):
                        yield db
                else:
                    db = self._begin()
                    try:
                        yield db
                    except BaseException:
                        if db.in_transaction:
                            db.execute("ROLLBACK")
                        raise
                    commit(db)
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

    @contextlib.contextmanager
    def _savepoint(self, db: Db) -> Iterator[None]:
        if self._lost is not None:
            raise self._lost
        db.execute("SAVEPOINT call")
        try:
            yield
            db.sync()  # this call's errors are this call's
        except BaseException as exc:
            if db.in_transaction:
                with contextlib.suppress(*db.errors):
                    db.sync()  # statements it sent before it raised
                db.execute("ROLLBACK TO call")
                db.execute("RELEASE call")
            else:  # the database rolled the whole transaction back
                self._lost = exc
            raise
        db.execute("RELEASE call")


def commit(db: Db) -> None:
    try:
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
