"""One thread per journal that runs its writes in order, several to a transaction.

Written by hand rather than with ``concurrent.futures.ThreadPoolExecutor(1)``: the
point is group commit. The thread takes every write queued when it wakes (up to
``max_batch``) and runs them inside one ``batch()``, so a thousand runs each
committing a step cost one transaction, not a thousand. A write's future is
settled only after the batch commits: a result is never reported for a write
that did not reach the database.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("callwright.store")


@dataclass(slots=True)
class _Item:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: concurrent.futures.Future[Any]


_STOP = object()


class JournalWriter:
    """Runs submitted calls on one thread; the calls queued together share a ``batch``."""

    def __init__(
        self,
        batch: Callable[[], AbstractContextManager[None]],
        *,
        name: str = "callwright-journal",
        max_batch: int = 512,
    ) -> None:
        self._batch = batch
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._started = False
        self._closed = False
        self._lock = threading.Lock()
        self.ident: int | None = None
        """The writer thread's id once it runs (calls on it need no hop)."""

    def submit(self, fn: Callable[..., T], /, *args: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                future.set_exception(RuntimeError("the journal is closed"))
                return future
            if not self._started:
                self._started = True
                self._thread.start()
            self._queue.put(_Item(fn, args, future))
        return future

    def close(self, timeout: float = 10.0) -> None:
        """Run what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = self._started
            if started:
                self._queue.put(_STOP)
        if started and threading.get_ident() != self.ident:
            self._thread.join(timeout)

    def _loop(self) -> None:
        self.ident = threading.get_ident()
        while True:
            items, stop = self._take()
            if items:
                self._run(items)
            if stop:
                return

    def _take(self) -> tuple[list[_Item], bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        items = [first]
        while len(items) < self._max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return items, True
            items.append(item)
        return items, False

    def _run(self, items: list[_Item]) -> None:
        done: list[tuple[_Item, Any, BaseException | None]] = []
        try:
            with self._batch():
                for item in items:
                    if not item.future.set_running_or_notify_cancel():
                        continue
                    try:
                        done.append((item, item.fn(*item.args), None))
                    except Exception as exc:  # this call's own failure: the others go on
                        done.append((item, None, exc))
        except Exception as exc:  # the transaction failed: nothing of it is durable
            log.warning("journal batch of %d writes failed: %s", len(items), exc)
            for item, _, error in done:
                item.future.set_exception(error or exc)
            for item in items:
                if not item.future.done():
                    item.future.set_exception(exc)
            return
        for item, value, error in done:
            if error is None:
                item.future.set_result(value)
            else:
                item.future.set_exception(error)
