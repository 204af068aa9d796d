"""A small MCP server (on the mcp SDK's ``Extension`` seam) that answers some calls with
tasks (the ``io.modelcontextprotocol/tasks`` extension), written from the extension's
text and nothing of callwright's:

* ``count(n, step=0.1)``: a task that counts to ``n`` (a step each ``step`` seconds,
  ``step i/n`` as its status message), then completes with ``counted to n``;
  ``recount`` is the same, annotated ``idempotentHint``;
* ``forever()``: a task that never finishes; ``tasks/cancel`` cancels it and appends its
  id to ``CANCELLED_FILE``;
* ``confirm(what)``: a task that asks its user (``input_required``, an elicitation) and
  completes with what they answered;
* ``broken()``: a task that fails with a JSON-RPC error;
* ``traced()``: no task: answers with the ``traceparent`` its request's ``_meta`` carried.

Every ``tools/call`` appends the tool's name to ``CALLS_FILE`` (when set), so a test can
tell a task polled again from a tool called again.

    python tasking.py http PORT  # streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    RequestParams,
    TextContent,
    ToolAnnotations,
)

TASKS = "io.modelcontextprotocol/tasks"
TTL_MS = 60_000


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _note(variable: str, line: str) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")


class Job:
    def __init__(self) -> None:
        self.id = secrets.token_urlsafe(16)
        self.created = _now()
        self.updated = self.created
        self.status = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.asking: dict[str, Any] = {}
        self.answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.work: asyncio.Task[None] | None = None

    def set(self, status: str, message: str | None = None) -> None:
        self.status, self.message, self.updated = status, message, _now()

    def wire(self, result_type: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "resultType": result_type,
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": TTL_MS,
            "pollIntervalMs": 100,
        }
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.status == "input_required" and result_type == "complete":
            out["inputRequests"] = self.asking
        if self.status == "completed" and result_type == "complete":
            out["result"] = self.result
        if self.status == "failed" and result_type == "complete":
            out["error"] = self.error
        return out


JOBS: dict[str, Job] = {}


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


async def _count(job: Job, n: int, step: float = 0.1) -> None:
    for i in range(n):
        await asyncio.sleep(step)
        job.set("working", f"step {i + 1}/{n}")
    job.result = _text(f"counted to {n}")
    job.set("completed")


async def _forever(job: Job) -> None:
    job.set("working", "waiting for ever")
    await asyncio.Event().wait()


async def _confirm(job: Job, what: str) -> None:
    job.asking = {
        "sure": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": f"Really {what}?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"reason": {"type": "string"}},
                    "required": ["reason"],
                },
            },
        }
    }
    job.set("input_required", "Waiting for the user")
    reply = await job.answer
    job.asking = {}
    job.set("working")
    await asyncio.sleep(0.1)
    said = (reply.get("content") or {}).get("reason", "") if reply.get("action") == "accept" else ""
    job.result = _text(f"{what}: {reply.get('action')} {said}".strip())
    job.set("completed")


async def _broken(job: Job) -> None:
    await asyncio.sleep(0.1)
    job.error = {"code": -32603, "message": "the backend is down"}
    job.set("failed", "the backend is down")


WORK = {
    "count": _count,
    "recount": _count,
    "forever": _forever,
    "confirm": _confirm,
    "broken": _broken,
}


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS in (extensions or {})


class TaskParams(RequestParams):
    taskId: str
    inputResponses: dict[str, Any] | None = None


def _job(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Job:
    if not _declared(ctx):
        raise MCPError(-32021, "Missing required client capability")
    job = JOBS.get(params.taskId)
    if job is None:
        raise MCPError(-32602, "Failed to retrieve task: Task not found")
    return job


async def get_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    return _job(ctx, params).wire("complete")


async def update_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    job = _job(ctx, params)
    reply = (params.inputResponses or {}).get("sure")
    if reply is not None and "sure" in job.asking and not job.answer.done():
        job.answer.set_result(reply)
    return {}


async def cancel_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    job = _job(ctx, params)
    if job.work is not None:
        job.work.cancel()
    if job.status not in ("completed", "failed", "cancelled"):
        job.set("cancelled", "Cancelled by the client")
    _note("CANCELLED_FILE", job.id)
    return {}


class Tasks(Extension):
    identifier = TASKS

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskParams, get_task),
            MethodBinding("tasks/update", TaskParams, update_task),
            MethodBinding("tasks/cancel", TaskParams, cancel_task),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        _note("CALLS_FILE", params.name)
        if params.name == "traced":
            said = str((ctx.meta or {}).get("traceparent", "none"))
            text = [TextContent(type="text", text=said)]
            return CallToolResult(content=text, structured_content={"result": said})
        work = WORK.get(params.name)
        if work is None or not _declared(ctx):
            return await call_next(ctx)
        job = Job()
        JOBS[job.id] = job
        job.work = asyncio.get_running_loop().create_task(work(job, **(params.arguments or {})))
        return job.wire("task")


server = MCPServer("tasking", extensions=[Tasks()])


@server.tool()
def count(n: int, step: float = 0.1) -> str:
    """Counts to n (a task, for clients that take tasks)."""
    return f"counted to {n} without a task"


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def recount(n: int, step: float = 0.1) -> str:
    """``count``, declared idempotent (safe to call again)."""
    return f"counted to {n} without a task"


@server.tool()
def forever() -> str:
    """Never finishes (as a task)."""
    return "no task: nothing to wait for"


@server.tool()
def confirm(what: str) -> str:
    """Asks the user to confirm (as a task)."""
    return f"{what}: no task, no question"


@server.tool()
def broken() -> str:
    """Fails (as a task) with a JSON-RPC error."""
    return "no task: nothing broke"


@server.tool()
def traced() -> str:
    """The traceparent the request carried."""
    return "none"


if __name__ == "__main__":
    server.run("streamable-http", port=int(sys.argv[2]))
