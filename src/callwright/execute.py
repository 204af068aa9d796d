"""Runs the calls of one step: gate them (invalid, unknown, client, approval,
latent), execute the rest under a strategy, and stream every event as it happens.

Strategies and steering checkpoints follow yoagent exactly:

=============  ==========================  ===============================
strategy       runs                        steering checked
=============  ==========================  ===============================
parallel       all at once (default)       once, after all finish
sequential     one at a time               after each call, incl. the last
batched(n)     groups of n, concurrently   after each batch, incl. the last
=============  ==========================  ===============================

When steering is found, the calls not yet started are skipped with the error
"Skipped due to queued user message.". A tool marked ``sequential`` is a
barrier under any strategy: it runs alone, after everything before it.

A running tool that asks a human a question (``InputRequired``, see
``callwright.elicitation``) leaves its call open: it is listed as pending (kind
``input``) like a call awaiting approval, and runs again, with the answer in its
context, when a resumed run brings an ``InputAnswer`` for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from . import acts
from ._running import Asked, Finished, Item, RunningGroup
from ._strategy import PARALLEL, Strategy
from ._tool_files import MAX_TOOL_FILE_BYTES
from .approvals import AgentApprovalPolicy, ApprovalIds, ApprovalQuery, decide
from .approvals._records import new_approval_id
from .call import (
    Call,
    CallState,
    Cancelled,
    Decision,
    Denied,
    InvalidArgs,
    Skipped,
    TimedOut,
    ToolError,
    ToolNotFound,
    idempotency_key,
)
from .context import CancelToken, DepsT, RunScope, ToolContext
from .elicitation import InputAnswer, InputRequest, InputRequired
from .events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    InputRequested,
    PendingCall,
    ResultState,
    ToolCallResult,
    ToolExecutionStart,
    ToolHandleSaved,
    ToolPartialOutput,
    ToolProgress,
)
from .telemetry._log import log_failed_call
from .tool import Executor, Tool, as_result

if TYPE_CHECKING:
    from .artifacts import RunArtifacts


def result_event(call: Call) -> ToolCallResult:
    """The one result event of a finished call, as UIs and the model each need it."""
    if call.error is not None:
        state: ResultState = (
            "output-denied" if call.state is CallState.OUTPUT_DENIED else "output-error"
        )
        return ToolCallResult(
            call.id,
            call.tool_name,
            state,
            content=call.model_text(),
            error=call.error.model_text(),
            error_kind=call.error.kind,
        )
    assert call.result is not None
    return ToolCallResult(
        call.id,
        call.tool_name,
        "output-available",
        output=call.result.content,
        content=call.model_text(),
        details=call.result.details,
        artifact=call.result.artifact,
        files=call.result.files,
    )


@dataclass(frozen=True, slots=True)
class ExecutionPolicy:
    """How an agent's calls are carried out: the same for every step of its runs."""

    strategy: Strategy = PARALLEL
    """parallel, sequential or batched(n)."""
    cancel_grace: float = 5.0
    """Seconds a cancelled tool has to stop on its own before its task is cancelled."""
    tool_timeout: float | None = None
    """For tools that set no timeout of their own."""
    approval_ids: ApprovalIds | None = None
    """Makes approval ids (e.g. signed ones); random by default."""
    approval: AgentApprovalPolicy | None = None
    """The agent's approval policy: it sees every call before the tool's own setting."""
    artifacts: RunArtifacts | None = None
    """Stores results too large for the model's context (``Agent(artifacts=...)``)."""
    max_tool_file_bytes: int = MAX_TOOL_FILE_BYTES
    """``Limits.max_tool_file_bytes``: the files of one result, together."""


class StepExecutor(Generic[DepsT]):
    """Carries out the calls of one step and yields events in completion order.

    After ``run()`` is drained, every call is either done (one result) or listed
    in ``pending`` (waiting for a human or a front end), and ``steered`` says
    whether a steering message made it skip calls.
    """

    def __init__(
        self,
        calls: list[Call],
        scope: RunScope[DepsT],
        policy: ExecutionPolicy,
        decisions: Mapping[str, Decision | InputAnswer] | None = None,
    ) -> None:
        self.calls = calls
        self.scope = scope
        self.policy = policy
        self.decisions: Mapping[str, Decision | InputAnswer] = decisions or {}
        self.pending: list[PendingCall] = []
        self.steered = False

    async def run(self) -> AsyncIterator[Event]:
        """Gate, order and run the calls, yielding events in completion order.

        Groups not yet started when steering or cancellation arrives are skipped:
        each of their calls gets its one error result instead of running.
        """
        runnable: list[tuple[Call, Executor]] = []
        for call in self.calls:
            for event in self._gate(call, runnable):
                yield event
        if any(call.deferred for call, _ in runnable):
            groups = self._dataflow_groups(runnable)
            for call, _ in runnable:
                if call.done:  # refused before anything runs: a cycle or a missing reference
                    for event in self._finished(call):
                        yield event
            runnable = [item for item in runnable if not item[0].done]
        else:
            groups = self._groups(runnable)
        for i, group in enumerate(groups):
            if self.steered or self.scope.cancel.is_cancelled():
                reason: ToolError = (
                    Skipped() if self.steered else Cancelled(self.scope.cancel.reason)
                )
                for call, _ in group:
                    call.fail(reason)
                    for event in self._finished(call):
                        yield event
                continue
            # live before the starts (a started call can be stopped), run after them
            running = RunningGroup(
                group,
                self.scope,
                self._run_one,
                tool_timeout=self.policy.tool_timeout,
                cancel_grace=self.policy.cancel_grace,
            )
            try:
                for call, _ in group:
                    yield ToolExecutionStart(call.id, call.tool_name, call.edited)
                running.go()  # the starts are recorded: the tools may run now
                remaining = len(group)
                while remaining:
                    item = await running.queue.get()
                    if isinstance(item, Finished):
                        remaining -= 1
                        for event in self._finished(item.call):
                            yield event
                    elif isinstance(item, Asked):
                        remaining -= 1
                        yield self._asked(item.call, item.request)
                    else:
                        yield item
            finally:
                running.close()
            # The run loop polls steering after every step; here it only decides skipping.
            if (
                self.policy.strategy.kind != "parallel"
                and i < len(groups) - 1
                and bool(self.scope.steering)
            ):
                self.steered = True

    # --- gating -----------------------------------------------------------------

    def _gate(self, call: Call, runnable: list[tuple[Call, Executor]]) -> list[Event]:
        """Decide what happens to a call before anything runs; returns events to emit.

        Approval comes first, for front-end tools too: a call a policy denies never
        reaches the front end, and one that needs a human waits for them before it does.
        """
        if call.done:
            return self._finished(call)
        tool = call.tool
        if tool is None:
            call.fail(ToolNotFound(call.tool_name, self.scope.toolbox.names))
            return self._finished(call)
        executor = self.scope.toolbox.executor_for(tool)
        kind = self.scope.toolbox.kind(tool, executor)
        decision = self.decisions.get(call.id)
        if isinstance(decision, InputAnswer):
            if executor is None:
                call.fail(InvalidArgs(f"{tool.name} runs no code that could have asked a question"))
                return self._finished(call)
            # the call ran (approved, if it needed approval) and asked a question: it goes on
            runnable.append((call, executor))
            return []
        events: list[Event] = []
        if call.state is CallState.INPUT_AVAILABLE:
            events = self._approve(call, tool, kind == "client", decision)
            if call.done:
                return events + self._finished(call)
            if self._waiting(call):  # for a human
                return events
        if kind == "client":
            self.pending.append(PendingCall(call.id, call.tool_name, call.raw_arguments, "client"))
            return events
        if kind == "latent":
            acts.answer_latent(call)
            return events + self._finished(call)
        assert executor is not None
        runnable.append((call, executor))
        return events

    def _approve(
        self, call: Call, tool: Tool, client: bool, decision: Decision | None
    ) -> list[Event]:
        """Apply the approval verdict (``_approvals.decide``) to a fresh call.

        A human's decision for this call is applied when one came back, unless a policy
        now denies the call: nothing runs that a human or a policy denied.
        """
        if decision is None and self.policy.approval is None and tool.requires_approval is False:
            return []  # no policy could ask: the common call builds no query
        query = ApprovalQuery(
            call.id,
            call.tool_name,
            call.arguments or {},
            tool,
            client,
            self.scope.thread_id,
            self.scope.deps,
        )
        verdict = decide(query, self.policy.approval, self.scope.thread_approvals)
        if verdict.outcome == "not-applicable" and decision is None:
            return []
        call.transition(CallState.APPROVAL_REQUESTED)
        if decision is not None and verdict.outcome != "denied":
            return self._decide(call, decision)
        if verdict.outcome == "user-approval":
            return self._ask(call, tool, verdict.reason)
        automatic = Decision(verdict.outcome == "approved", verdict.reason, automatic=True)
        if call.approval_id is None:
            call.approval_id = new_approval_id()  # never redeemed: only shown to UIs
        call.decision = automatic
        call.transition(CallState.APPROVAL_RESPONDED)
        if not automatic.approved:
            call.fail(Denied(verdict.reason or ""))
        return [
            ApprovalResolved(
                call.id, call.approval_id, automatic.approved, verdict.reason, automatic=True
            )
        ]

    @staticmethod
    def _waiting(call: Call) -> bool:
        return call.state is CallState.APPROVAL_REQUESTED

    def _ask(self, call: Call, tool: Tool, policy_reason: str | None = None) -> list[Event]:
        """Park the call as a pending approval; the run pauses on it. The model's stated
        reason for the call is shown to the human, else the policy's reason for asking."""
        if call.approval_id is None:
            call.approval_id = (
                self.policy.approval_ids(call.id, call.tool_name, call.raw_arguments)
                if self.policy.approval_ids is not None
                else new_approval_id()
            )
        reason = call.meta.get("_reasoningForCall") or policy_reason
        edit_schema = tool.parameters if tool.allow_edits else None
        self.pending.append(
            PendingCall(
                call.id,
                call.tool_name,
                call.raw_arguments,
                "approval",
                call.approval_id,
                reason,
                edit_schema,
            )
        )
        return [
            ApprovalRequested(call.id, call.approval_id, call.tool_name, call.raw_arguments, reason)
        ]

    def _decide(self, call: Call, decision: Decision) -> list[Event]:
        """Apply a human's decision; a denial or a refused edit leaves the call failed.
        An approval ``remember="thread"`` allows the tool for the rest of the thread."""
        call.decision = decision
        call.transition(CallState.APPROVAL_RESPONDED)
        remembered = self.scope.thread_approvals
        if decision.approved and decision.remember == "thread" and remembered is not None:
            remembered.remember(call.tool_name)
        events: list[Event] = [
            ApprovalResolved(call.id, call.approval_id, decision.approved, decision.reason)
        ]
        if not decision.approved:
            call.fail(Denied(decision.reason or ""))
        elif decision.arguments is not None:
            error = self._apply_edit(call, decision.arguments)
            if error is not None:
                call.fail(error)
        return events

    def _apply_edit(self, call: Call, arguments: dict[str, Any]) -> ToolError | None:
        tool = call.tool
        assert tool is not None
        if arguments == call.arguments:
            return None
        if not tool.allow_edits:
            return InvalidArgs(f"{tool.name} does not allow its arguments to be edited")
        try:
            call.validated = tool.validate(arguments)
        except ToolError as exc:
            return exc
        call.proposed = call.arguments
        call.arguments = arguments
        return None

    def _asked(self, call: Call, request: InputRequest) -> Event:
        """A call that asked a human: pending (kind ``input``) until an answer resumes it."""
        arguments = call.raw_arguments
        self.pending.append(
            PendingCall(call.id, call.tool_name, arguments, "input", request=request)
        )
        return InputRequested(call.id, call.tool_name, arguments, request)

    def _finished(self, call: Call) -> list[Event]:
        if call.state is CallState.OUTPUT_ERROR:
            log_failed_call(self.scope, call)
        return [result_event(call), *acts.after_result(call, self.scope.state)]

    # --- running ----------------------------------------------------------------

    def _dataflow_groups(
        self, runnable: list[tuple[Call, Executor]]
    ) -> list[list[tuple[Call, Executor]]]:
        """Groups in dependency order: readers of a path run after its writers."""
        executors = {call.id: executor for call, executor in runnable}
        waiting_ids = {p.call_id for p in self.pending}
        waiting = [call for call in self.calls if call.id in waiting_ids]
        plan = acts.plan([call for call, _ in runnable], self.scope.state, waiting)
        for call, _ in runnable:
            if call.id in plan.errors:
                call.fail(plan.errors[call.id])
        # blocked calls stay open without a result: they run when the run resumes
        groups: list[list[tuple[Call, Executor]]] = []
        for level in plan.levels:
            groups += self._groups([(call, executors[call.id]) for call in level])
        return groups

    def _groups(self, runnable: list[tuple[Call, Executor]]) -> list[list[tuple[Call, Executor]]]:
        groups: list[list[tuple[Call, Executor]]] = []
        size = {"parallel": 0, "sequential": 1}.get(
            self.policy.strategy.kind, self.policy.strategy.size
        )
        current: list[tuple[Call, Executor]] = []
        for item in runnable:
            tool = item[0].tool
            if tool is not None and tool.sequential:
                if current:
                    groups.append(current)
                groups.append([item])
                current = []
                continue
            current.append(item)
            if size and len(current) == size:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        return groups

    def _context(
        self, call: Call, token: CancelToken, put: Callable[[Item], None]
    ) -> ToolContext[DepsT]:
        name = call.tool_name
        scope = self.scope
        answer = self.decisions.get(call.id)
        return ToolContext(
            call.id,
            name,
            token,
            scope,
            call.meta,
            lambda text, fraction: put(ToolProgress(call.id, name, text, fraction)),
            lambda partial: put(ToolPartialOutput(call.id, name, partial)),
            put,
            acts.scope_for(call, scope.state, scope.input_text),
            answer if isinstance(answer, InputAnswer) else None,
            call.decision,
            idempotency_key(scope.thread_id, call.id, call.arguments or {}),
            lambda handle: put(ToolHandleSaved(call.id, name, handle)),
            scope.resumed_handles.get(call.id),
        )

    async def _run_one(
        self,
        call: Call,
        executor: Executor,
        token: CancelToken | None,
        running: RunningGroup,
    ) -> None:
        """Made once the call's start has been yielded and recorded: a journal writes a
        tool's ``started`` row before the tool runs."""
        tool = call.tool
        assert tool is not None
        put = running.put
        stopped = running.stopped
        ctx = self._context(call, token, put) if token is not None else None
        asked: InputRequest | None = None
        try:
            if call.id in stopped:  # stopped before it ran
                raise asyncio.CancelledError
            if call.deferred:
                call.arguments = acts.resolve(
                    call.arguments, self.scope.state, call.meta.get("_instance")
                )
                call.validated = tool.validate(call.arguments)
            if tool.timeout is None:  # the group's timer enforces the default
                value = await executor(call.validated, ctx)
            else:
                try:
                    async with asyncio.timeout(tool.timeout):
                        value = await executor(call.validated, ctx)
                except TimeoutError:
                    if token is not None:
                        token.cancel("timed out")
                    raise TimedOut(tool.timeout) from None
            result = as_result(value, self.policy.max_tool_file_bytes)
            if self.policy.artifacts is not None:
                result = await self.policy.artifacts.offload(
                    result, call.id, call.tool_name, self.scope
                )
            call.succeed(result)
        except InputRequired as exc:  # the call stays open: a human answers, then it goes on
            asked = exc.request
        except ToolError as exc:
            call.fail(exc)
        except asyncio.CancelledError:
            if call.id in stopped:
                call.fail(Cancelled(stopped[call.id]))
            elif call.id in running.timed_out and self.policy.tool_timeout is not None:
                if token is not None:
                    token.cancel("timed out")
                call.fail(TimedOut(self.policy.tool_timeout))
            else:
                call.fail(Cancelled(self.scope.cancel.reason))
        except Exception as exc:  # a raising tool is a result the model sees, never a crash
            call.fail(ToolError(str(exc) or type(exc).__name__))
        finally:
            if token is not None:
                self.scope.cancel.release(token)
        put(Finished(call) if asked is None else Asked(call, asked))
