"""What crosses the process boundary between the web side and tool workers: the
queue's and workflow's names, a call's workflow id, and outcomes as plain data (a
``ToolError`` comes back as the same kind with the same text for the model)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from .._tool_files import file_from_dict, file_to_dict
from ..call import (
    Cancelled,
    Denied,
    InDoubt,
    Interrupted,
    InvalidArgs,
    Skipped,
    TimedOut,
    ToolError,
    ToolNotFound,
    ToolResult,
)
from ..elicitation import InputAnswer, InputRequest, InputRequired
from ._reconnect import engine_kwargs

_DBOS_VERSION = version("dbos")

TOOLS_QUEUE = "callwright-tools"
"""The DBOS queue tool workers listen to; web replicas must not listen to it."""
TOOL_WORKFLOW = "callwright.tool"
"""The workflow that runs one tool call on a worker."""
PROGRESS_STREAM = "progress"
"""The workflow stream that carries a call's progress and partial outputs."""
POLL_SECONDS = 0.1
"""How often a worker polls its queue and its calls' cancellation, and the web side a
call's stream on SQLite."""
NOTIFIED_POLL_SECONDS = 1.0
"""On Postgres the web side is woken by LISTEN/NOTIFY when a worker writes to a call's
stream; it reads again at this interval only in case a notification was lost."""
DEFAULT_CONCURRENCY = 8
"""Calls one worker runs at once, unless told otherwise."""
WORKER_NOTICE_SECONDS = 3.0
"""After how long a call no worker has taken says so: a progress event for the client
and a warning in the web side's log."""
WORKER_WAIT_SECONDS = 60.0
"""How long a call waits for a worker to take it before it fails and is withdrawn
(``use_tool_workers(worker_wait=...)``)."""
CLOCK_MARGIN_SECONDS = 1.0
"""How far the web side's clock and a worker's may disagree (NTP keeps them far closer):
the web side withdraws a call this long after the deadline it gave the workers."""
WAITING_TEXT = "waiting for a tool worker: none has taken this call yet"
"""The progress a call no worker has taken reports."""
TAKEN_TEXT = "a tool worker took the call"
"""The progress that follows ``WAITING_TEXT`` once a worker takes the call."""


def no_worker_text(seconds: float | None) -> str:
    """The error of a call no worker took in time, as the model and the client see it."""
    within = "in time" if seconds is None else f"within {seconds:g} s"
    return f"no tool worker took the call {within}; start one with `callwright worker --journal …`"


def workflow_id(run_id: str, call_id: str) -> str:
    """The workflow id of one call: the same on a retried or recovered enqueue."""
    return f"tool:{run_id}:{call_id}"


def request_of(workflow: str) -> str:
    """The run id (the request's, which names its segment) of a call's ``workflow_id``
    (it has no ``:``)."""
    return workflow.split(":", 2)[1]


def worker_version() -> str:
    """The DBOS application version of tool workers, apart from the replicas'.

    DBOS dequeues a workflow only on executors of its application version, and every
    process also serves DBOS's internal queue. With a version of their own, replicas
    never take a tool call, whatever queue it is on; the web side enqueues calls with
    this version. It changes with this package's worker code, as DBOS's own
    version changes with workflow code: a worker only resumes calls of its own code.
    """
    digest = hashlib.md5(usedforsecurity=False)
    digest.update(_DBOS_VERSION.encode())
    for name in ("_crossing.py", "_worker.py"):
        digest.update((Path(__file__).parent / name).read_bytes())
    return f"callwright-tools-{digest.hexdigest()[:16]}"


WORKER_VERSION = worker_version()
"""This package's worker version, computed once at import."""


def dbos_config(database_url: str, executor_id: str) -> Any:
    """The DBOS configuration of a tool worker: the replicas' application name (one
    application: they share queues and see each other's workflows) and the workers'
    own version (``worker_version``); connections opened again as soon as Postgres
    answers after an outage (``_reconnect``)."""
    return {
        "name": "callwright",
        "system_database_url": database_url,
        "executor_id": executor_id,
        "log_level": "WARNING",
        "application_version": WORKER_VERSION,
        "db_engine_kwargs": engine_kwargs(database_url, "callwright-worker"),
    }


_KINDS: dict[str, Callable[[dict[str, Any]], ToolError]] = {
    "failed": lambda e: ToolError(e["message"]),
    "invalid-args": lambda e: InvalidArgs(e["message"]),
    "cancelled": lambda e: Cancelled(e["message"]),
    "interrupted": lambda e: Interrupted(e["message"]),
    "in-doubt": lambda e: InDoubt(e["message"]),
    "denied": lambda e: Denied(e["message"]),
    "skipped": lambda e: Skipped(e["message"]),
    "timed-out": lambda e: TimedOut(float(e.get("seconds") or 0)),
    "not-found": lambda e: ToolNotFound(e["message"], list(e.get("available") or [])),
}


class RelayedToolError(ToolError):
    """A worker's ``ToolError`` of a kind callwright does not define (a tool's own
    subclass): the same kind and the same text for the model."""

    def __init__(self, kind: str, message: str, text: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.text = text

    def model_text(self) -> str:
        """The text the worker's error gave the model."""
        return self.text


def error_payload(error: ToolError) -> dict[str, Any]:
    """A ``ToolError`` as plain data for the workflow's output."""
    payload: dict[str, Any] = {
        "kind": error.kind,
        "message": error.message,
        "text": error.model_text(),
    }
    if isinstance(error, TimedOut):
        payload["seconds"] = error.seconds
    if isinstance(error, ToolNotFound):
        payload["available"] = error.available
    return {"error": payload}


def error_from_payload(payload: dict[str, Any]) -> ToolError:
    """The same kind of ``ToolError`` again, or a ``RelayedToolError`` with its text."""
    make = _KINDS.get(payload["kind"])
    if make is not None:
        error = make(payload)
        if error.model_text() == payload["text"]:
            return error
    return RelayedToolError(payload["kind"], payload["message"], payload["text"])


def result_payload(result: ToolResult) -> dict[str, Any]:
    ok = {"content": result.content, "details": result.details, "text": result.text}
    if result.files:
        ok["files"] = [file_to_dict(f) for f in result.files]
    return {"ok": ok}


def question_payload(request: InputRequest) -> dict[str, Any]:
    """A tool's question (``InputRequired``) for the web side, which pauses the run. Its
    ``state`` stays behind: it belongs to the process that asked."""
    asked = {"message": request.message, "schema": request.schema, "url": request.url}
    return {"ask": {**asked, "id": request.id}}


def answer_payload(answer: InputAnswer) -> dict[str, Any]:
    """A human's answer, for the worker that runs the call again with it."""
    asked = answer.request
    question = None if asked is None else question_payload(asked)["ask"]
    return {"action": answer.action, "content": answer.content, "request": question}


def answer_from_payload(payload: dict[str, Any]) -> InputAnswer:
    asked = payload.get("request")
    request = None if asked is None else InputRequest(**asked)
    return InputAnswer(payload["action"], payload.get("content"), request)


def answer_key(answer: InputAnswer) -> str:
    """What tells one answered run of a call from another in its workflow id: the
    question's id (one answer per question), or the answer itself."""
    if answer.request is not None:
        return answer.request.id
    text = json.dumps([answer.action, answer.content], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def outcome(payload: dict[str, Any]) -> ToolResult:
    """The call's result from the workflow's output; raises the relayed ``ToolError``, or
    ``InputRequired`` for a question."""
    if "ask" in payload:
        raise InputRequired(InputRequest(**payload["ask"]))
    if "error" in payload:
        raise error_from_payload(payload["error"])
    ok = payload["ok"]
    files = [file_from_dict(f) for f in ok.get("files", ())]
    return ToolResult(ok["content"], ok.get("details"), ok.get("text"), files=files)
