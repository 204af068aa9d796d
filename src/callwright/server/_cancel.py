"""Stopping one call of a run this process streams (``POST /runs/{run_id}/calls/{call_id}/
cancel``): the runs streaming here by id, and the answer a cancel request gets.

Only the owner of a run may stop its calls; another principal's run, an unknown run and
an unknown call all get the same 404 ``unknown_call``, so that ids cannot be probed. A
call of the run that is not running (it finished, or has not started) gets 409
``call_finished`` and nothing changes.

With a journal, a request for a run that streams on another replica (behind a load
balancer) is checked against the journal and recorded there (``CancelRequests``); the
replica streaming the run takes it on its next poll (``ServerLimits.
cancel_poll_seconds``) and stops the call as if the request had reached it. A call
that finishes before that keeps its result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..messages import AssistantMessage
from ..run import Run
from ..store import Journal, database_errors
from ..store._cancels import CancelRequests, Verdict
from ..wire import WireError
from ._start import journal_unavailable

log = logging.getLogger("callwright.server")

CANCEL_REASON = "cancelled by the user"
"""What the model is told of a call a user stopped: ``Cancelled: cancelled by the user``."""


@dataclass(frozen=True, slots=True)
class _Live:
    principal: str | None
    run: Run[Any, Any]


class LiveRuns:
    """The runs streaming on this process, by run id, with the principal each belongs to.
    A run is added when its stream starts and removed when the stream ends."""

    def __init__(self, requests: CancelRequests | None = None, interval: float = 0.25) -> None:
        self._runs: dict[str, _Live] = {}
        self._requests = requests
        self._interval = interval
        self._poll: asyncio.Task[None] | None = None

    def add(self, run: Run[Any, Any], principal: str | None) -> None:
        """Called on the event loop; starts the poll for cancel requests if it is not on."""
        self._runs[run.run_id] = _Live(principal, run)
        if self._requests is not None and (self._poll is None or self._poll.done()):
            self._poll = asyncio.get_running_loop().create_task(self._polling(self._requests))

    def watch(self, run: Run[Any, Any], principal: str | None) -> Callable[[], None]:
        """``add`` now, and what ``remove``s it (a run a durable runtime continues here)."""
        self.add(run, principal)
        return lambda: self.remove(run)

    def remove(self, run: Run[Any, Any]) -> None:
        live = self._runs.get(run.run_id)
        if live is not None and live.run is run:
            del self._runs[run.run_id]

    async def cancel_call(self, principal: str | None, run_id: str, call_id: str) -> None:
        """Stop the call, or raise the ``WireError`` the request is refused with."""
        live = self._runs.get(run_id)
        if live is not None:
            if live.principal != principal:
                raise unknown_call()
            _cancel_here(live.run, call_id)
            return
        if self._requests is None:
            raise unknown_call()
        try:
            verdict = await asyncio.to_thread(
                self._requests.request, principal or "", run_id, call_id
            )
        except database_errors() as exc:
            raise journal_unavailable(exc) from exc
        if verdict is Verdict.FINISHED:
            raise call_finished(call_id)
        if verdict is Verdict.UNKNOWN:
            raise unknown_call()

    async def _polling(self, requests: CancelRequests) -> None:
        """Every ``interval`` seconds while runs stream here (it ends when none does), stop
        the calls of theirs that requests on other replicas asked to stop (see the module
        docstring)."""
        failing = False
        while self._runs:
            await asyncio.sleep(self._interval)
            if not self._runs:
                return
            try:
                taken = await asyncio.to_thread(requests.take, list(self._runs))
            except database_errors() as exc:
                if not failing:
                    log.warning("could not read the cancel requests from the journal: %s", exc)
                failing = True
                continue
            failing = False
            for run_id, call_id in taken:
                live = self._runs.get(run_id)
                if live is not None:
                    live.run.cancel_call(call_id, CANCEL_REASON)

    def close(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
        if self._requests is not None:
            self._requests.close()

    def __len__(self) -> int:
        return len(self._runs)


def cancel_requests(journal: Journal | None) -> CancelRequests | None:
    """The cancel requests in the database of ``journal`` (SQLite or Postgres), if any."""
    target = getattr(journal, "target", None)
    if not isinstance(target, str) or target == ":memory:":
        return None
    return CancelRequests(target)


def unknown_call() -> WireError:
    return WireError("no such running call", "unknown_call", 404)


def call_finished(call_id: str) -> WireError:
    return WireError(
        f"call {call_id!r} is not running (it has finished, or not started)",
        "call_finished",
        409,
    )


def _cancel_here(run: Run[Any, Any], call_id: str) -> None:
    """Stop a call of a run streaming on this process, or refuse."""
    if run.cancel_call(call_id, CANCEL_REASON):
        return
    if _called(run, call_id):
        raise call_finished(call_id)
    raise unknown_call()


def _called(run: Run[Any, Any], call_id: str) -> bool:
    """Whether the run's model made a call of that id (newest messages first: the
    call is most likely in the step that is running)."""
    for message in reversed(run.messages):
        if isinstance(message, AssistantMessage) and any(
            part.id == call_id for part in message.tool_calls
        ):
            return True
    return False
