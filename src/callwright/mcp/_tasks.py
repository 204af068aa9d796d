"""The MCP tasks extension (``io.modelcontextprotocol/tasks``) on the wire, both ways.

A 2026-07-28 client that lists the extension in a request's capabilities may get a
*task* instead of a ``tools/call`` result (``resultType: "task"``): a handle it polls
with ``tasks/get`` until the task is ``completed`` (the call's result), ``failed`` (a
JSON-RPC error) or ``cancelled``; a task waiting on the user is ``input_required`` with
its questions (``inputRequests``), answered with ``tasks/update``; ``tasks/cancel``
asks the server to stop. Over streamable HTTP the ``tasks/*`` requests name the task in
the ``Mcp-Name`` header. The SDK has no tasks of its own, only the seams an extension
uses: these are the shapes callwright sends and reads through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import Field

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier, in capabilities (``extensions``) both ways."""

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""Statuses a task never leaves."""


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel``: which task."""

    task_id: str


class UpdateTaskParams(TaskParams):
    """``tasks/update``: answers to the task's questions, by their keys."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


class GetTaskRequest(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTaskRequest(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class TaskFields(types.Result):
    """What every task carries (the spec's ``Task``)."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskHandle(TaskFields):
    """``CreateTaskResult``: the answer to a ``tools/call`` that became a task."""

    result_type: Literal["task"] = "task"


class DetailedTask(TaskFields):
    """``tasks/get``'s answer: the task with what its status carries."""

    result_type: str | None = "complete"
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Acknowledged(types.Result):
    """``tasks/update`` and ``tasks/cancel``'s empty answer."""

    result_type: str | None = "complete"


async def _unresolved(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    """Never called: callwright reads task handles itself (``allow_claimed``), to keep the
    task id with the call before it polls."""
    raise RuntimeError("task handles are followed by callwright, not by the SDK")


class TasksExtension(ClientExtension):
    """Declares the extension on a 2026-07-28 client's requests; its results read as
    ``TaskHandle``."""

    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=TaskHandle, resolve=_unresolved),)


def declared(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether a request's client capabilities list the tasks extension."""
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS in (extensions or {})
