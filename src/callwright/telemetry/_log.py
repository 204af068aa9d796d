"""One structured log line per run and per failed call, through the stdlib ``logging``.

The fields are ``extra=`` attributes of the record (``run_id``, ``thread_id``,
``call_id`` ...) so a JSON formatter or a log shipper gets them as fields, and the
message repeats the ids so a plain formatter shows them too. Arguments and
results are never logged unless content capture is opted in
(``telemetry.configure(capture_content=True)`` or the GenAI instrumentations'
variable); an error's text is logged, as it says what went wrong, not what was sent.
Like any library, callwright adds no handler but a ``NullHandler``: configure logging
(``logging.basicConfig(level=logging.INFO)``, a JSON formatter ...) to see the lines.
``callwright serve`` and ``callwright worker`` do (``--log-level``, ``--log-format json``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._config import capture_content

if TYPE_CHECKING:
    from ..call import Call
    from ..context import RunScope
    from ..events import RunStatus
    from ..usage import Usage

logging.getLogger("callwright").addHandler(logging.NullHandler())  # the application decides

RUN_LOGGER = logging.getLogger("callwright.run")
"""Logs one line as each run segment ends: INFO, WARNING when it ended in an error."""
CALL_LOGGER = logging.getLogger("callwright.call")
"""Logs one line per failed call: WARNING when the tool itself failed, timed out, was
interrupted or is in doubt; INFO when the model's call was refused (invalid, unknown) or
cancelled."""

_TOOL_FAULTS = frozenset({"failed", "timed-out", "interrupted", "in-doubt"})
_MAX_ERROR = 500


def log_run(
    scope: RunScope[Any],
    *,
    agent_name: str | None,
    status: RunStatus | None,
    usage: Usage,
    seconds: float,
    reason: str | None = None,
    error_code: str | None = None,
) -> None:
    """The run segment's line; ``status`` None: the consumer closed it before its end."""
    level = logging.WARNING if status == "error" else logging.INFO
    if not RUN_LOGGER.isEnabledFor(level):
        return
    shown = status or "closed"
    fields: dict[str, Any] = {
        "run_id": scope.run_id,
        "thread_id": scope.thread_id,
        "agent": agent_name,
        "status": shown,
        "depth": scope.depth,
        "duration_ms": round(seconds * 1000, 1),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "requests": usage.requests,
        "reason": reason,
        "error_code": error_code,
        "trace_id": scope.trace.trace_id if scope.trace is not None else None,
    }
    RUN_LOGGER.log(
        level,
        "run %s %s in %.0f ms (thread %s)",
        scope.run_id,
        shown,
        seconds * 1000,
        scope.thread_id,
        extra=fields,
    )


def log_failed_call(scope: RunScope[Any], call: Call) -> None:
    """A call that ended with an error result (a denial is an answer, not a failure)."""
    error = call.error
    if error is None:
        return
    level = logging.WARNING if error.kind in _TOOL_FAULTS else logging.INFO
    if not CALL_LOGGER.isEnabledFor(level):
        return
    text = error.model_text()[:_MAX_ERROR]
    fields: dict[str, Any] = {
        "run_id": scope.run_id,
        "thread_id": scope.thread_id,
        "call_id": call.id,
        "tool_name": call.tool_name,
        "error_kind": error.kind,
        "error": text,
    }
    if capture_content():
        fields["arguments"] = call.raw_arguments
    CALL_LOGGER.log(
        level,
        "call %s (%s) of run %s failed [%s]: %s",
        call.id,
        call.tool_name,
        scope.run_id,
        error.kind,
        text,
        extra=fields,
    )
