"""Traces, metrics and logs of every run, call and approval.

Spans and metrics follow the OpenTelemetry GenAI semantic conventions, so any
backend that reads them (Jaeger, Tempo, Phoenix, Langfuse, Logfire, Datadog ...)
shows a run as one tree:

``invoke_agent {agent}``
    One run segment (``gen_ai.operation.name`` ``invoke_agent``,
    ``gen_ai.agent.name``, ``gen_ai.conversation.id`` = the thread id,
    ``gen_ai.provider.name``, ``gen_ai.request.model``, the segment's
    ``gen_ai.usage.*_tokens``). Span events: ``callwright.approval.requested`` /
    ``.resolved``, ``callwright.client_call.pending``, ``callwright.run.cancelled``,
    ``callwright.run.interrupted`` (the consumer closed the stream). A resumed
    segment is a new trace with a link to the segment that paused.
``chat {model}``
    One model turn, a child of the run span (``gen_ai.usage.input_tokens`` /
    ``output_tokens``, ``gen_ai.response.finish_reasons``, ``error.type`` = the
    provider error's code).
``execute_tool {tool}``
    One call, a child of the run span and the *current* span inside the call's
    task, so the tool's own spans, a delegate's ``invoke_agent`` and instrumented
    clients nest under it (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
    ``gen_ai.tool.type``, ``error.type`` = the error kind: ``failed``,
    ``timed-out``, ``invalid-args``, ``not-found``, ``cancelled``, ``skipped``,
    ``interrupted``, ``in-doubt``). Span events: ``callwright.tool.progress``,
    ``callwright.call.cancelled`` / ``.timed_out`` / ``.interrupted`` / ``.in_doubt``. Arguments and
    results (``gen_ai.tool.call.arguments`` / ``.result``) only with content capture.

Metrics: ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``
(chat, execute_tool, invoke_agent), ``callwright.tool.calls`` (by tool, outcome and
``error.type``) and ``callwright.approvals.waiting``.

Tracing costs nothing until an OpenTelemetry SDK is installed (``configure_otlp``,
your own ``TracerProvider``, or ``configure(tracer_provider=...)``): callwright
depends on ``opentelemetry-api`` only, and a run decides once, when it is made,
whether it is traced. Logs (``callwright.run``, ``callwright.call``) are written
whether or not tracing is on.
"""

from ._config import CAPTURE_ENV, capture_content, configure
from ._log import CALL_LOGGER, RUN_LOGGER
from ._otlp import ENDPOINT_ENV, configure_otlp

__all__ = [
    "CALL_LOGGER",
    "CAPTURE_ENV",
    "ENDPOINT_ENV",
    "RUN_LOGGER",
    "capture_content",
    "configure",
    "configure_otlp",
]
