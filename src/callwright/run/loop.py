"""``Run``: one execution of an agent, as a sequence of stages.

Per step: prepare the request (``Composer``), stream one model turn (``ModelTurn``,
which returns its calls), execute the calls (``StepExecutor``, over a frozen
``RunScope``), merge the results into the history, and decide whether to go on
(``_verdict``). Each stage takes inputs and returns values; only this module
appends to the history.

Per step the loop does work proportional to what is new in that step: it
appends to the message list, never rescans or copies history.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import enum
import json
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic

from .._errors import CallwrightError
from ..approvals import ThreadApprovals
from ..call import Call, CallState, Cancelled, Decision, ToolError
from ..context import CancelToken, DepsT, RunScope
from ..elicitation import InputAnswer
from ..events import (
    Event,
    HistoryChanged,
    ModelResponse,
    PendingCall,
    RunError,
    RunFinished,
    RunStarted,
    RunStatus,
    StateSnapshot,
    StepFinished,
    StepStarted,
)
from ..execute import StepExecutor, result_event
from ..messages import (
    AssistantMessage,
    Message,
    UserMessage,
    as_messages,
    last_assistant_index,
    merge_results,
)
from ..state import RunState
from ..telemetry._config import trace_run
from ..telemetry._log import log_run
from ..toolbox import Toolbox, ToolConflict, ToolsetUnavailable
from ..usage import Usage
from . import resume
from ._doubt import settle_in_doubt
from ._types import OutputT, RunResult, RunSettings, StepInfo, new_id
from .step import Composer, ModelTurn


class RunAlreadyStarted(CallwrightError, RuntimeError):
    """A run's events can be iterated once: start a new run to run again."""


class Lifecycle(enum.Enum):
    """Where a run is in its life (``events()`` moves it on, once)."""

    NEW = "new"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class _Ending:
    """How the run ends, settled as the stages go."""

    status: RunStatus = "completed"
    reason: str | None = None
    error: RunError | None = None
    pending: list[PendingCall] = field(default_factory=list)


class Run(Generic[DepsT, OutputT]):
    """One execution of an agent. Iterate ``events()`` once; steer or cancel meanwhile;
    read ``result`` after the events end.

    Iterating never raises for a failed run: the failure is the last event (``RunError``)
    and ``result.status`` is ``"error"``, with ``result.error`` saying why (and
    ``exception`` holding the exception behind it, if one was). Check it after the loop,
    or use ``Agent.run``, which raises ``RunFailed``. ``cancel()`` ends the run with
    ``result.status == "cancelled"``: asked for, so no failure.
    """

    def __init__(
        self,
        settings: RunSettings,
        messages: list[Message],
        *,
        toolbox: Toolbox,
        decisions: Mapping[str, Decision | InputAnswer],
        state: dict[str, Any] | None,
        deps: DepsT,
        run_id: str,
        thread_id: str,
        new_from: int,
        depth: int = 0,
        agent_name: str | None = None,
        traceparent: str | None = None,
        thread_approvals: ThreadApprovals | None = None,
        principal: str | None = None,
        forwarded_props: Mapping[str, Any] | None = None,
        resumed_handles: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.messages = messages
        self.decisions = decisions
        self.result: RunResult[OutputT] | None = None
        self.exception: Exception | None = None
        """The exception that ended the run with an error, where one did (a provider
        SDK's, a bug's); None otherwise."""
        self.lifecycle = Lifecycle.NEW
        self._state_given = state is not None
        self._new_from = new_from
        self._reported = new_from
        """The history before this index has been reported in ``HistoryChanged``."""
        self._steering: deque[Message] = deque()
        self._follow_ups: deque[Message] = deque()
        self._guard = _LoopGuard(settings.limits.max_identical_calls)
        self._call_ids = {
            p.id for m in messages if isinstance(m, AssistantMessage) for p in m.tool_calls
        }
        """The call ids the conversation has used: a model's repeat of one gets a fresh id."""
        self._composer = Composer(settings, toolbox)
        self._started = time.monotonic()
        self._output: Any = None
        self._has_output = False
        self.agent_name = agent_name
        trace = trace_run(
            settings.model,
            agent_name=agent_name,
            run_id=run_id,
            thread_id=thread_id,
            depth=depth,
            messages=messages,
            traceparent=traceparent,
        )
        self._model = settings.model if trace is None else trace.model(settings.model)
        self.scope: RunScope[DepsT] = RunScope(
            run_id=run_id,
            thread_id=thread_id,
            toolbox=toolbox,
            state=RunState(copy.deepcopy(state) if state is not None else {}),
            deps=deps,
            cancel=CancelToken(),
            usage=Usage(),
            model=settings.model,
            input_text=_first_user_text(messages),
            depth=depth,
            max_depth=settings.max_delegate_depth,
            steering=self._steering,
            trace=trace,
            thread_approvals=ThreadApprovals() if thread_approvals is None else thread_approvals,
            forwarded_props=MappingProxyType(dict(forwarded_props or {})),
            principal=principal,
            resumed_handles=MappingProxyType(dict(resumed_handles or {})),
        )

    # --- what the run is ---------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.scope.run_id

    @property
    def thread_id(self) -> str:
        return self.scope.thread_id

    @property
    def toolbox(self) -> Toolbox:
        return self.scope.toolbox

    @property
    def state(self) -> RunState:
        return self.scope.state

    @property
    def deps(self) -> DepsT:
        return self.scope.deps

    @property
    def usage(self) -> Usage:
        return self.scope.usage

    @property
    def depth(self) -> int:
        return self.scope.depth

    @property
    def cancel_token(self) -> CancelToken:
        return self.scope.cancel

    # --- control from outside ---------------------------------------------------------

    def steer(self, message: str | Message) -> None:
        """Interrupt: delivered before the next model call; later sequential calls are skipped."""
        self._steering.extend(as_messages(message))

    def follow_up(self, message: str | Message) -> None:
        """Delivered after the agent would otherwise have stopped."""
        self._follow_ups.extend(as_messages(message))

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run: running tools see their cancel token (and are stopped after the
        agent's ``cancel_grace``), and the run ends with ``result.status == "cancelled"``
        and its history so far. Asked for, so not a failure: nothing raises."""
        self.scope.cancel.cancel(reason)

    def cancel_call(self, call_id: str, reason: str = "cancelled by the user") -> bool:
        """Stop one running call and let the run go on: the call's cancel token fires, its
        tool has the agent's ``cancel_grace`` to stop before its task is cancelled, and the
        model gets the error result ``Cancelled: <reason>`` (kind ``cancelled``) for it
        with the step's other results. A tool that returns anyway within its grace keeps
        its result. Returns False, changing nothing, when no call of that id is running
        (unknown, not started yet, or finished). Call it on the run's event loop."""
        return self.scope.live_calls.stop(call_id, reason)

    def running_calls(self) -> list[str]:
        """The ids of the calls whose tools are running now (what ``cancel_call`` can stop)."""
        return self.scope.live_calls.ids()

    # --- the loop ----------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[Event]:
        return self.events()

    async def events(self) -> AsyncIterator[Event]:
        """The run's canonical events, as they happen. A run is iterated once."""
        if self.lifecycle is not Lifecycle.NEW:
            raise RunAlreadyStarted(
                f"run {self.run_id} was already iterated ({self.lifecycle.value}); "
                "start a new run (Agent.stream / Agent.start) to run again"
            )
        self.lifecycle = Lifecycle.RUNNING
        trace = self.scope.trace
        source = self._events() if trace is None else trace.observe(self._events())
        try:
            async with contextlib.aclosing(source):  # closed with the run, not when collected
                async for event in source:
                    yield event
        finally:
            self.lifecycle = Lifecycle.FINISHED
            self._log()

    async def _events(self) -> AsyncGenerator[Event, None]:
        yield RunStarted(self.run_id, self.thread_id)
        if self._state_given:
            yield StateSnapshot(copy.deepcopy(self.state.data))
        end = _Ending()
        try:
            await self.toolbox.ready()  # toolsets (MCP servers) list their tools first
            async for event in self._resume(end):
                yield event
            async for event in self._steps(end):
                yield event
        except (ToolsetUnavailable, ToolConflict) as exc:
            end.status, end.error = "error", RunError(str(exc), exc.code)
            self.exception = exc
        except Exception as exc:  # a bug or a provider failure ends the run with an error event
            self.exception = exc
            end.status = "error"
            end.error = RunError(f"{type(exc).__name__}: {exc}", "internal_error")
        except (GeneratorExit, asyncio.CancelledError):
            # closed early by the consumer: let running tools know, then unwind
            self.cancel("the run was closed")
            raise
        for change in self._history_changes():
            yield change
        yield self._finish(end)

    async def _resume(self, end: _Ending) -> AsyncIterator[Event]:
        """Settle the calls left open by the previous run (decisions, client results)."""
        for delta in resume.client_writes(self.messages, self.toolbox, self.scope.state):
            yield delta
        doubted = await settle_in_doubt(self.messages, self.toolbox, self.thread_id)
        for outcome in doubted:
            yield outcome
        if any(e.state == "output-available" for e in doubted):  # reconciled: journal it
            for change in self._history_changes(last_assistant_index(self.messages) + 1):
                yield change
        calls = resume.open_calls(self.messages, self.toolbox)
        if not calls:
            return
        executor = StepExecutor(calls, self.scope, self.settings.execution, self.decisions)
        async for event in executor.run():
            yield event
        rewritten = last_assistant_index(self.messages) + 1
        merge_results(self.messages, resume.result_messages(calls))
        for change in self._history_changes(rewritten):
            yield change
        end.pending = executor.pending

    async def _steps(self, end: _Ending) -> AsyncIterator[Event]:
        step = 0
        while not end.pending:
            if (stop := self._stop_before_step()) is not None:
                end.status, end.reason = stop
                return
            step += 1
            turn = self._turn(step)
            yield StepStarted(step, turn.message_id)
            async for event in turn.events():
                yield event
            outcome = turn.outcome
            self._call_ids.update(call.id for call in outcome.calls)
            self.usage.add(outcome.usage)
            self.messages.append(outcome.reply)
            for change in self._history_changes():
                yield change
            yield ModelResponse(step, outcome.reply)
            if outcome.has_output:
                self._output, self._has_output = outcome.output, True
            if outcome.error is not None or outcome.stopped is not None:
                if outcome.error is not None:
                    end.status, end.error = "error", outcome.error
                    why, finish = "the model call failed", "error"
                else:
                    end.status, end.reason = "stopped", outcome.stopped
                    why, finish = f"not run, {outcome.stopped}", "other"
                _cancel_unfinished(outcome.calls, why)
                for call in outcome.calls:
                    yield result_event(call)
                self.messages.extend(resume.result_messages(outcome.calls))
                for change in self._history_changes():
                    yield change
                yield StepFinished(step, turn.message_id, finish, outcome.usage)
                return
            if self.cancel_token.is_cancelled():
                _cancel_unfinished(outcome.calls, self.cancel_token.reason)
            aborted = self._guard.check(outcome.calls)
            executor = StepExecutor(outcome.calls, self.scope, self.settings.execution)
            async for event in executor.run():
                yield event
            self.messages.extend(resume.result_messages(outcome.calls))
            self.messages.extend(self._guard.take_nudges())
            for change in self._history_changes():
                yield change
            end.pending = executor.pending
            info = StepInfo(step, self.messages, outcome.calls, self.usage)
            yield StepFinished(step, turn.message_id, outcome.finish, outcome.usage)
            if self.settings.on_step_finish is not None:
                self.settings.on_step_finish(info)
            if (stop := self._verdict(info, aborted, end.pending)) is not None:
                end.status, end.reason = stop
                return

    def _history_changes(self, rewritten: int | None = None) -> list[HistoryChanged]:
        """What the history gained since it was last reported (from ``rewritten`` on when
        resuming sorted results in before the end)."""
        start = self._reported if rewritten is None else min(rewritten, self._reported)
        self._reported = len(self.messages)
        if start >= len(self.messages):
            return []
        return [HistoryChanged(start, self.messages[start:])]

    def _turn(self, step: int) -> ModelTurn:
        settings = self.settings
        last_step = step >= settings.limits.max_steps
        instances = self.state.instance_ids()
        request = self._composer.request(
            self.messages, step, last_step, instances, self.cancel_token
        )
        return ModelTurn(
            self._model,
            request,
            toolbox=self.toolbox,
            limits=settings.limits,
            output=settings.output,
            instances=instances,
            step=step,
            message_id=new_id("msg"),
            used_ids=self._call_ids,
            deadline=(
                None
                if settings.limits.max_duration is None
                else self._started + settings.limits.max_duration
            ),
        )

    # --- deciding whether to go on -------------------------------------------------------

    def _stop_before_step(self) -> tuple[RunStatus, str | None] | None:
        if self.cancel_token.is_cancelled():
            return "cancelled", None
        while self._steering:
            self.messages.append(self._steering.popleft())
        limits = self.settings.limits
        if limits.max_tokens is not None and self.usage.total_tokens >= limits.max_tokens:
            return "stopped", f"token limit reached ({limits.max_tokens})"
        elapsed = time.monotonic() - self._started
        if limits.max_duration is not None and elapsed >= limits.max_duration:
            return "stopped", f"time limit reached ({limits.max_duration:g}s)"
        return None

    def _verdict(
        self, info: StepInfo, aborted: str | None, pending: list[PendingCall]
    ) -> tuple[RunStatus, str | None] | None:
        """After a step: how the run ends now, or None to take another step.

        A status of "completed" with pending calls becomes "paused" at the end.
        """
        calls = info.last_calls
        if aborted:
            return "stopped", aborted
        if pending:
            return "completed", None
        if self.cancel_token.is_cancelled():
            return "cancelled", None
        if self._has_output:
            return "completed", None
        if calls and any(cond(info) for cond in self.settings.stop_when):
            return "completed", None
        if calls and info.step >= self.settings.limits.max_steps:
            return "stopped", f"step limit reached ({self.settings.limits.max_steps})"
        if calls or self._steering:
            return None
        if self._follow_ups:
            self.messages.append(self._follow_ups.popleft())
            return None
        return "completed", None

    def _log(self) -> None:
        """The run's one log line (``callwright.run``)."""
        result = self.result
        log_run(
            self.scope,
            agent_name=self.agent_name,
            status=result.status if result is not None else None,
            usage=self.usage,
            seconds=time.monotonic() - self._started,
            reason=result.reason if result is not None else None,
            error_code=result.error.code if result is not None and result.error else None,
        )

    def _finish(self, end: _Ending) -> Event:
        """The result, and the run's last event."""
        status = "paused" if end.pending and end.status == "completed" else end.status
        # OutputT is str unless the agent names an output type, which _has_output then holds
        output: Any = self._output if self._has_output else _final_text(self.messages)
        self.result = RunResult(
            status=status,
            output=output if status in ("completed", "stopped") else None,
            messages=self.messages,
            new_messages=self.messages[self._new_from :],
            usage=self.usage,
            pending=end.pending,
            state=self.state.data,
            run_id=self.run_id,
            thread_id=self.thread_id,
            reason=end.reason,
            error=end.error,
        )
        if end.error is not None:
            return end.error
        return RunFinished(
            self.run_id,
            self.thread_id,
            status,
            self.result.output,
            end.pending,
            self.usage,
            end.reason,
        )


class _LoopGuard:
    """Counts consecutive identical calls: a nudge at the threshold, a stop the second time.

    Identical means the same tool and equal argument values (key order does not
    matter), compared with the previous call only: O(1) per call.
    """

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self._last: tuple[str, dict[str, Any]] | None = None
        self._streak = 0
        self._nudged: set[str] = set()
        self._nudges: list[Message] = []

    def check(self, calls: list[Call]) -> str | None:
        """Why the run must stop (the open calls are then failed), or None."""
        if self.threshold <= 0:
            return None
        for call in calls:
            if call.done:
                continue
            current = (call.tool_name, call.raw_arguments)
            if current == self._last:
                self._streak += 1
            else:
                self._last, self._streak = current, 1
            if self._streak < self.threshold:
                continue
            self._streak = 0
            signature = call.tool_name + json.dumps(call.raw_arguments, sort_keys=True)
            if signature not in self._nudged:
                self._nudged.add(signature)
                self._nudges.append(
                    UserMessage(
                        f"[You have called {call.tool_name} {self.threshold} times with "
                        "identical arguments. Use the results you have, try something "
                        "different, or answer.]"
                    )
                )
                continue
            why = f"repeated tool call: {call.tool_name} with identical arguments"
            for other in calls:
                if not other.done:
                    other.fail(ToolError(f"Not executed: {why}."))
            return why
        return None

    def take_nudges(self) -> list[Message]:
        nudges, self._nudges = self._nudges, []
        return nudges


def _cancel_unfinished(calls: list[Call], reason: str) -> None:
    for call in calls:
        if call.done:
            continue
        if call.state is CallState.INPUT_STREAMING:
            call.transition(CallState.INPUT_AVAILABLE)
        call.fail(Cancelled(reason))


def _first_user_text(messages: list[Message]) -> str:
    """The run's first user message: what ``_scopes: ["input"]`` hands on."""
    for message in messages:
        if isinstance(message, UserMessage):
            return message.content
    return ""


def _final_text(messages: list[Message]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message.text
    return None
