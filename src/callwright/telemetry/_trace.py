"""The spans of one run segment: ``invoke_agent``, a ``chat`` per model turn, an
``execute_tool`` per call, and what happened on the way as span events.

A :class:`RunTrace` reads the run's canonical events as they pass (``observe``) and
wraps the model's stream (``model``); the executor asks it for each call's context
(``tool_context``) so that the call's span is the *current* span inside the call's
own task: user code, a delegate's sub-run and anything instrumented underneath
(HTTP clients, MCP) nest under it. Spans are never made current in a generator
(a generator's context outlives its frames in ways ``detach`` cannot follow): the
run and chat spans are parents by explicit context, and a chat span is current
only while the model's first chunk is awaited, which is when its request goes out.

A resumed segment starts a new trace linked to the segment that paused: the paused
span's context is kept per (thread, call) in this process, handed out as a W3C
``traceparent`` on each ``PendingCall``, and accepted back as a run option
(``Agent.start(traceparent=...)``) where the pause and the resume are in different
processes.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    RunError,
    RunFinished,
    ToolCallResult,
    ToolProgress,
)
from ..messages import AssistantMessage
from ..models.base import ErrorPart, FinishPart, ModelEvent, ModelRequest
from . import _instruments as names

if TYPE_CHECKING:
    from ..call import Call
    from ..messages import Message
    from ..models.base import Mode, Model
    from ._instruments import Hub

_PROPAGATOR = TraceContextTextMapPropagator()
_PAUSED_MAX = 4096
_paused: OrderedDict[tuple[str, str], SpanContext] = OrderedDict()
"""The span of each segment that paused, by (thread id, pending call id): its resume links
to it. Bounded: the oldest go first."""

_INTERRUPTING = {
    "cancelled": "cancelled",
    "interrupted": "interrupted",
    "in-doubt": "in_doubt",
    "timed-out": "timed_out",
}


def model_identity(name: str) -> tuple[str, str]:
    """(``gen_ai.provider.name``, ``gen_ai.request.model``) from ``provider:model``."""
    provider, sep, model = name.partition(":")
    if not sep:
        return "callwright", name
    if provider == "local":
        return "llama_cpp", model
    return provider, model


def format_traceparent(context: SpanContext) -> str:
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, trace.set_span_in_context(trace.NonRecordingSpan(context)))
    return carrier.get("traceparent", "")


def parse_traceparent(value: str) -> SpanContext | None:
    """The span context a W3C ``traceparent`` names, or None if it names none."""
    context = _PROPAGATOR.extract({"traceparent": value})
    span_context = trace.get_current_span(context).get_span_context()
    return span_context if span_context.is_valid else None


class RunTrace:
    """The tracing of one run segment (made only when tracing is on)."""

    def __init__(
        self,
        hub: Hub,
        *,
        model: Model,
        agent_name: str | None,
        run_id: str,
        thread_id: str,
        depth: int,
        messages: Sequence[Message],
        traceparent: str | None,
        capture: bool,
    ) -> None:
        self._hub = hub
        self.capture = capture
        self.thread_id = thread_id
        self.agent_name = agent_name
        self._provider, self._model_name = model_identity(model.name)
        self._base: dict[str, Any] = {
            names.PROVIDER: self._provider,
            names.REQUEST_MODEL: self._model_name,
        }
        self._run_attributes: dict[str, Any] = {
            names.OPERATION: "invoke_agent",
            **self._base,
            names.CONVERSATION: thread_id,
            names.RUN_ID: run_id,
            names.RUN_DEPTH: depth,
        }
        if agent_name:
            self._run_attributes[names.AGENT_NAME] = agent_name
        self._links = _resumed_from(thread_id, messages, traceparent)
        self._span: trace.Span = trace.INVALID_SPAN
        self._context: context_api.Context | None = None
        self._started = 0.0
        self._tools: dict[str, tuple[trace.Span, float]] = {}
        self._error: str | None = None
        self._ended = False

    # --- the run span ----------------------------------------------------------------

    @property
    def trace_id(self) -> str | None:
        """The run's trace id (hex), for logs; None before the run starts."""
        context = self._span.get_span_context()
        return f"{context.trace_id:032x}" if context.is_valid else None

    @property
    def traceparent(self) -> str | None:
        """The run span as a W3C ``traceparent``: what a resume in another process links to."""
        context = self._span.get_span_context()
        return format_traceparent(context) if context.is_valid else None

    def _start(self) -> None:
        parent = context_api.get_current()  # a delegate's run: the delegating call's span
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        links = [Link(context, {names.LINK_TYPE: "resumed_from"}) for context in self._links]
        self._span = self._hub.tracer.start_span(
            name, parent, SpanKind.INTERNAL, self._run_attributes, links
        )
        self._context = trace.set_span_in_context(self._span, parent)
        self._started = time.perf_counter()

    def _end(self) -> None:
        for call_id in list(self._tools):
            self._end_tool(call_id, "cancelled")
        duration: dict[str, Any] = {
            names.OPERATION: "invoke_agent",
            **self._base,
        }
        if self.agent_name:
            duration[names.AGENT_NAME] = self.agent_name
        if self._error is not None:
            duration[names.ERROR_TYPE] = self._error
        self._hub.duration.record(time.perf_counter() - self._started, duration)
        self._span.end()

    async def observe(self, events: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
        """The run's events, unchanged, recorded on its spans as they pass."""
        self._start()
        handlers = _HANDLERS
        try:
            async for event in events:
                handle = handlers.get(type(event))
                if handle is not None:
                    handle(self, event)
                yield event
        except GeneratorExit:
            if not self._ended:  # the consumer stopped reading before the end: the run is closed
                self._span.add_event("callwright.run.interrupted", {"reason": "the run was closed"})
                self._fail("interrupted", "the run was closed")
            raise
        except BaseException as exc:
            self._span.record_exception(exc)
            self._fail(type(exc).__qualname__, str(exc))
            raise
        finally:
            self._end()

    def _fail(self, error_type: str, description: str) -> None:
        self._error = error_type
        self._span.set_attribute(names.ERROR_TYPE, error_type)
        self._span.set_status(Status(StatusCode.ERROR, description))

    def _on_finished(self, event: RunFinished) -> None:
        self._ended = True
        span = self._span
        usage = event.usage
        span.set_attribute(names.INPUT_TOKENS, usage.input_tokens)
        span.set_attribute(names.OUTPUT_TOKENS, usage.output_tokens)
        span.set_attribute(names.RUN_STATUS, event.status)
        if event.reason:
            span.set_attribute(names.RUN_REASON, event.reason)
        if event.status == "cancelled":
            span.add_event("callwright.run.cancelled")
        if not event.pending:
            return
        context = span.get_span_context()
        traceparent = format_traceparent(context) if context.is_valid else None
        for pending in event.pending:
            pending.traceparent = traceparent
            _remember(self.thread_id, pending.call_id, context)
            if pending.kind == "client":
                span.add_event(
                    "callwright.client_call.pending",
                    {names.TOOL_CALL_ID: pending.call_id, names.TOOL_NAME: pending.tool_name},
                )

    def _on_error(self, event: RunError) -> None:
        self._ended = True
        self._span.set_attribute(names.RUN_STATUS, "error")
        self._fail(event.code, event.message)

    # --- approvals -------------------------------------------------------------------

    def _on_approval_requested(self, event: ApprovalRequested) -> None:
        self._span.add_event(
            "callwright.approval.requested",
            {
                names.TOOL_CALL_ID: event.call_id,
                names.TOOL_NAME: event.tool_name,
                names.APPROVAL_ID: event.approval_id,
            },
        )
        self._hub.approvals_waiting.add(1)

    def _on_approval_resolved(self, event: ApprovalResolved) -> None:
        attributes: dict[str, Any] = {
            names.TOOL_CALL_ID: event.call_id,
            names.APPROVED: event.approved,
        }
        if event.approval_id:
            attributes[names.APPROVAL_ID] = event.approval_id
        self._span.add_event("callwright.approval.resolved", attributes)
        if not event.automatic:  # an automatic decision was never waiting
            self._hub.approvals_waiting.add(-1)

    # --- tool calls ------------------------------------------------------------------

    def tool_context(self, call: Call) -> contextvars.Context:
        """A context for the call's task in which its ``execute_tool`` span is current."""
        attributes = _tool_attributes(call.id, call.tool_name)
        tool = call.tool
        if tool is not None and tool.description:
            attributes[names.TOOL_DESCRIPTION] = tool.description
        if self.capture:
            attributes[names.TOOL_ARGUMENTS] = _json(call.raw_arguments)
        span = self._hub.tracer.start_span(
            f"execute_tool {call.tool_name}", self._context, SpanKind.INTERNAL, attributes
        )
        self._tools[call.id] = (span, time.perf_counter())
        context = contextvars.copy_context()
        context.run(context_api.attach, trace.set_span_in_context(span, self._context))
        return context

    def _on_progress(self, event: ToolProgress) -> None:
        entry = self._tools.get(event.call_id)
        if entry is None:
            return
        attributes: dict[str, Any] = {"callwright.progress.text": event.text}
        if event.fraction is not None:
            attributes["callwright.progress.fraction"] = event.fraction
        entry[0].add_event("callwright.tool.progress", attributes)

    def _on_result(self, event: ToolCallResult) -> None:
        """The call's one result ends its span; a call that never ran gets a span now."""
        if event.call_id not in self._tools:
            span = self._hub.tracer.start_span(
                f"execute_tool {event.tool_name}",
                self._context,
                SpanKind.INTERNAL,
                _tool_attributes(event.call_id, event.tool_name),
            )
            self._tools[event.call_id] = (span, time.perf_counter())
        span = self._tools[event.call_id][0]
        span.set_attribute(names.CALL_OUTCOME, event.state)
        if event.state == "output-available":
            if self.capture:
                span.set_attribute(names.TOOL_RESULT, event.content)
            self._end_tool(event.call_id, None, event.tool_name)
        elif event.state == "output-denied":
            self._end_tool(event.call_id, None, event.tool_name, "output-denied")
        else:
            kind = event.error_kind or "_OTHER"
            span.set_status(Status(StatusCode.ERROR, event.error or kind))
            self._end_tool(event.call_id, kind, event.tool_name)

    def _end_tool(
        self,
        call_id: str,
        error_type: str | None,
        tool_name: str | None = None,
        outcome: str | None = None,
    ) -> None:
        span, started = self._tools.pop(call_id)
        if error_type is not None:
            span.set_attribute(names.ERROR_TYPE, error_type)
            interruption = _INTERRUPTING.get(error_type)
            if interruption is not None:
                span.add_event(f"callwright.call.{interruption}")
        span.end()
        if tool_name is None:  # closed with the run: its result never came
            return
        attributes: dict[str, Any] = {names.OPERATION: "execute_tool", names.TOOL_NAME: tool_name}
        if error_type is not None:
            attributes[names.ERROR_TYPE] = error_type
        self._hub.duration.record(time.perf_counter() - started, attributes)
        attributes[names.CALL_OUTCOME] = outcome or (
            "output-error" if error_type is not None else "output-available"
        )
        self._hub.tool_calls.add(1, attributes)

    # --- model turns -----------------------------------------------------------------

    def model(self, model: Model) -> Model:
        """The model, with a ``chat`` span around each of its turns."""
        return _TracedModel(model, self)

    async def chat(self, model: Model, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """One model turn's stream, unchanged, inside a ``chat`` span."""
        attributes: dict[str, Any] = {
            names.OPERATION: "chat",
            **self._base,
            names.CONVERSATION: self.thread_id,
            names.STEP: request.step,
            **_settings_attributes(request),
        }
        span = self._hub.tracer.start_span(
            f"chat {self._model_name}", self._context, SpanKind.CLIENT, attributes
        )
        started = time.perf_counter()
        stream = model.stream(request)
        last: ModelEvent | None = None
        error: ErrorPart | None = None
        failure: str | None = None
        try:
            token = context_api.attach(trace.set_span_in_context(span, self._context))
            try:  # the request goes out now: an instrumented HTTP client nests under the span
                last = await anext(stream)
            except StopAsyncIteration:
                return
            finally:
                context_api.detach(token)
            if type(last) is ErrorPart:
                error = last
            yield last
            async for part in stream:
                last = part
                if type(part) is ErrorPart:
                    error = part
                yield part
        except GeneratorExit:  # the turn was cut short (the run was cancelled or closed)
            failure = "cancelled"
            raise
        except BaseException as exc:
            span.record_exception(exc)
            failure = type(exc).__qualname__
            raise
        finally:
            close: Callable[[], Any] | None = getattr(stream, "aclose", None)
            if close is not None:
                await close()
            self._end_chat(span, started, last, error, failure)

    def _end_chat(
        self,
        span: trace.Span,
        started: float,
        last: ModelEvent | None,
        error: ErrorPart | None,
        failure: str | None,
    ) -> None:
        metric: dict[str, Any] = {names.OPERATION: "chat", **self._base}
        if error is not None:
            failure = error.code
            span.set_status(Status(StatusCode.ERROR, error.message))
        elif isinstance(last, FinishPart):
            if failure == "cancelled":  # closed after its last part: the turn was complete
                failure = None
            usage = last.usage
            span.set_attribute(names.INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(names.OUTPUT_TOKENS, usage.output_tokens)
            span.set_attribute(names.FINISH_REASONS, [last.reason.replace("-", "_")])
            tokens = self._hub.token_usage
            tokens.record(usage.input_tokens, {**metric, names.TOKEN_TYPE: "input"})
            tokens.record(usage.output_tokens, {**metric, names.TOKEN_TYPE: "output"})
        elif failure is None:
            failure = "cancelled"
        if failure is not None:
            span.set_attribute(names.ERROR_TYPE, failure)
            metric[names.ERROR_TYPE] = failure
        self._hub.duration.record(time.perf_counter() - started, metric)
        span.end()


class _TracedModel:
    """A model whose every turn is a ``chat`` span; everything else is the model's own."""

    def __init__(self, model: Model, run: RunTrace) -> None:
        self._model = model
        self._run = run
        self.name: str = model.name
        self.modes: tuple[Mode, ...] = model.modes

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._run.chat(self._model, request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


_HANDLERS: dict[type[Any], Callable[[RunTrace, Any], None]] = {
    ApprovalRequested: RunTrace._on_approval_requested,
    ApprovalResolved: RunTrace._on_approval_resolved,
    ToolProgress: RunTrace._on_progress,
    ToolCallResult: RunTrace._on_result,
    RunFinished: RunTrace._on_finished,
    RunError: RunTrace._on_error,
}


def _settings_attributes(request: ModelRequest) -> dict[str, Any]:
    """The turn's effective settings: what was asked of the provider, so a trace shows why
    two turns of one agent answered differently. Extras are named by key only (their
    values are the provider's and may be anything), except those the conventions name."""
    settings = request.settings
    attributes: dict[str, Any] = {
        names.REQUEST_SETTINGS[name]: value for name, value in settings.given().items()
    }
    if request.tools:
        attributes[names.TOOL_CHOICE] = request.tool_choice
    for key, value in settings.extra.items():
        name = names.REQUEST_EXTRAS.get(key)
        if name is not None and _plain(value):
            attributes[name] = value
    if settings.extra:
        attributes[names.EXTRA_KEYS] = sorted(str(key) for key in settings.extra)
    return attributes


def _plain(value: Any) -> bool:
    """A value an attribute can hold: a number, a string, or a list of strings."""
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return isinstance(value, int | float | str) and not isinstance(value, bool)


def _tool_attributes(call_id: str, tool_name: str) -> dict[str, Any]:
    return {
        names.OPERATION: "execute_tool",
        names.TOOL_NAME: tool_name,
        names.TOOL_CALL_ID: call_id,
        names.TOOL_TYPE: "function",
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _remember(thread_id: str, call_id: str, context: SpanContext) -> None:
    if not context.is_valid:
        return
    _paused[(thread_id, call_id)] = context
    _paused.move_to_end((thread_id, call_id))
    while len(_paused) > _PAUSED_MAX:
        _paused.popitem(last=False)


def _resumed_from(
    thread_id: str, messages: Sequence[Message], traceparent: str | None
) -> list[SpanContext]:
    """The paused segments this one continues: the one named by ``traceparent``, and the
    ones this process saw pause on the calls of the last assistant message."""
    found: list[SpanContext] = []
    if traceparent:
        context = parse_traceparent(traceparent)
        if context is not None:
            found.append(context)
    if _paused:
        for message in reversed(messages):
            if isinstance(message, AssistantMessage):
                for part in message.tool_calls:
                    paused = _paused.pop((thread_id, part.id), None)
                    if paused is not None and paused not in found:
                        found.append(paused)
                break
    return found
