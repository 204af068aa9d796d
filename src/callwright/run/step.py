"""One model turn: prepare the request, stream the response into calls and events.

A :class:`ModelTurn` takes the request and what it needs to judge the calls (the
toolbox, the limits, the output spec, the state's instances) and returns a
:class:`TurnOutcome` once its events are drained; it never touches the run.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from .. import acts
from ..call import OUTPUT_TOOL, Call, CallState, InvalidArgs, ToolError, ToolResult
from ..compose import native_tools, output_tool, solution_schema
from ..context import CancelToken
from ..events import (
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolInputError,
)
from ..messages import AssistantMessage, Message, ToolCallPart
from ..models.base import (
    ErrorPart,
    FinishPart,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    ToolChoice,
)
from ..tool import Tool
from ..toolbox import Toolbox
from ..usage import Usage
from ._types import Limits, OutputSpec, RunSettings, StepInfo, new_id

_SENDABLE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""The call ids both wires take back from a client (``wire._common.client_id``)."""


class Composer:
    """What the model is shown, cached between steps while the tools and instances stay."""

    def __init__(self, settings: RunSettings, toolbox: Toolbox) -> None:
        self._settings = settings
        self._toolbox = toolbox
        self._key: tuple[Any, ...] | None = None
        self._composed: list[dict[str, Any]] | dict[str, Any] = []

    def request(
        self,
        messages: list[Message],
        step: int,
        last_step: bool,
        instances: list[str],
        cancel: CancelToken,
    ) -> ModelRequest:
        """The request of one step; the last step is offered no tools."""
        settings = self._settings
        plan = settings.prepare_step(StepInfo(step, messages)) if settings.prepare_step else None
        active = self._toolbox.select(plan.active_tools if plan else None)
        choice: ToolChoice = (
            (plan.tool_choice if plan and plan.tool_choice else None)
            or settings.model_settings.tool_choice
            or "auto"
        )
        if last_step:
            active, choice = [], "none"
        request = ModelRequest(
            messages,
            settings.instructions,
            settings.mode,
            tool_choice=choice,
            output_schema=settings.output.schema,
            cancel=cancel,
            step=step,
            settings=settings.model_settings,
        )
        key = (self._toolbox.version, tuple(t.name for t in active), tuple(instances))
        if self._key != key:
            self._key, self._composed = key, self._compose(active, instances)
        if isinstance(self._composed, list):
            request.tools = list(self._composed)
        else:
            request.solution_schema = self._composed
        return request

    def _compose(
        self, active: list[Tool], instances: list[str]
    ) -> list[dict[str, Any]] | dict[str, Any]:
        output_schema = self._settings.output.schema
        if self._settings.mode == "native":
            tools = native_tools(active, self._toolbox, instances)
            if output_schema is not None:
                tools.append(output_tool(output_schema))
            return tools
        return solution_schema(active, self._toolbox, output_schema, instances=instances)


@dataclass(slots=True)
class TurnOutcome:
    """What one model turn produced besides its events."""

    reply: AssistantMessage
    """The assistant message to append to the history."""
    calls: list[Call] = field(default_factory=list)
    """The calls, in the model's order (some may already have failed validation)."""
    usage: Usage = field(default_factory=Usage)
    finish: str = "stop"
    error: RunError | None = None
    """A provider error that ended the turn (or a reply past ``Limits.max_reply_chars``)."""
    stopped: str | None = None
    """Why the turn was cut short without an error: the run's time limit."""
    output: Any = None
    has_output: bool = False
    """Whether the model handed over a valid structured output."""


class ModelTurn:
    """Streams one model response as canonical events; ``outcome`` is set once drained.

    ``used_ids``: the call ids the conversation already has (a call whose id repeats one
    of them, or one of this turn's, gets a fresh id). ``deadline``: the ``time.monotonic()``
    at which the run's time limit ends the stream, even mid-reply or while the model is
    silent.
    """

    def __init__(
        self,
        model: Model,
        request: ModelRequest,
        *,
        toolbox: Toolbox,
        limits: Limits,
        output: OutputSpec,
        instances: Sequence[str],
        step: int,
        message_id: str,
        used_ids: Set[str] = frozenset(),
        deadline: float | None = None,
    ) -> None:
        self._model = model
        self._request = request
        self._toolbox = toolbox
        self._limits = limits
        self._output = output
        self._instances = instances
        self.step = step
        self.message_id = message_id
        self.outcome = TurnOutcome(AssistantMessage(id=message_id))
        self._used_ids = used_ids
        self._deadline = deadline
        self._size = 0
        """Characters of text, reasoning and arguments streamed so far."""
        self._calls: dict[str, Call] = {}
        self._ids: dict[str, str] = {}
        """The model's call ids -> the calls' own (a fresh one where the model repeated one)."""
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._open_text: str | None = None
        self._open_reasoning: str | None = None
        self._segments = 0
        self._blocks: dict[str, list[dict[str, Any]]] = {}

    async def events(self) -> AsyncIterator[Event]:
        cancel = self._request.cancel
        stream = self._model.stream(self._request)
        watch = _Watch(self._deadline)
        most = self._limits.max_reply_chars
        try:
            while not watch.expired:
                watch.waiting = True
                try:
                    part = await anext(stream)
                except StopAsyncIteration:
                    break
                except asyncio.CancelledError:
                    if not watch.absorb():
                        raise
                    break
                finally:
                    watch.waiting = False
                # the per-token parts first, without a list per part
                if isinstance(part, TextPart) and self._open_text is not None:
                    self._size += len(part.delta)
                    self._text.append(part.delta)
                    yield TextDelta(self._open_text, part.delta)
                elif isinstance(part, ToolCallDeltaPart):
                    self._size += len(part.delta)
                    yield self._on_args(part)
                else:
                    for event in self._on_part(part):
                        yield event
                if self._size > most:
                    self.outcome.error = RunError(
                        f"the model's reply exceeded {most:,} characters (Limits.max_reply_chars)",
                        "reply_too_large",
                    )
                    break
                if watch.expired or (cancel is not None and cancel.is_cancelled()):
                    break
        finally:
            watch.close()
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        if watch.expired and self.outcome.error is None:
            self.outcome.stopped = f"time limit reached ({self._limits.max_duration:g}s)"
        for end in self._close_text(), self._close_reasoning():
            if end is not None:
                yield end
        calls = list(self._calls.values())
        for call in calls:
            if call.state is CallState.INPUT_STREAMING:
                yield self._complete_input(call)
        self.outcome.calls = calls
        self.outcome.reply = AssistantMessage(
            "".join(self._text),
            [ToolCallPart(c.id, c.tool_name, c.raw_arguments) for c in calls],
            "".join(self._reasoning),
            self.message_id,
            self._blocks,
        )

    def _on_args(self, part: ToolCallDeltaPart) -> Event:
        call = self._calls[self._ids[part.call_id]]
        call.buffer.append(part.delta)
        if call.tool is not None and call.tool.on_input_delta is not None:
            call.tool.on_input_delta(call, part.delta)
        return ToolCallArgs(call.id, part.delta)

    def _on_part(self, part: ModelEvent) -> list[Event]:
        if isinstance(part, ToolCallStartPart):
            return self._on_call_start(part)
        if isinstance(part, ToolCallEndPart):
            return [self._complete_input(self._calls[self._ids[part.call_id]])]
        if isinstance(part, TextPart):
            return self._on_text(part.delta)
        if isinstance(part, ReasoningPart):
            return self._on_reasoning(part.delta)
        if isinstance(part, FinishPart):
            self._blocks = part.provider_blocks or self._blocks
            self.outcome.usage, self.outcome.finish = part.usage, part.reason
        elif isinstance(part, ErrorPart):
            self.outcome.error = RunError(part.message, part.code)
        return []

    def _on_text(self, delta: str) -> list[Event]:
        events: list[Event] = []
        if (end := self._close_reasoning()) is not None:
            events.append(end)
        if self._open_text is None:
            base = self.message_id
            self._open_text = base if self._segments == 0 else f"{base}_{self._segments}"
            self._segments += 1
            events.append(TextStart(base, self._open_text))
        self._size += len(delta)
        self._text.append(delta)
        events.append(TextDelta(self._open_text, delta))
        return events

    def _on_reasoning(self, delta: str) -> list[Event]:
        events: list[Event] = []
        if (end := self._close_text()) is not None:
            events.append(end)
        if self._open_reasoning is None:
            self._open_reasoning = f"{self.message_id}_r{len(self._reasoning)}"
            events.append(ReasoningStart(self.message_id, self._open_reasoning))
        self._size += len(delta)
        self._reasoning.append(delta)
        events.append(ReasoningDelta(self._open_reasoning, delta))
        return events

    def _on_call_start(self, part: ToolCallStartPart) -> list[Event]:
        events: list[Event] = []
        if self._open_text is not None or self._open_reasoning is not None:
            events += [e for e in (self._close_text(), self._close_reasoning()) if e is not None]
        tool = self._toolbox.get(part.name)
        call_id = part.call_id
        if call_id in self._calls or call_id in self._used_ids or not _SENDABLE.fullmatch(call_id):
            # a repeated id would answer two calls with one result, and one a client cannot
            # send back (``call 1``) would end the conversation: this one gets its own
            call_id = new_id("call")
        self._ids[part.call_id] = call_id
        call = Call(call_id, part.name, len(self._calls), tool, message_id=self.message_id)
        self._calls[call_id] = call
        client = tool is not None and tool.client
        title = tool.title if tool else None
        events.append(ToolCallStart(call_id, part.name, self.message_id, title, client))
        if tool is not None and tool.on_input_start is not None:
            tool.on_input_start(call)
        return events

    def _close_text(self) -> Event | None:
        open_text, self._open_text = self._open_text, None
        return TextEnd(open_text) if open_text is not None else None

    def _close_reasoning(self) -> Event | None:
        open_reasoning, self._open_reasoning = self._open_reasoning, None
        return ReasoningEnd(open_reasoning) if open_reasoning is not None else None

    def _complete_input(self, call: Call) -> Event:
        """Parse and check the finished arguments: input-available, or an input error."""
        try:
            text = call.buffer.text
            parsed = parse_arguments(call, self._limits)
            if call.tool_name == OUTPUT_TOOL and call.tool is None and self._output.schema:
                self._accept_output(call, parsed)
            else:
                acts.complete_input(call, parsed, text, self._toolbox, self._instances)
        except ToolError as exc:
            call.fail(exc)
            return ToolInputError(call.id, call.tool_name, call.buffer.partial(), exc.model_text())
        if call.state is CallState.INPUT_STREAMING:
            call.transition(CallState.INPUT_AVAILABLE)
        tool = call.tool
        if tool is not None and tool.on_input_available is not None:
            tool.on_input_available(call)
        client = bool(tool is not None and tool.client)
        return ToolCallEnd(call.id, call.tool_name, call.raw_arguments, client)

    def _accept_output(self, call: Call, value: dict[str, Any]) -> None:
        call.arguments = value
        adapter = self._output.adapter
        try:
            output = adapter.validate_python(value) if adapter is not None else value
        except PydanticValidationError as exc:
            raise InvalidArgs(str(exc)) from None
        call.transition(CallState.INPUT_AVAILABLE)
        call.succeed(ToolResult("Final result accepted."))
        self.outcome.output, self.outcome.has_output = output, True


def parse_arguments(call: Call, limits: Limits) -> dict[str, Any]:
    """The call's complete argument JSON as an object, within the size and depth limits."""
    text = call.buffer.text
    if len(text) > limits.max_argument_bytes:
        raise InvalidArgs(f"arguments exceed {limits.max_argument_bytes} bytes")
    parsed = call.buffer.parse()
    brackets = text.count("{") + text.count("[")  # an upper bound of the depth, in C
    if brackets > limits.max_json_depth and json_depth(parsed) > limits.max_json_depth:
        raise InvalidArgs(f"arguments nest deeper than {limits.max_json_depth} levels")
    if not isinstance(parsed, dict):
        raise InvalidArgs("arguments must be a JSON object")
    return parsed


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


class _Watch:
    """The run's time limit over one model stream: one timer for the whole turn (a
    timeout around each part would cost more than the part). When it fires while the
    task waits for the model (``waiting``), it cancels that wait; otherwise the turn
    sees ``expired`` after the part at hand."""

    def __init__(self, deadline: float | None) -> None:
        self.expired = False
        self.waiting = False
        self._task = asyncio.current_task()
        self._timer: asyncio.TimerHandle | None = None
        if deadline is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, deadline - time.monotonic())
            self._timer = loop.call_at(loop.time() + delay, self._fire)

    def _fire(self) -> None:
        self.expired = True
        if self.waiting and self._task is not None:
            self._task.cancel("the run's time limit")

    def absorb(self) -> bool:
        """Whether a cancellation of the wait was this timer's alone (then it is undone)."""
        return self.expired and self._task is not None and self._task.uncancel() == 0

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
