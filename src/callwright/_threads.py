"""The worker threads synchronous tools run on: never the event loop's, bounded, abandonable.

A plain (sync) tool function, a sync generator's steps and a sync activity run here,
so a blocking tool never stalls the event loop. The pool is callwright's own, apart
from the loop's default executor: tools that hang cannot starve what else uses that
executor (``getaddrinfo`` for every HTTP connection to a model, the embedded
model's start-up).

Bounded: at most ``max_threads`` threads (``MAX_TOOL_THREADS`` by default, or the
``CALLWRIGHT_TOOL_THREADS`` environment variable); a flood of sync calls queues
here instead of spawning a thread each. A queued call whose await is cancelled
(its tool timed out, the run was cancelled) never starts.

Abandonable: a thread cannot be killed, so when a sync tool outlives its timeout
the awaiting task gets ``TimedOut`` at once and the thread's eventual result is
dropped; until it returns it holds one of the threads. Tools that can stop early
should watch ``ctx.cancelled``. A C call that holds the GIL (a huge ``int`` power,
``re`` backtracking) freezes every thread, the loop's included: such work must be
bounded before it starts (as the demo's ``calculate`` does) or run in a process.

Written by hand because ``concurrent.futures.ThreadPoolExecutor`` joins its threads
when the interpreter exits: one abandoned tool thread that never returns would keep
``callwright run`` (or a server being stopped) from exiting. These threads are
daemons; otherwise this follows the standard pool (one queue, a thread started only
when none is idle).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

MAX_TOOL_THREADS = 32
"""Default bound: sync tools are mostly I/O (HTTP, files), so more than the cores."""


class ToolThreads:
    """A bounded pool of daemon threads for synchronous tool code."""

    def __init__(self, max_threads: int = MAX_TOOL_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("a tool thread pool needs at least one thread")
        self.max_threads = max_threads
        """The most threads this pool ever starts."""
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._started = 0

    @property
    def started(self) -> int:
        """Threads started so far (they live as long as the process)."""
        return self._started

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Run ``fn`` on a tool thread, in a copy of the caller's context variables."""
        future: Future[T] = Future()
        self._work.put(_Work(future, contextvars.copy_context(), fn, args, kwargs))
        if self._idle.acquire(blocking=False):
            return future
        with self._lock:
            if self._started < self.max_threads:
                self._started += 1
                name = f"callwright-tool-{self._started}"
                threading.Thread(target=self._serve, name=name, daemon=True).start()
        return future

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Await ``fn(*args, **kwargs)`` run on a tool thread; cancelling abandons it."""
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def _serve(self) -> None:
        while True:
            work = self._work.get()
            work.run()
            del work
            self._idle.release()


class _Work:
    """One queued call: where its result goes, and what to run in which context."""

    __slots__ = ("args", "context", "fn", "future", "kwargs")

    def __init__(
        self,
        future: Future[Any],
        context: contextvars.Context,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.future = future
        self.context = context
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # cancelled while queued: never started
        try:
            result = self.context.run(self.fn, *self.args, **self.kwargs)
        except BaseException as exc:  # the awaiting side decides what an error means
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)


def _configured_size() -> int:
    value = os.environ.get("CALLWRIGHT_TOOL_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else MAX_TOOL_THREADS


tool_threads = ToolThreads(_configured_size())
"""The process's pool for synchronous tools."""
