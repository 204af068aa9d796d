"""The tasks callwright's MCP server holds for its callers (the tasks extension, ``_tasks``).

A call of a 2026-07-28 client that declared the extension and is still running after
``task_after`` seconds (or asks the user a question before then) goes on as a task in
this process: its progress becomes the task's ``statusMessage``, a question makes it
``input_required`` until ``tasks/update`` brings the answers, ``tasks/cancel`` stops
it (its tools see their cancel token first), and its result waits to be fetched.

Every task belongs to the principal whose call made it, like a paused call
(``_owners``): another principal's ``tasks/get``, ``tasks/update`` or ``tasks/cancel``
is answered as for an id never issued. Task ids are unguessable. A task lives at most
``ttl`` seconds: one still running then is stopped and fails ("expired"), so a tool
that never returns, or a question nobody answers, holds nothing for ever; a finished
task is kept ``ttl`` seconds after it ended for its caller to fetch, then forgotten.
One principal keeps at most ``limit`` tasks; past it, its next calls are answered
without a task (the call holds its request as it would without the extension).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..events import PendingCall
from ._asking import Question
from ._tasks import TERMINAL, TaskStatus

TASK_AFTER = 1.0
"""Seconds a call of a client that declared the tasks extension runs before it becomes a
task (a call that finishes sooner is answered as usual)."""

TASK_TTL = 3600.0
"""Seconds a task may run (then it is stopped and fails), and a finished task is kept."""

POLL_INTERVAL = 0.5
"""Seconds between polls the server suggests (``pollIntervalMs``)."""

MAX_TASKS_PER_PRINCIPAL = 1000
"""Tasks one principal holds at once (running or kept); past it, calls get no task."""


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


@dataclass(eq=False)
class ServedTask:
    """One task: its status, what it waits on, and the work behind it."""

    id: str
    owner: str | None
    ttl: float
    poll: float
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    status: TaskStatus = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    listed: bool = False
    """Whether the client was handed the task (before that, progress goes to the request)."""
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the task first waits on the user."""
    work: asyncio.Future[Any] | None = None
    ended: float | None = None
    _asking: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    _answers: dict[str, types.ElicitResult] = field(default_factory=dict)
    _answered: asyncio.Event = field(default_factory=asyncio.Event)
    _keys: int = 0
    _expiry: asyncio.TimerHandle | None = None

    def _set(self, status: TaskStatus, message: str | None) -> None:
        self.status = status
        self.message = message
        self.updated = time.time()

    def progress(self, text: str) -> None:
        if self.status == "working":
            self._set("working", text)

    def complete(self, result: types.CallToolResult) -> None:
        if self.status not in TERMINAL:
            self.result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            said = "The call failed." if result.is_error else "The call finished."
            self._end("completed", said)

    def fail(self, code: int, message: str) -> None:
        if self.status not in TERMINAL:
            self.error = {"code": code, "message": message}
            self._end("failed", message)

    def cancelled(self, message: str) -> None:
        if self.status not in TERMINAL:
            self._end("cancelled", message)

    def _end(self, status: TaskStatus, message: str) -> None:
        self._set(status, message)
        self.ended = time.time()
        self._asking.clear()
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    async def ask(
        self, pending: list[PendingCall], questions: list[Question]
    ) -> dict[str, types.ElicitResult]:
        """Wait ``input_required`` for the user's answers (by paused call id). Each question
        gets a key never used before in this task, as the spec asks."""
        self._asking = {}
        for call, question in zip(pending, questions, strict=True):
            self._keys += 1
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=question.message, requested_schema=question.schema
                )
            )
            dumped = request.model_dump(mode="json", by_alias=True, exclude_none=True)
            self._asking[f"q{self._keys}"] = (call.call_id, dumped)
        self._answers = {}
        self._answered = asyncio.Event()
        self._set("input_required", questions[0].message)
        self.asked.set()
        await self._answered.wait()
        self._set("working", None)
        return self._answers

    def update(self, responses: dict[str, Any]) -> None:
        """Take answers to open questions; keys not open (never asked, answered already)
        are ignored. Raises INVALID_PARAMS for an answer that is no elicitation result."""
        taken: dict[str, types.ElicitResult] = {}
        for key, value in responses.items():
            if key not in self._asking:
                continue
            try:
                taken[key] = types.ElicitResult.model_validate(value)
            except ValidationError:
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"inputResponses[{key!r}] is not an answer to an elicitation",
                ) from None
        for key, answer in taken.items():
            call_id, _ = self._asking.pop(key)
            self._answers[call_id] = answer
        if taken and not self._asking and self.status == "input_required":
            self._answered.set()

    def wire(self, result_type: str = "complete") -> dict[str, Any]:
        """The task as ``tasks/get`` (or, ``"task"``, the ``CreateTaskResult``) gives it."""
        kept = self.ttl if self.ended is None else self.ttl + (self.ended - self.created)
        out: dict[str, Any] = {
            "resultType": result_type,
            "taskId": self.id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": int(kept * 1000),
            "pollIntervalMs": int(self.poll * 1000),
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if result_type != "complete":
            return out
        if self.status == "input_required":
            out["inputRequests"] = {key: asked for key, (_, asked) in self._asking.items()}
        elif self.status == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error
        return out

    def stop(self) -> None:
        if self.work is not None and not self.work.done():
            self.work.cancel()

    def expire(self) -> None:
        self._expiry = None
        if self.status not in TERMINAL:
            self.fail(types.INTERNAL_ERROR, f"The task expired after {self.ttl:g} seconds.")
            self.stop()


class TaskBook:
    """The tasks of every principal, apart: ids are looked up within the caller's own."""

    def __init__(
        self,
        ttl: float = TASK_TTL,
        limit: int = MAX_TASKS_PER_PRINCIPAL,
        poll: float = POLL_INTERVAL,
    ) -> None:
        if limit < 1:
            raise ValueError("max_tasks_per_principal must be at least 1")
        if ttl <= 0:
            raise ValueError("task_ttl must be positive")
        self.ttl = ttl
        self.limit = limit
        self.poll = poll
        self._held: dict[str | None, OrderedDict[str, ServedTask]] = {}

    def new(self, owner: str | None) -> ServedTask | None:
        """A task for ``owner`` (not yet handed out), or None when they hold too many."""
        held = self._held.setdefault(owner, OrderedDict())
        self._forget_old(held)
        if len(held) >= self.limit:
            finished = next((k for k, t in held.items() if t.status in TERMINAL), None)
            if finished is None:
                return None
            del held[finished]
        return ServedTask(secrets.token_urlsafe(24), owner, self.ttl, self.poll)

    def add(self, task: ServedTask) -> None:
        """Hand the task out: from now on ``tasks/get`` finds it, and its lifetime runs."""
        task.listed = True
        self._held.setdefault(task.owner, OrderedDict())[task.id] = task
        task._expiry = asyncio.get_running_loop().call_later(self.ttl, task.expire)

    def get(self, owner: str | None, task_id: str) -> ServedTask | None:
        held = self._held.get(owner)
        if held is None:
            return None
        self._forget_old(held)
        return held.get(task_id)

    def close(self) -> None:
        """Stop every task's work (the server is shutting down)."""
        for held in self._held.values():
            for task in held.values():
                task.cancelled("The server shut down.")
                task.stop()
        self._held.clear()

    def _forget_old(self, held: OrderedDict[str, ServedTask]) -> None:
        now = time.time()
        gone = [k for k, t in held.items() if t.ended is not None and now - t.ended > self.ttl]
        for key in gone:
            del held[key]
