"""One started group of a step's calls, from their starts to their results.

The group is registered as live (``Run.cancel_call`` can stop its calls) before their
``ToolExecutionStart`` events are yielded, and its tasks are made only after: a journal
has recorded each start before its tool runs, with no gate for a task to wait at. The
run's ``LiveCalls`` holds the group, not its calls: a call that is never stopped costs
nothing there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .call import Call
from .context import CancelToken
from .elicitation import InputRequest
from .events import Event
from .tool import Executor

if TYPE_CHECKING:
    from .context import RunScope


@dataclass(slots=True)
class Finished:
    """Queued by a call's task when it is done; the consumer emits its result events."""

    call: Call


@dataclass(slots=True)
class Asked:
    """Queued by a call's task when its tool asked a human: the call stays open."""

    call: Call
    request: InputRequest


Item = Event | Finished | Asked
Runner = Callable[[Call, Executor, CancelToken | None, "RunningGroup"], Coroutine[Any, Any, None]]
"""Runs one call of the group and queues its ``Finished`` or ``Asked`` (``put``)."""


class RunningGroup:
    """A group of calls started together: where their events arrive, how one of them is
    stopped, and how what is left of them is stopped at the end."""

    __slots__ = (
        "_group",
        "_loop",
        "_loop_thread",
        "_runner",
        "_scope",
        "_tasks",
        "_timer",
        "cancel_grace",
        "queue",
        "stopped",
        "timed_out",
        "tokens",
        "tool_timeout",
    )

    def __init__(
        self,
        group: list[tuple[Call, Executor]],
        scope: RunScope[Any],
        runner: Runner,
        *,
        tool_timeout: float | None,
        cancel_grace: float,
    ) -> None:
        self._group = group
        self._scope = scope
        self._runner = runner
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._tasks: list[asyncio.Task[None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.tokens: list[CancelToken | None] = []
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self.stopped: dict[str, str] = {}
        """Call id -> why ``Run.cancel_call`` stopped it."""
        self.timed_out: set[str] = set()
        """Calls stopped by the default time per tool."""
        self.tool_timeout = tool_timeout
        self.cancel_grace = cancel_grace
        scope.live_calls.add(self)

    def put(self, item: Item) -> None:
        if threading.get_ident() == self._loop_thread:
            self.queue.put_nowait(item)
        else:  # a sync tool reporting progress from its worker thread
            self._loop.call_soon_threadsafe(self.queue.put_nowait, item)

    def go(self) -> None:
        """Start the calls' tasks: their starts were yielded (and recorded)."""
        scope = self._scope
        trace = scope.trace  # when tracing, each task runs with its call's span current
        for call, executor in self._group:
            # a plain function without a ToolContext parameter never sees one: skip making it
            uses_context = call.tool is not None and call.tool.uses_context
            token = scope.cancel.child() if uses_context else None
            self.tokens.append(token)
            self._tasks.append(
                self._loop.create_task(
                    self._runner(call, executor, token, self),
                    context=None if trace is None else trace.tool_context(call),
                )
            )
        # one timer for the group instead of one per call: they all started now
        if self.tool_timeout is not None:
            self._timer = self._loop.call_later(self.tool_timeout, self._expire)
        scope.cancel.add_callback(self._on_cancel)

    def stop(self, call_id: str, reason: str) -> bool:
        """How ``Run.cancel_call`` stops one call: its token fires and its task is cancelled
        after ``cancel_grace`` (at once for a tool that takes no ``ToolContext``: it could
        not see the token). A call whose task is not made yet never runs its tool. False
        for a call not of this group, finished, or stopped already."""
        at = next((i for i, (call, _) in enumerate(self._group) if call.id == call_id), None)
        if at is None or call_id in self.stopped:
            return False
        if at < len(self._tasks) and self._tasks[at].done():
            return False
        self.stopped[call_id] = reason
        if at >= len(self._tasks):
            return True
        task, token = self._tasks[at], self.tokens[at]
        if token is None:
            # after the task's first step (scheduled before this): cancelled before it
            # ran, the task would end without reporting its call
            self._loop.call_soon(task.cancel)
        else:
            token.cancel(reason)
            self._loop.call_later(self.cancel_grace, task.cancel)
        return True

    def live_ids(self) -> list[str]:
        """The group's calls not finished nor stopped, in their order."""
        tasks = self._tasks
        return [
            call.id
            for i, (call, _) in enumerate(self._group)
            if call.id not in self.stopped and (i >= len(tasks) or not tasks[i].done())
        ]

    def close(self) -> None:
        """Stop what is left of the group and forget its calls."""
        if self._timer is not None:
            self._timer.cancel()
        self._scope.cancel.remove_callback(self._on_cancel)
        self._scope.live_calls.discard(self)
        for task in self._tasks:
            if not task.done():
                task.cancel()

    def _expire(self) -> None:
        """The default time per tool is up: stop the calls whose tool sets none."""
        for (call, _), task in zip(self._group, self._tasks, strict=True):
            if not task.done() and call.tool is not None and call.tool.timeout is None:
                self.timed_out.add(call.id)
                task.cancel()

    def _on_cancel(self) -> None:
        self._loop.call_later(self.cancel_grace, self._hard_cancel)

    def _hard_cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
