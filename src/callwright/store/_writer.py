"""One thread per journal that runs its writes in order, several to a transaction.

Written by hand rather than with ``concurrent.futures.ThreadPoolExecutor(1)``: the
point is group commit and a cheap hand-back. The thread takes every write queued
when it wakes (up to ``max_batch``) and runs them inside one ``batch()``, so a
thousand runs each committing a step cost one transaction, not a thousand. The
results go back to each event loop in one ``call_soon_threadsafe`` per batch (an
``asyncio.Future`` per write, no lock or condition per write), and only after the
batch committed: a result is never reported for a write that did not reach the
database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("callwright.store")

_Outcome = tuple["asyncio.Future[Any]", Any, BaseException | None]


@dataclass(slots=True)
class _Item:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any] | None
    """Resolved on its loop once the batch is over (None: nobody waits)."""


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
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Item]] = {}

    def submit(self, fn: Callable[..., T], /, *args: Any) -> asyncio.Future[T] | None:
        """Queue ``fn(*args)``. On an event loop: a future of its result (or exception);
        elsewhere (a heartbeat thread): None.

        On a loop, the calls submitted during one pass of the loop are handed to the
        thread together, at the end of the pass: one wake-up of the writer thread per
        pass, not per call (each wake-up is a GIL hand-over the loop pays for)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        future: asyncio.Future[T] | None = None if loop is None else loop.create_future()
        if self._closed:
            if future is not None:
                future.set_exception(RuntimeError("the journal is closed"))
            return future
        self._start()
        item = _Item(fn, args, future)
        if loop is None:
            self._queue.put(item)
            return future
        waiting = self._waiting.get(loop)
        if waiting is None:
            waiting = self._waiting[loop] = []
            loop.call_soon(self._hand_over, loop)
        waiting.append(item)
        return future

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Queue ``fn(*args)`` with nobody waiting for it (a failure is logged)."""
        if self._closed:
            return
        self._start()
        self._queue.put(_Item(fn, args, None))

    def _start(self) -> None:
        if not self._started:
            with self._lock:
                if not self._started:
                    self._started = True
                    self._thread.start()

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        self._queue.put(self._waiting.pop(loop))

    def close(self, timeout: float = 10.0) -> None:
        """Run what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = self._started
        if started:
            self._queue.put(_STOP)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            items, stop = self._take()
            if items:
                self._run(items)
            if stop:
                return

    def _take(self) -> tuple[list[_Item], bool]:
        """What is queued now (a loop pass's calls come as one list)."""
        first = self._queue.get()
        if first is _STOP:
            return [], True
        items = first if isinstance(first, list) else [first]
        while len(items) < self._max_batch:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is _STOP:
                return items, True
            items.extend(more if isinstance(more, list) else [more])
        return items, False

    def _run(self, items: list[_Item]) -> None:
        done: list[tuple[_Item, Any, BaseException | None]] = []
        try:
            with self._batch():
                for item in items:
                    try:
                        done.append((item, item.fn(*item.args), None))
                    except Exception as exc:  # this call's own failure: the others go on
                        done.append((item, None, exc))
        except Exception as exc:  # the transaction failed: nothing of it is durable
            log.warning("journal batch of %d writes failed: %s", len(items), exc)
            errors = {id(item): error for item, _, error in done}
            done = [(item, None, errors.get(id(item)) or exc) for item in items]
        _hand_back(done)


def _hand_back(done: list[tuple[_Item, Any, BaseException | None]]) -> None:
    """Resolve the futures on their loops: one callback per loop per batch."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for item, value, error in done:
        if item.future is not None:
            by_loop.setdefault(item.future.get_loop(), []).append((item.future, value, error))
        elif error is not None:
            log.warning("journal write %s failed: %s", getattr(item.fn, "__name__", ""), error)
    for loop, outcomes in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_resolve, outcomes)


def _resolve(outcomes: list[_Outcome]) -> None:
    for future, value, error in outcomes:
        if future.done():  # cancelled by its waiter
            continue
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
