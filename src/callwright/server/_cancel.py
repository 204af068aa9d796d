"""Stopping one call of a run this process streams (``POST /runs/{run_id}/calls/{call_id}/
cancel``): the runs streaming here by id, and the answer a cancel request gets.

Only the owner of a run may stop its calls; another principal's run, an unknown run and
an unknown call all get the same 404 ``unknown_call``, so that ids cannot be probed. A
call of the run that is not running (it finished, or has not started) gets 409
``call_finished`` and nothing changes. The run must be streaming on this process: a
request that reaches another replica gets 404 (route a run's requests to the replica
that streams it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..messages import AssistantMessage
from ..run import Run
from ..wire import WireError

CANCEL_REASON = "cancelled by the user"
"""What the model is told of a call a user stopped: ``Cancelled: cancelled by the user``."""


@dataclass(frozen=True, slots=True)
class _Live:
    principal: str | None
    run: Run[Any, Any]


class LiveRuns:
    """The runs streaming on this process, by run id, with the principal each belongs to.
    A run is added when its stream starts and removed when the stream ends."""

    def __init__(self) -> None:
        self._runs: dict[str, _Live] = {}

    def add(self, run: Run[Any, Any], principal: str | None) -> None:
        self._runs[run.run_id] = _Live(principal, run)

    def remove(self, run: Run[Any, Any]) -> None:
        live = self._runs.get(run.run_id)
        if live is not None and live.run is run:
            del self._runs[run.run_id]

    def cancel_call(self, principal: str | None, run_id: str, call_id: str) -> None:
        """Stop the call, or raise the ``WireError`` the request is refused with."""
        live = self._runs.get(run_id)
        if live is None or live.principal != principal:
            raise unknown_call()
        if live.run.cancel_call(call_id, CANCEL_REASON):
            return
        if _called(live.run, call_id):
            raise WireError(
                f"call {call_id!r} is not running (it has finished, or not started)",
                "call_finished",
                409,
            )
        raise unknown_call()

    def __len__(self) -> int:
        return len(self._runs)


def unknown_call() -> WireError:
    return WireError("no such running call", "unknown_call", 404)


def _called(run: Run[Any, Any], call_id: str) -> bool:
    """Whether the run's model made a call of that id (newest messages first: the
    call is most likely in the step that is running)."""
    for message in reversed(run.messages):
        if isinstance(message, AssistantMessage) and any(
            part.id == call_id for part in message.tool_calls
        ):
            return True
    return False
