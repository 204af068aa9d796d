"""One thread per journal that runs its writes in order, several to a transaction.

Written by hand rather than with ``concurrent.futures.ThreadPoolExecutor(1)``: the
point is group commit and a cheap hand-back. The thread takes every write queued
when it wakes (up to ``max_batch``) and runs them inside one ``batch()``, so a
thousand runs each committing a step cost one transaction, not a thousand. The
results go back to each event loop in one ``call_soon_threadsafe`` per batch (an
``asyncio.Future`` per write, no lock or condition per write), and only after the
batch committed: a result is never reported for a write that did not reach the
database. A batch that rolled back because one of its calls failed (``RolledBack``) is
run again without that call (each call alone when it is not known which one it was),
so that one run's failing write does not fail every run whose write shared its batch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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
    future: asyncio.Future[Any] | concurrent.futures.Future[Any] | None
    """Resolved once the batch is over: on its loop, or from the writer thread for a
    thread's future (None: nobody waits)."""


_STOP = object()
_Done = list[tuple[_Item, Any, BaseException | None]]


class RolledBack(Exception):
    """A batch rolled back because one of its calls failed, the database still usable:
    its calls are run again. ``culprit`` is the failing call's error when that call is
    known (None: a held write's error surfaced where it cannot be told whose)."""

    def __init__(self, error: BaseException, culprit: BaseException | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.culprit = culprit


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
        self._failing = False
        """The last batch failed whole (the database away): the next failure is not
        logged again, only the first of an outage."""

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

    def call(self, fn: Callable[..., T], /, *args: Any) -> concurrent.futures.Future[T]:
        """Queue ``fn(*args)`` for a thread that waits for its outcome (the heartbeat): the
        future is resolved even when the batch failed before ``fn`` ran (at ``BEGIN``)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self._closed:
            future.set_exception(RuntimeError("the journal is closed"))
            return future
        self._start()
        self._queue.put(_Item(fn, args, future))
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
        _hand_back(self._attempt(items))

    def _attempt(self, items: list[_Item]) -> _Done:
        """Run ``items`` in one batch; while it rolls back for one call's failure, run
        the others again without that call (each alone when it is not known which)."""
        finished: _Done = []
        while True:
            done, rolled = self._once(items)
            if rolled is None:
                return finished + done
            errors = {id(item): error for item, _, error in done}
            culprit = next((i for i in items if errors.get(id(i)) is rolled.culprit), None)
            if len(items) == 1 or rolled.culprit is None or culprit is None:
                if len(items) > 1:
                    log.warning("journal batch of %d writes rolled back: %s", len(items), rolled)
                    return finished + [self._alone(item) for item in items]
                return [*finished, (items[0], None, errors.get(id(items[0])) or rolled.error)]
            finished.append((culprit, None, rolled.culprit))
            items = [item for item in items if item is not culprit]

    def _alone(self, item: _Item) -> tuple[_Item, Any, BaseException | None]:
        done, rolled = self._once([item])
        error = done[0][2] if done else None
        if rolled is not None:
            return item, None, error or rolled.error
        return done[0] if done else (item, None, error)

    def _once(self, items: list[_Item]) -> tuple[_Done, RolledBack | None]:
        done: _Done = []
        try:
            with self._batch():
                for item in items:
                    try:
                        done.append((item, item.fn(*item.args), None))
                    except Exception as exc:  # this call's own failure: the others go on
                        done.append((item, None, exc))
        except RolledBack as rolled:
            return done, rolled
        except Exception as exc:  # the transaction failed: nothing of it is durable
            if not self._failing:
                log.warning("journal batch of %d writes failed: %s", len(items), exc)
            self._failing = True
            errors = {id(item): error for item, _, error in done}
            done = [(item, None, errors.get(id(item)) or exc) for item in items]
            return done, None
        self._failing = False
        return done, None


def _hand_back(done: list[tuple[_Item, Any, BaseException | None]]) -> None:
    """Resolve the futures on their loops: one callback per loop per batch."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for item, value, error in done:
        if isinstance(item.future, concurrent.futures.Future):
            if error is None:
                item.future.set_result(value)
            else:
                item.future.set_exception(error)
        elif item.future is not None:
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
