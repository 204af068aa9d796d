"""The agent loop: steps, stop conditions, pause and resume, limits.

``Agent`` holds the configuration and is safe to share between concurrent runs;
``Run`` is one execution with its own steering queue and cancellation. A run
that needs a human's approval or a front end's result *pauses*: it returns the
pending calls, and a later run resumes from the messages plus the decisions.

Per step the loop does work proportional to what is new in that step: it
appends to the message list, never rescans or copies history.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from ._dataflow import find_refs, instance_path, parse_expr
from .call import (
    ArgumentBuffer,
    Call,
    CallState,
    Cancelled,
    Decision,
    InvalidArgs,
    Skipped,
    ToolError,
    ToolResult,
    split_meta,
)
from .compose import OUTPUT_TOOL, native_tools, output_tool, solution_schema
from .context import CancelToken
from .events import (
    Event,
    ModelResponse,
    PendingCall,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    RunStatus,
    StateDelta,
    StateSnapshot,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolInputError,
)
from .execute import ApprovalIds, StepExecutor, Strategy, as_strategy, result_event
from .messages import (
    AssistantMessage,
    Message,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    as_messages,
)
from .models.base import (
    ErrorPart,
    FinishPart,
    Mode,
    Model,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    ToolChoice,
    Usage,
)
from .state import OUTPUT_METHODS, REF_MARK, RunState, output_targets
from .tool import Tool
from .toolbox import Toolbox

# --- configuration types ----------------------------------------------------------


@dataclass(slots=True)
class StepInfo:
    """What ``prepare_step`` and stop conditions see about the run so far."""

    step: int
    messages: list[Message]
    last_calls: list[Call] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class StepPlan:
    """What ``prepare_step`` may change for one step."""

    active_tools: Sequence[str] | None = None
    tool_choice: ToolChoice | None = None


StopCondition = Callable[[StepInfo], bool]


def step_count_is(n: int) -> StopCondition:
    """Stop after ``n`` steps."""
    return lambda info: info.step >= n


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called ``name``."""
    return lambda info: any(c.tool_name == name for c in info.last_calls)


@dataclass(slots=True)
class Limits:
    max_steps: int = 20  # model calls per run; the last one is offered no tools
    max_tokens: int | None = 1_000_000
    max_duration: float | None = 600.0
    max_identical_calls: int = 3  # consecutive identical calls before a nudge, then a stop
    tool_timeout: float | None = 300.0  # for tools that set no timeout of their own
    max_argument_bytes: int = 1_000_000  # one call's argument JSON
    max_json_depth: int = 32  # nesting of one call's arguments


@dataclass(slots=True)
class _StepOutcome:
    """What a model call ended with, besides its events."""

    usage: Usage = field(default_factory=Usage)
    finish: str = "stop"
    error: RunError | None = None


@dataclass(slots=True)
class RunResult:
    status: RunStatus
    output: Any
    messages: list[Message]
    new_messages: list[Message]
    usage: Usage
    pending: list[PendingCall]
    state: dict[str, Any]
    run_id: str
    thread_id: str
    reason: str | None = None
    error: RunError | None = None


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# --- the agent ----------------------------------------------------------------------


class Agent:
    """An agent: a model, tools, instructions, and how its runs are carried out."""

    def __init__(
        self,
        model: Model | str | None = None,
        tools: Toolbox | Iterable[Tool | Callable[..., Any]] = (),
        *,
        instructions: str | None = None,
        output_type: Any = None,
        strategy: str | Strategy = "parallel",
        stop_when: StopCondition | Sequence[StopCondition] = (),
        max_steps: int = 20,
        limits: Limits | None = None,
        prepare_step: Callable[[StepInfo], StepPlan | None] | None = None,
        on_step_finish: Callable[[StepInfo], None] | None = None,
        mode: Mode | None = None,
        deps: Any = None,
        cancel_grace: float = 5.0,
        max_delegate_depth: int = 3,
    ) -> None:
        self.model = _resolve_model(model)
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self.instructions = instructions
        self.output_type = output_type
        self._output_adapter: TypeAdapter[Any] | None = None
        self.output_schema: dict[str, Any] | None = None
        if output_type is not None and output_type is not str:
            if isinstance(output_type, dict):
                self.output_schema = output_type
            else:
                self._output_adapter = TypeAdapter(output_type)
                self.output_schema = self._output_adapter.json_schema()
        self.strategy = as_strategy(strategy)
        self.stop_when = [stop_when] if callable(stop_when) else list(stop_when)
        self.limits = limits or Limits(max_steps=max_steps)
        self.prepare_step = prepare_step
        self.on_step_finish = on_step_finish
        if mode is not None and mode not in self.model.modes:
            raise ValueError(f"model {self.model.name} does not support {mode} mode")
        self.mode: Mode = mode or self.model.modes[0]
        self.deps = deps
        self.cancel_grace = cancel_grace
        self.max_delegate_depth = max_delegate_depth

    def anonymous_delegate(self) -> Agent:
        """The ``"anonymous"`` delegate: this agent's model, an empty context, no tools."""
        return Agent(self.model, max_delegate_depth=self.max_delegate_depth)

    def tool(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function as a tool of this agent (``@agent.tool``)."""
        from .tool import tool as make_tool

        def register(fn: Callable[..., Any]) -> Tool:
            return self.toolbox.add(make_tool(**options)(fn))

        return register(func) if func is not None else register

    def start(
        self,
        prompt: str | Message | list[Message] | None = None,
        *,
        messages: Sequence[Message] = (),
        decisions: dict[str, Decision] | None = None,
        client_tools: Iterable[Tool] = (),
        allow_client_override: bool = False,
        state: dict[str, Any] | None = None,
        deps: Any = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        approval_ids: ApprovalIds | None = None,
    ) -> Run:
        """Begin a run (or resume one: pass its messages and the decisions).

        ``approval_ids`` makes the ids of approval requests (e.g. signed ones, see
        ``callwright.store.ApprovalSigner``); by default they are random.
        """
        history = list(messages)
        if prompt is not None:
            history += as_messages(prompt)
        if decisions:
            _check_decisions(history, decisions)
        toolbox = self.toolbox
        client_tools = list(client_tools)
        if client_tools:
            toolbox = toolbox.with_client_tools(client_tools, allow_override=allow_client_override)
        return Run(
            self,
            history,
            toolbox=toolbox,
            decisions=decisions or {},
            state=state,
            deps=deps if deps is not None else self.deps,
            run_id=run_id or _new_id("run"),
            thread_id=thread_id or _new_id("thread"),
            new_from=len(messages),
            approval_ids=approval_ids,
        )

    def stream(
        self, prompt: str | Message | list[Message] | None = None, **options: Any
    ) -> AsyncIterator[Event]:
        """The canonical events of a new run."""
        return self.start(prompt, **options).events()

    async def run(
        self, prompt: str | Message | list[Message] | None = None, **options: Any
    ) -> RunResult:
        """Run to completion (or to a pause) and return the result."""
        run = self.start(prompt, **options)
        async for _ in run.events():
            pass
        assert run.result is not None
        return run.result


def _check_decisions(history: list[Message], decisions: dict[str, Decision]) -> None:
    """A decision must answer a call of the last assistant message that has no result."""
    open_ids: set[str] = set()
    for i in range(len(history) - 1, -1, -1):
        message = history[i]
        if isinstance(message, AssistantMessage):
            answered = {m.call_id for m in history[i + 1 :] if isinstance(m, ToolResultMessage)}
            open_ids = {p.id for p in message.tool_calls if p.id not in answered}
            break
    unknown = sorted(set(decisions) - open_ids)
    if unknown:
        raise ValueError(
            f"decisions for calls that are not waiting: {', '.join(unknown)} "
            "(a decision answers a call of the last assistant message without a result)"
        )


def _resolve_model(model: Model | str | None) -> Model:
    if model is None or isinstance(model, str):
        from .models import resolve_model

        return resolve_model(model)
    return model


# --- one run -------------------------------------------------------------------------


class Run:
    """One execution of an agent. Iterate ``events()`` once; steer or cancel meanwhile."""

    def __init__(
        self,
        agent: Agent,
        messages: list[Message],
        *,
        toolbox: Toolbox,
        decisions: dict[str, Decision],
        state: dict[str, Any] | None,
        deps: Any,
        run_id: str,
        thread_id: str,
        new_from: int,
        approval_ids: ApprovalIds | None = None,
    ) -> None:
        self.agent = agent
        self.approval_ids = approval_ids
        self.messages = messages
        self.toolbox = toolbox
        self.decisions = decisions
        self.state = RunState(copy.deepcopy(state) if state is not None else {})
        self._state_given = state is not None
        self.deps = deps
        self.run_id = run_id
        self.thread_id = thread_id
        self.cancel_token = CancelToken()
        self.depth = 0  # how deep in delegation this run is
        self.usage = Usage()
        self.result: RunResult | None = None
        self._new_from = new_from
        self._steering: deque[Message] = deque()
        self._follow_ups: deque[Message] = deque()
        self._streak_call: tuple[str, dict[str, Any]] | None = None
        self._streak = 0
        self._nudged: set[str] = set()
        self._nudges: list[Message] = []
        self._instances: list[str] = []  # the state's instances, as of this step's request
        self._composed: tuple[Any, list[dict[str, Any]] | dict[str, Any]] | None = None
        self._output: Any = None
        self._has_output = False
        self._started = time.monotonic()

    # --- control from outside ---------------------------------------------------------

    def steer(self, message: str | Message) -> None:
        """Interrupt: delivered before the next model call; later sequential calls are skipped."""
        self._steering.extend(as_messages(message))

    def follow_up(self, message: str | Message) -> None:
        """Delivered after the agent would otherwise have stopped."""
        self._follow_ups.extend(as_messages(message))

    def cancel(self, reason: str = "cancelled") -> None:
        self.cancel_token.cancel(reason)

    # --- the loop ----------------------------------------------------------------------

    async def events(self) -> AsyncIterator[Event]:
        agent = self.agent
        yield RunStarted(self.run_id, self.thread_id)
        if self._state_given:
            yield StateSnapshot(copy.deepcopy(self.state.data))
        pending: list[PendingCall] = []
        status: RunStatus = "completed"
        reason: str | None = None
        error: RunError | None = None
        step = 0
        try:
            open_calls = self._open_calls()
            if open_calls:
                executor = self._executor(open_calls)
                async for event in executor.run():
                    yield event
                self._append_results(open_calls, resumed=True)
                pending = executor.pending
            while not pending:
                if self.cancel_token.is_cancelled():
                    status = "cancelled"
                    break
                self._take_steering()
                if (why := self._limit_reached()) is not None:
                    status, reason = "stopped", why
                    break
                step += 1
                last_step = step >= agent.limits.max_steps
                calls: list[Call] = []
                message_id = _new_id("msg")
                yield StepStarted(step, message_id)
                outcome = _StepOutcome()
                async for event in self._model_step(step, message_id, last_step, calls, outcome):
                    yield event
                step_usage, finish, error = outcome.usage, outcome.finish, outcome.error
                if error is not None:
                    status = "error"
                    self._cancel_unfinished(calls, "the model call failed")
                    for call in calls:
                        yield result_event(call)
                    self._append_results(calls)
                    yield StepFinished(step, message_id, "error", step_usage)
                    break
                if self.cancel_token.is_cancelled():
                    self._cancel_unfinished(calls, self.cancel_token.reason)
                aborted = self._detect_loop(calls)
                executor = self._executor(calls)
                async for event in executor.run():
                    yield event
                self._append_results(calls)
                self.messages.extend(self._nudges)
                self._nudges.clear()
                pending = executor.pending
                if aborted:
                    status, reason = "stopped", aborted
                info = StepInfo(step, self.messages, calls, self.usage)
                yield StepFinished(step, message_id, finish, step_usage)
                if agent.on_step_finish is not None:
                    agent.on_step_finish(info)
                if pending or aborted:
                    break
                if self.cancel_token.is_cancelled():
                    status = "cancelled"
                    break
                if self._has_output:
                    break
                if calls and any(cond(info) for cond in agent.stop_when):
                    break
                if last_step and calls:
                    status, reason = "stopped", f"step limit reached ({agent.limits.max_steps})"
                    break
                if not calls and not self._steering:
                    if self._follow_ups:
                        self.messages.append(self._follow_ups.popleft())
                        continue
                    break
        except Exception as exc:  # a bug or a provider failure ends the run with an error event
            status = "error"
            error = RunError(f"{type(exc).__name__}: {exc}", "internal_error")
        except (GeneratorExit, asyncio.CancelledError):
            # closed early by the consumer: let running tools know, then unwind
            self.cancel_token.cancel("the run was closed")
            raise
        if pending and status == "completed":
            status = "paused"
        output = self._output if self._has_output else self._final_text()
        self.result = RunResult(
            status=status,
            output=output if status in ("completed", "stopped") else None,
            messages=self.messages,
            new_messages=self.messages[self._new_from :],
            usage=self.usage,
            pending=pending,
            state=self.state.data,
            run_id=self.run_id,
            thread_id=self.thread_id,
            reason=reason,
            error=error,
        )
        if error is not None:
            yield error
            return
        yield RunFinished(
            self.run_id,
            self.thread_id,
            status,
            self.result.output,
            pending,
            self.usage,
            reason,
        )

    # --- one model call ------------------------------------------------------------------

    def _request(self, step: int, last_step: bool) -> ModelRequest:
        agent = self.agent
        plan = agent.prepare_step(StepInfo(step, self.messages)) if agent.prepare_step else None
        active = self.toolbox.select(plan.active_tools if plan else None)
        choice: ToolChoice = plan.tool_choice if plan and plan.tool_choice else "auto"
        if last_step:
            active, choice = [], "none"
        request = ModelRequest(
            self.messages,
            agent.instructions,
            agent.mode,
            tool_choice=choice,
            output_schema=agent.output_schema,
            cancel=self.cancel_token,
            step=step,
        )
        instances = self._instances = self.state.instance_ids()
        key = (self.toolbox.version, tuple(t.name for t in active), tuple(instances))
        if self._composed is None or self._composed[0] != key:
            self._composed = (key, self._compose(active, instances))
        composed = self._composed[1]
        if isinstance(composed, list):
            request.tools = list(composed)
        else:
            request.solution_schema = composed
        return request

    def _compose(
        self, active: list[Tool], instances: list[str]
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """What the model is shown; cached between steps while tools and instances stay."""
        agent = self.agent
        if agent.mode == "native":
            tools = native_tools(active, self.toolbox, instances)
            if agent.output_schema is not None:
                tools.append(output_tool(agent.output_schema))
            return tools
        return solution_schema(active, self.toolbox, agent.output_schema, instances=instances)

    async def _model_step(
        self,
        step: int,
        message_id: str,
        last_step: bool,
        calls: list[Call],
        outcome: _StepOutcome,
    ) -> AsyncIterator[Event]:
        """Stream one model response as canonical events; fills ``calls`` and ``outcome``."""
        request = self._request(step, last_step)
        text_parts: list[str] = []
        reasoning_parts: list[str] = []
        by_id: dict[str, Call] = {}
        open_text: str | None = None
        open_reasoning: str | None = None
        segments = 0
        cancel = self.cancel_token
        stream = self.agent.model.stream(request)
        try:
            async for part in stream:
                if isinstance(part, ToolCallDeltaPart):
                    call = by_id[part.call_id]
                    call.buffer.append(part.delta)
                    yield ToolCallArgs(part.call_id, part.delta)
                    if call.tool is not None and call.tool.on_input_delta is not None:
                        call.tool.on_input_delta(call, part.delta)
                elif isinstance(part, TextPart):
                    if open_reasoning is not None:
                        yield ReasoningEnd(open_reasoning)
                        open_reasoning = None
                    if open_text is None:
                        open_text = message_id if segments == 0 else f"{message_id}_{segments}"
                        segments += 1
                        yield TextStart(message_id, open_text)
                    text_parts.append(part.delta)
                    yield TextDelta(open_text, part.delta)
                elif isinstance(part, ReasoningPart):
                    if open_text is not None:
                        yield TextEnd(open_text)
                        open_text = None
                    if open_reasoning is None:
                        open_reasoning = f"{message_id}_r{len(reasoning_parts)}"
                        yield ReasoningStart(message_id, open_reasoning)
                    reasoning_parts.append(part.delta)
                    yield ReasoningDelta(open_reasoning, part.delta)
                elif isinstance(part, ToolCallStartPart):
                    if open_text is not None:
                        yield TextEnd(open_text)
                        open_text = None
                    if open_reasoning is not None:
                        yield ReasoningEnd(open_reasoning)
                        open_reasoning = None
                    tool = self.toolbox.get(part.name)
                    call = Call(part.call_id, part.name, len(calls), tool, message_id=message_id)
                    calls.append(call)
                    by_id[part.call_id] = call
                    client = tool is not None and tool.client
                    yield ToolCallStart(
                        part.call_id, part.name, message_id, tool.title if tool else None, client
                    )
                    if tool is not None and tool.on_input_start is not None:
                        tool.on_input_start(call)
                elif isinstance(part, ToolCallEndPart):
                    yield self._complete_input(by_id[part.call_id])
                elif isinstance(part, FinishPart):
                    self.usage.add(part.usage)
                    outcome.usage, outcome.finish = part.usage, part.reason
                elif isinstance(part, ErrorPart):
                    outcome.error = RunError(part.message, part.code)
                if cancel.is_cancelled():
                    break
        finally:
            await _aclose(stream)
        if open_text is not None:
            yield TextEnd(open_text)
        if open_reasoning is not None:
            yield ReasoningEnd(open_reasoning)
        for call in calls:
            if call.state is CallState.INPUT_STREAMING:
                yield self._complete_input(call)
        reply = AssistantMessage(
            "".join(text_parts),
            [ToolCallPart(c.id, c.tool_name, c.raw_arguments) for c in calls],
            "".join(reasoning_parts),
            message_id,
        )
        self.messages.append(reply)
        yield ModelResponse(step, reply)

    def _complete_input(self, call: Call) -> Event:
        """Parse and validate the finished arguments: input-available, or an input error."""
        try:
            limits = self.agent.limits
            text = call.buffer.text
            if len(text) > limits.max_argument_bytes:
                raise InvalidArgs(f"arguments exceed {limits.max_argument_bytes} bytes")
            parsed = call.buffer.parse()
            brackets = text.count("{") + text.count("[")  # an upper bound of the depth, in C
            if brackets > limits.max_json_depth and json_depth(parsed) > limits.max_json_depth:
                raise InvalidArgs(f"arguments nest deeper than {limits.max_json_depth} levels")
            if not isinstance(parsed, dict):
                raise InvalidArgs("arguments must be a JSON object")
            # no '"_' in the text: no meta keys, skip the split (the common case)
            params, meta = split_meta(parsed) if '"_' in text else (parsed, {})
            call.meta = meta
            call.arguments = params
            tool = call.tool
            if call.tool_name == OUTPUT_TOOL and tool is None and self.agent.output_schema:
                self._accept_output(call, parsed)
            elif tool is not None:
                if tool.meta:
                    call.meta = {**meta, **tool.fixed_meta()}
                maybe_refs = REF_MARK in text or "\\u2020" in text  # † or its JSON escape
                has_refs = maybe_refs and any(True for _ in find_refs(params))
                if call.meta or has_refs or self._instances:
                    self._check_meta(call, tool, has_refs)
                if has_refs:
                    call.deferred = True  # validated when the references are resolved
                else:
                    call.validated = tool.validate(params)
        except ToolError as exc:
            call.fail(exc)
            return ToolInputError(call.id, call.tool_name, call.buffer.partial(), exc.model_text())
        if call.state is CallState.INPUT_STREAMING:
            call.transition(CallState.INPUT_AVAILABLE)
        tool = call.tool
        if tool is not None and tool.on_input_available is not None:
            tool.on_input_available(call)
        return ToolCallEnd(
            call.id, call.tool_name, call.raw_arguments, bool(tool is not None and tool.client)
        )

    def _check_meta(self, call: Call, tool: Tool, has_refs: bool) -> None:
        """Model-chosen meta must fit the blueprint, name a known instance, and a usable path."""
        tool.validate_meta(call.meta)
        _check_output_path(call.meta)
        instances = self._instances
        instance = call.meta.get("_instance")
        if instances and instance not in instances:
            raise InvalidArgs(f"_instance must be one of {', '.join(instances)}")
        if not instances and instance is not None:
            raise InvalidArgs("_instance given but the state holds no instances")
        path = call.meta.get("_outputPath")
        if isinstance(path, str) and "||" in path and self.toolbox.kind(tool) == "latent":
            raise InvalidArgs("_outputPath: choose one of the alternatives, not all of them")
        for text in find_refs(call.arguments or {}) if has_refs else ():
            try:
                parse_expr(text)
            except ValueError as exc:
                raise InvalidArgs(str(exc)) from None

    def _accept_output(self, call: Call, value: dict[str, Any]) -> None:
        adapter = self.agent._output_adapter
        try:
            output = adapter.validate_python(value) if adapter is not None else value
        except PydanticValidationError as exc:
            raise InvalidArgs(str(exc)) from None
        call.transition(CallState.INPUT_AVAILABLE)
        call.succeed(ToolResult("Final result accepted."))
        self._output, self._has_output = output, True

    # --- executing and recording ---------------------------------------------------------

    def _executor(self, calls: list[Call]) -> StepExecutor:
        return StepExecutor(
            calls,
            self.toolbox,
            strategy=self.agent.strategy,
            cancel=self.cancel_token,
            state=self.state,
            deps=self.deps,
            decisions=self.decisions,
            steering=lambda: bool(self._steering),
            on_result=self._write_output_path,
            cancel_grace=self.agent.cancel_grace,
            run=self,
            default_timeout=self.agent.limits.tool_timeout,
            approval_ids=self.approval_ids,
        )

    def _write_output_path(self, call: Call) -> list[Event]:
        """Store a successful result at the call's ``_outputPath``, as a state delta.

        An activity may instead return an Acts data message
        (``{"type": "data", "kind": "state", "data": {...}}``) to choose where its
        result goes, e.g. the failure branch of ``†state.ok || †state.missing``.
        """
        if call.result is None or not (call.meta or isinstance(call.result.content, dict)):
            return []
        instance = call.meta.get("_instance")
        content = call.result.content
        patch: list[dict[str, Any]] = []
        if _is_data_message(content):
            for key, value in content["data"].items():
                patch += self.state.write(instance_path((key,), instance), value, "merge")
            return [StateDelta(patch)] if patch else []
        path = call.meta.get("_outputPath")
        if not path or not isinstance(path, str):
            return []
        method = call.meta.get("_outputMethod", "set")
        for ref in output_targets(path)[0]:  # a plain value goes to the first alternative
            patch += self.state.write(instance_path(ref.path, instance), content, method)
        return [StateDelta(patch)]

    def _append_results(self, calls: list[Call], *, resumed: bool = False) -> None:
        """Add each finished call's result in call order (the model's order)."""
        results = [
            ToolResultMessage(c.id, c.tool_name, c.model_text(), c.error is not None)
            for c in calls
            if c.done
        ]
        if not resumed:
            self.messages.extend(results)
            return
        # Resuming: results already in history and the new ones, re-sorted into call order.
        index = self._last_assistant_index()
        assistant = self.messages[index]
        assert isinstance(assistant, AssistantMessage)
        order = {part.id: i for i, part in enumerate(assistant.tool_calls)}
        tail = self.messages[index + 1 :]
        existing = [m for m in tail if isinstance(m, ToolResultMessage)]
        others = [m for m in tail if not isinstance(m, ToolResultMessage)]
        merged = sorted([*existing, *results], key=lambda m: order.get(m.call_id, len(order)))
        self.messages[index + 1 :] = [*merged, *others]

    def _cancel_unfinished(self, calls: list[Call], reason: str) -> None:
        for call in calls:
            if call.done:
                continue
            if call.state is CallState.INPUT_STREAMING:
                call.transition(CallState.INPUT_AVAILABLE)
            call.fail(Cancelled(reason))

    # --- resuming --------------------------------------------------------------------------

    def _last_assistant_index(self) -> int:
        for i in range(len(self.messages) - 1, -1, -1):
            if isinstance(self.messages[i], AssistantMessage):
                return i
        return -1

    def _open_calls(self) -> list[Call]:
        """Calls of the last assistant message that have no result yet."""
        index = self._last_assistant_index()
        if index < 0:
            return []
        message = self.messages[index]
        assert isinstance(message, AssistantMessage)
        answered = {
            m.call_id for m in self.messages[index + 1 :] if isinstance(m, ToolResultMessage)
        }
        interrupted = any(not isinstance(m, ToolResultMessage) for m in self.messages[index + 1 :])
        calls = []
        for i, part in enumerate(message.tool_calls):
            if part.id in answered:
                continue
            tool = self.toolbox.get(part.name)
            call = Call(part.id, part.name, i, tool, CallState.INPUT_AVAILABLE)
            call.buffer = ArgumentBuffer(json.dumps(part.arguments))
            call.arguments, call.meta = split_meta(part.arguments)
            if tool is not None and tool.meta:
                call.meta = {**call.meta, **tool.fixed_meta()}
            if interrupted:
                call.fail(Skipped("Not executed: the user sent a new message instead."))
            elif tool is not None and any(True for _ in find_refs(call.arguments)):
                call.deferred = True
            elif tool is not None:
                try:
                    call.validated = tool.validate(call.arguments)
                except ToolError as exc:
                    call.fail(exc)
            calls.append(call)
        return calls

    # --- limits, steering, loops --------------------------------------------------------

    def _take_steering(self) -> None:
        while self._steering:
            self.messages.append(self._steering.popleft())

    def _limit_reached(self) -> str | None:
        limits = self.agent.limits
        if limits.max_tokens is not None and self.usage.total_tokens >= limits.max_tokens:
            return f"token limit reached ({limits.max_tokens})"
        if (
            limits.max_duration is not None
            and time.monotonic() - self._started >= limits.max_duration
        ):
            return f"time limit reached ({limits.max_duration:g}s)"
        return None

    def _detect_loop(self, calls: list[Call]) -> str | None:
        """Count consecutive identical calls: nudge at the threshold, stop the second time.

        Identical means the same tool and equal argument values (key order does
        not matter), compared with the previous call only: O(1) per call.
        """
        threshold = self.agent.limits.max_identical_calls
        if threshold <= 0 or not calls:
            return None
        for call in calls:
            if call.done:
                continue
            current = (call.tool_name, call.raw_arguments)
            if current == self._streak_call:
                self._streak += 1
            else:
                self._streak_call, self._streak = current, 1
            if self._streak < threshold:
                continue
            self._streak = 0
            signature = call.tool_name + json.dumps(call.raw_arguments, sort_keys=True)
            if signature not in self._nudged:
                self._nudged.add(signature)
                self._nudges.append(
                    UserMessage(
                        f"[You have called {call.tool_name} {threshold} times with identical "
                        "arguments. Use the results you have, try something different, or answer.]"
                    )
                )
                continue
            why = f"repeated tool call: {call.tool_name} with identical arguments"
            for other in calls:
                if not other.done:
                    other.fail(ToolError(f"Not executed: {why}."))
            return why
        return None

    def input_text(self) -> str:
        """The run's first user message: what `_scopes: ["input"]` hands on."""
        for message in self.messages:
            if isinstance(message, UserMessage):
                return message.content
        return ""

    def _final_text(self) -> str | None:
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return None


def json_depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    depth = 0
    level = [value]
    while level:
        containers = [v for v in level if isinstance(v, dict | list)]
        if not containers:
            break
        depth += 1
        level = [child for v in containers for child in (v.values() if isinstance(v, dict) else v)]
    return depth


def _is_data_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "data"
        and value.get("kind", "state") == "state"
        and isinstance(value.get("data"), dict)
    )


def _check_output_path(meta: dict[str, Any]) -> None:
    """Reject an unusable ``_outputPath`` or ``_outputMethod`` before anything runs."""
    path = meta.get("_outputPath")
    if path is None:
        return
    if not isinstance(path, str):
        raise InvalidArgs("_outputPath must be a string")
    try:
        output_targets(path)
    except ValueError as exc:
        raise InvalidArgs(str(exc)) from None
    method = meta.get("_outputMethod", "set")
    if method not in OUTPUT_METHODS:
        raise InvalidArgs(f"_outputMethod must be one of {', '.join(OUTPUT_METHODS)}")


async def _aclose(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
