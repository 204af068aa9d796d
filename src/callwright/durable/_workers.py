"""Tool workers: a tool marked ``on_workers`` runs in a ``callwright worker`` process.

The web side replaces each such tool by a proxy with the same blueprint (name,
schema, approval, timeout, idempotent...). Its code enqueues the DBOS workflow
``callwright.tool`` on the queue ``callwright-tools`` under the workflow id
``tool:{run_id}:{call_id}``: a retried or recovered enqueue attaches to the same
workflow, so it never runs the tool twice. The proxy then relays what the worker
writes to the workflow's ``progress`` stream (progress and partial outputs), the
result or the error (rebuilt as the same ``ToolError`` kind and text the model
knows), and cancellation and timeouts the other way: the run's cancel, or the
tool's timeout, cancels the workflow; the worker sees it on its next look at the
workflow's status and cancels the tool's token, then its task after a grace.

The web side talks to DBOS through a ``DBOSClient``: it needs no launched DBOS,
and it never records steps in a workflow of the calling process (a segment's).

At most once unless idempotent: DBOS steps are at-least-once, so the workflow's
first step only marks the attempt. A worker that dies mid-tool leaves the workflow
PENDING with that mark recorded; when it is recovered (on a restart with the same
executor id, or by ``recover_executor`` from another process), the replayed mark
says the tool had started, and the tool step answers ``Interrupted`` instead of
running the tool again, unless the worker's tool is idempotent.

What does not cross: a worker's tool gets the worker's own deps (the agent's
``deps``, or ``run_worker(deps=...)``), a fresh state document, and no sub-agent
event forwarding; a tool that asks a human (``InputRequired``) is not supported on
workers and fails with a message that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowHandleAsync

from ..call import (
    Cancelled,
    Denied,
    Interrupted,
    InvalidArgs,
    Skipped,
    TimedOut,
    ToolError,
    ToolNotFound,
    ToolResult,
)
from ..context import CancelToken, RunScope, ToolContext
from ..elicitation import InputRequired
from ..state import RunState
from ..tool import Tool, as_result
from ..toolbox import Toolbox
from ..usage import Usage

if TYPE_CHECKING:
    from ..run import Agent

TOOLS_QUEUE = "callwright-tools"
"""The DBOS queue tool workers listen to; web replicas must not listen to it."""
TOOL_WORKFLOW = "callwright.tool"
"""The workflow that runs one tool call on a worker."""
PROGRESS_STREAM = "progress"
"""The workflow stream that carries a call's progress and partial outputs."""
POLL_SECONDS = 0.1
"""How often the web side polls a call's stream and result, and a worker its queue and
its calls' cancellation (with Postgres, fewer round trips would come from LISTEN/NOTIFY;
polling keeps SQLite working the same)."""
DEFAULT_CONCURRENCY = 8
"""Calls one worker runs at once, unless told otherwise."""


def workflow_id(run_id: str, call_id: str) -> str:
    """The workflow id of one call: the same on a retried or recovered enqueue."""
    return f"tool:{run_id}:{call_id}"


def dbos_config(database_url: str, executor_id: str) -> Any:
    """The DBOS configuration a callwright process launches with: one application name
    for replicas and workers, so they share queues and see each other's workflows."""
    return {
        "name": "callwright",
        "system_database_url": database_url,
        "executor_id": executor_id,
        "log_level": "WARNING",
    }


# --- outcomes as they cross the process boundary ----------------------------------------

_KINDS: dict[str, Callable[[dict[str, Any]], ToolError]] = {
    "failed": lambda e: ToolError(e["message"]),
    "invalid-args": lambda e: InvalidArgs(e["message"]),
    "cancelled": lambda e: Cancelled(e["message"]),
    "interrupted": lambda e: Interrupted(e["message"]),
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
    return {"ok": {"content": result.content, "details": result.details, "text": result.text}}


def outcome(payload: dict[str, Any]) -> ToolResult:
    """The call's result from the workflow's output; raises the relayed ``ToolError``."""
    if "error" in payload:
        raise error_from_payload(payload["error"])
    ok = payload["ok"]
    return ToolResult(ok["content"], ok.get("details"), ok.get("text"))


# --- the web side -----------------------------------------------------------------------


@dataclass(eq=False)
class ToolWorkers:
    """The web side of tool workers: proxies the tools that run on workers.

    ``apply`` replaces those tools in a toolbox. ``all_tools`` is the deployment-wide
    setting: every tool with code of its own runs on workers, marked or not (tools
    carried out by activities or delegates, front-end tools and toolsets' tools stay).
    """

    database_url: str
    """The DBOS system database the workers listen on (Postgres, or SQLite on one host)."""
    all_tools: bool = False
    """Run every tool with its own code on workers, not only those marked ``on_workers``."""
    poll_seconds: float = POLL_SECONDS
    """How often a waiting call polls its stream and result."""
    _client: DBOSClient | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)

    def runs_on_workers(self, tool: Tool) -> bool:
        if tool.client or tool.executor is None:
            return False
        return tool.on_workers or self.all_tools

    def apply(self, toolbox: Toolbox) -> list[str]:
        """Replace the toolbox's worker tools by proxies, in place and in order (each tool
        is added again, so the order the model sees stays). Returns their names."""
        proxied = [t.name for t in toolbox if self.runs_on_workers(t)]
        if proxied:
            for tool in list(toolbox):
                toolbox.add(self.proxy(tool) if tool.name in proxied else tool)
        return proxied

    def proxy(self, tool: Tool) -> Tool:
        """A tool with ``tool``'s blueprint whose code runs the call on a worker."""
        check = tool.validator

        def validate(arguments: dict[str, Any]) -> Any:
            check(arguments)  # the web side refuses bad arguments before enqueueing
            return dict(arguments)  # the worker validates again, into its own types

        async def execute(arguments: Any, ctx: ToolContext[Any] | None) -> Any:
            assert ctx is not None  # uses_context
            return await self.call(tool.name, arguments, ctx)

        return dataclasses.replace(tool, executor=execute, validator=validate, uses_context=True)

    async def client(self) -> DBOSClient:
        """The process's client, made on first use (it connects when made)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None:
                self._client = await asyncio.to_thread(
                    DBOSClient, system_database_url=self.database_url, application_name="callwright"
                )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.destroy()
            self._client = None

    async def call(self, name: str, arguments: dict[str, Any], ctx: ToolContext[Any]) -> Any:
        """Run one call on a worker: enqueue, relay its stream, return its result."""
        run = ctx.run
        wf = workflow_id(run.run_id if run is not None else "-", ctx.call_id)
        request = {
            "name": name,
            "arguments": arguments,
            "call_id": ctx.call_id,
            "run_id": run.run_id if run is not None else "",
            "thread_id": run.thread_id if run is not None else "",
            "meta": ctx.meta,
            "scope": ctx.scope,
        }
        client = await self.client()
        options: EnqueueOptions = {
            "queue_name": TOOLS_QUEUE,
            "workflow_name": TOOL_WORKFLOW,
            "workflow_id": wf,
        }
        handle: WorkflowHandleAsync[dict[str, Any]] = await client.enqueue_async(options, request)
        relay = asyncio.create_task(self._relay(client, wf, ctx))
        cancelled = asyncio.create_task(ctx.cancel.wait())
        try:
            await asyncio.wait({relay, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not relay.done():
                await _cancel(client, wf)
                raise Cancelled(ctx.cancel.reason)
            relay.result()
            try:
                payload = await handle.get_result(polling_interval_sec=self.poll_seconds)
            except Exception as exc:  # the workflow itself failed or was cancelled
                raise _workflow_error(exc) from None
        except asyncio.CancelledError:  # the call's timeout, or the run stopped it
            await asyncio.shield(_cancel(client, wf))
            raise
        finally:
            relay.cancel()
            cancelled.cancel()
        return outcome(payload)

    async def _relay(self, client: DBOSClient, wf: str, ctx: ToolContext[Any]) -> None:
        """Progress and partial outputs in the order the worker wrote them, until the
        workflow ends (a recovered call that ran again reports its progress again)."""
        async for item in client.read_stream_async(
            wf, PROGRESS_STREAM, polling_interval_sec=self.poll_seconds
        ):
            if item.get("kind") == "update":
                ctx.update(item.get("value"))
            else:
                ctx.progress(str(item.get("text", "")), item.get("fraction"))


async def _cancel(client: DBOSClient, wf: str) -> None:
    with contextlib.suppress(Exception):  # already finished, or the database is gone
        await client.cancel_workflow_async(wf)


def _workflow_error(exc: Exception) -> ToolError:
    if "cancel" in type(exc).__name__.lower():
        return Cancelled()
    return ToolError(f"the tool worker failed: {exc}")


def use_tool_workers(
    agent: Agent[Any, Any], database_url: str, *, all_tools: bool = False
) -> ToolWorkers:
    """Run the agent's ``on_workers`` tools (or all, with ``all_tools``) on workers.
    Call it in the web process only: a worker runs the agent's own tools."""
    workers = ToolWorkers(database_url, all_tools=all_tools)
    workers.apply(agent.toolbox)
    return workers


# --- the worker side --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Host:
    """What this process's ``callwright.tool`` workflows run with."""

    agent: Agent[Any, Any]
    deps: Any
    grace: float


_host: _Host | None = None
"""Set by ``run_worker``: DBOS is one per process, and so is the agent it serves."""


class _Attempt:
    """Whether this execution of the workflow ran its first step or replayed it."""

    def __init__(self) -> None:
        self.first = False

    async def begin(self) -> bool:
        self.first = True
        return True


@DBOS.workflow(name=TOOL_WORKFLOW)
async def tool_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One call on a worker: mark the attempt, then run the tool (or say it was
    interrupted, when a recovered attempt finds the mark already there)."""
    attempt = _Attempt()
    await DBOS.run_step_async({"name": "callwright.tool.begin"}, attempt.begin)
    result: dict[str, Any] = await DBOS.run_step_async(
        {"name": "callwright.tool.run"}, _carry_out, request, attempt.first
    )
    return result


async def _carry_out(request: dict[str, Any], first: bool) -> dict[str, Any]:
    host = _host
    if host is None:
        return error_payload(ToolError("no tool worker runs in the process that took the call"))
    toolbox = host.agent.toolbox
    tool = toolbox.get(request["name"])
    if tool is None and toolbox.toolsets:
        await toolbox.ready()
        tool = toolbox.get(request["name"])
    executor = toolbox.executor_for(tool) if tool is not None else None
    if tool is None or executor is None:
        return error_payload(ToolNotFound(request["name"], toolbox.names))
    if not first and not tool.idempotent:
        return error_payload(Interrupted())
    try:
        validated = tool.validate(request["arguments"])
    except ToolError as exc:
        return error_payload(exc)
    return await _run_tool(host, tool, executor, validated, request)


async def _run_tool(
    host: _Host, tool: Tool, executor: Any, validated: Any, request: dict[str, Any]
) -> dict[str, Any]:
    """The tool's task beside a stream writer and a watch for the workflow's cancel."""
    stream = _Stream()
    token = CancelToken()
    ctx = ToolContext(
        request["call_id"],
        tool.name,
        token,
        _scope(host, request, token),
        dict(request.get("meta") or {}),
        stream.progress,
        stream.update,
        scope=dict(request.get("scope") or {}),
    )
    task = asyncio.create_task(executor(validated, ctx if tool.uses_context else None))
    wf = DBOS.workflow_id
    assert wf is not None
    watch = asyncio.create_task(
        _watch_cancel(wf, token, task, host.grace), context=contextvars.Context()
    )
    try:
        await asyncio.wait({task})
    finally:
        watch.cancel()
        await stream.close()
    if task.cancelled():
        return error_payload(Cancelled(token.reason))
    error = task.exception()
    if error is None:
        return result_payload(as_result(task.result()))
    if isinstance(error, ToolError):
        return error_payload(error)
    if isinstance(error, InputRequired):
        return error_payload(ToolError("a tool on a worker cannot ask a human for input"))
    return error_payload(ToolError(str(error) or type(error).__name__))


def _scope(host: _Host, request: dict[str, Any], cancel: CancelToken) -> RunScope[Any]:
    return RunScope(
        run_id=request.get("run_id") or "",
        thread_id=request.get("thread_id") or "",
        toolbox=host.agent.toolbox,
        state=RunState(),
        deps=host.deps,
        cancel=cancel,
        usage=Usage(),
        model=host.agent.model,
    )


async def _watch_cancel(wf: str, token: CancelToken, task: asyncio.Task[Any], grace: float) -> None:
    """Poll the workflow's status: once cancelled, cancel the tool's token, and its task
    when the tool has not stopped within the grace."""
    while True:
        await asyncio.sleep(POLL_SECONDS)
        with contextlib.suppress(Exception):  # a database blip: look again
            status = await DBOS.get_workflow_status_async(wf)
            if status is not None and status.status == "CANCELLED":
                break
    token.cancel("cancelled")
    await asyncio.sleep(grace)
    task.cancel()


class _Stream:
    """Writes progress and partial outputs to the workflow's stream, in order, from the
    tool's task or its thread (a sync tool reports from a tool thread)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._pump = asyncio.create_task(self._write())

    def _put(self, item: dict[str, Any] | None) -> None:
        if threading.get_ident() == self._thread:
            self._queue.put_nowait(item)
        else:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def progress(self, text: str, fraction: float | None) -> None:
        self._put({"kind": "progress", "text": text, "fraction": fraction})

    def update(self, partial: Any) -> None:
        self._put({"kind": "update", "value": partial})

    async def _write(self) -> None:
        while (item := await self._queue.get()) is not None:
            with contextlib.suppress(Exception):  # progress is best effort; the result is not
                await DBOS.write_stream_async(PROGRESS_STREAM, item)

    async def close(self) -> None:
        """Write what is queued, so every progress item comes before the result."""
        self._queue.put_nowait(None)
        await self._pump


def recover_executor(executor_id: str) -> list[str]:
    """Have the tool calls of a worker that died for good run again on live workers (they
    go back on the queue; a call that had started answers interrupted unless its tool is
    idempotent). Needs DBOS launched in the calling process. Returns the workflow ids."""
    handles = DBOS._recover_pending_workflows([executor_id])
    return [handle.get_workflow_id() for handle in handles]


def default_executor_id() -> str:
    return f"worker-{socket.gethostname()}-{os.getpid()}"


def run_worker(
    agent: Agent[Any, Any],
    database_url: str,
    *,
    executor_id: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    deps: Any = None,
    grace: float = 5.0,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve the tools queue until SIGTERM or SIGINT (call it from the main thread).

    Launching DBOS recovers this executor id's unfinished calls, so a worker restarted
    with the same ``executor_id`` picks up its own. ``concurrency`` is the queue's
    per-worker limit; DBOS keeps it on the queue, so the last worker started sets it
    for all. The tools get ``deps`` (default: the agent's own ``deps``); ``grace`` is
    how long a cancelled tool may take to stop before its task is cancelled.
    """
    global _host
    _host = _Host(agent, deps if deps is not None else agent.deps, grace)
    DBOS(config=dbos_config(database_url, executor_id or default_executor_id()))
    DBOS.listen_queues([TOOLS_QUEUE])
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        DBOS.launch()
        DBOS.register_queue(
            TOOLS_QUEUE,
            worker_concurrency=concurrency,
            polling_interval_sec=POLL_SECONDS,
            on_conflict="always_update",
        )
        if ready is not None:
            ready()
        stop.wait()
    finally:
        DBOS.destroy(destroy_registry=False)
        _host = None
