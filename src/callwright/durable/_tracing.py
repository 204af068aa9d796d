"""One trace across the worker boundary: the call's ``execute_tool`` span in the replica
is the parent of the worker's ``execute_tool`` span (kind CONSUMER), through the W3C
``traceparent`` the replica puts in the call's request. Inside the worker's span the
tool's own spans nest as they would in the replica.

Costs nothing when tracing is off (``telemetry._config.hub`` says so without importing
OpenTelemetry): the request then carries no traceparent and the worker makes no span.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from ..telemetry import _instruments as names
from ..telemetry._config import hub


def current_traceparent() -> str | None:
    """The current span's ``traceparent`` (the call's ``execute_tool``), if traced."""
    if hub() is None:
        return None
    from opentelemetry import trace

    from ..telemetry._trace import format_traceparent

    context = trace.get_current_span().get_span_context()
    return format_traceparent(context) if context.is_valid else None


@dataclass(frozen=True, slots=True)
class WorkerSpan:
    """The worker's span of one call, and the context the tool's task runs in."""

    span: Any
    """The ``execute_tool`` span (an OpenTelemetry ``Span``)."""
    context: contextvars.Context
    """A context in which the span is current: the tool's task is started in it."""

    def end(self, outcome: dict[str, Any]) -> None:
        """End the span with the call's outcome (``error.type`` = the error kind)."""
        from opentelemetry.trace import Status, StatusCode

        error = outcome.get("error")
        if error is not None:
            self.span.set_attribute(names.ERROR_TYPE, error["kind"])
            self.span.set_status(Status(StatusCode.ERROR, error["text"]))
        self.span.end()


def worker_span(
    tool_name: str, call_id: str, traceparent: str | None, executor_id: str
) -> WorkerSpan | None:
    """Start the worker's span of a call, a child of the replica's when it sent one."""
    found = hub()
    if found is None:
        return None
    from opentelemetry import context as context_api
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    from ..telemetry._trace import parse_traceparent

    remote = parse_traceparent(traceparent) if traceparent else None
    parent = trace.set_span_in_context(trace.NonRecordingSpan(remote)) if remote else None
    attributes = {
        names.OPERATION: "execute_tool",
        names.TOOL_NAME: tool_name,
        names.TOOL_CALL_ID: call_id,
        names.TOOL_TYPE: "function",
        "callwright.worker.executor_id": executor_id,
    }
    span = found.tracer.start_span(
        f"execute_tool {tool_name}", parent, SpanKind.CONSUMER, attributes
    )
    context = contextvars.copy_context()
    context.run(context_api.attach, trace.set_span_in_context(span, parent))
    return WorkerSpan(span, context)
