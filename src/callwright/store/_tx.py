"""The write connection's transactions: one of its own, or a savepoint in a batch.

``batch`` is the writer thread's group commit: one ``BEGIN IMMEDIATE`` for every call
queued together, each call a savepoint, so that one call's failure (a refused request)
rolls back that call only. When SQLite rolls the whole transaction back itself (a full
disk, an I/O error), the rest of the batch fails with the same error instead of
running outside any transaction.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator


class Transactions:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.RLock()
        """Held by whoever uses the connection (the writer thread, or a synchronous call)."""
        self._in_batch = False
        self._lost: BaseException | None = None
        self._depth = 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for the calls made inside; each call is a savepoint in it."""
        with self.lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            self._in_batch, self._lost = True, None
            try:
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
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A transaction of its own, or a savepoint inside a ``batch``; inside another
        ``tx`` (a group of calls), part of that one."""
        with self.lock:
            db = self.db
            if self._depth:
                yield db
                return
            self._depth += 1
            try:
                if self._in_batch:
                    with self._savepoint(db):
                        yield db
                else:
                    db.execute("BEGIN IMMEDIATE")
                    try:
                        yield db
                    except BaseException:
                        if db.in_transaction:
                            db.execute("ROLLBACK")
                        raise
                    commit(db)
            finally:
                self._depth -= 1

    @contextlib.contextmanager
    def _savepoint(self, db: sqlite3.Connection) -> Iterator[None]:
        if self._lost is not None:
            raise self._lost
        db.execute("SAVEPOINT call")
        try:
            yield
        except BaseException as exc:
            if db.in_transaction:
                db.execute("ROLLBACK TO call")
                db.execute("RELEASE call")
            else:  # SQLite rolled the whole transaction back
                self._lost = exc
            raise
        db.execute("RELEASE call")


def commit(db: sqlite3.Connection) -> None:
    try:
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
