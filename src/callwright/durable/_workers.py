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

A call no worker takes does not wait silently: after ``WORKER_NOTICE_SECONDS`` it
reports progress saying so and logs a warning, and after ``worker_wait`` it fails with
an error the model can act on and its workflow is cancelled. The workers were given
that deadline with the call, and one that takes it later answers without running the
tool: the call never runs after the web side gave up on it, and a call a worker took
in time is waited for, never reported failed.

The web side talks to DBOS through a ``DBOSClient``: it needs no launched DBOS,
and it never records steps in a workflow of the calling process (a segment's).

At most once unless idempotent, whatever dies: see ``_worker``. One trace across both
processes: see ``_tracing``.

What does not cross: a worker's tool gets the worker's own deps (the agent's
``deps``, or ``run_worker(deps=...)``), a fresh state document, and no sub-agent
event forwarding. A tool that asks a human (``InputRequired``) pauses the run as in one
process; the answer runs the call again (under a workflow id of its own) on any
worker, without the question's ``state``, which stayed in the process that asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbos import DBOSClient, EnqueueOptions, WorkflowHandleAsync

from ..call import Cancelled, ToolError
from ..context import ToolContext
from ..tool import Tool
from ..toolbox import Toolbox
from ._crossing import (
    CLOCK_MARGIN_SECONDS,
    NOTIFIED_POLL_SECONDS,
    POLL_SECONDS,
    PROGRESS_STREAM,
    TAKEN_TEXT,
    TOOL_WORKFLOW,
    TOOLS_QUEUE,
    WAITING_TEXT,
    WORKER_NOTICE_SECONDS,
    WORKER_VERSION,
    WORKER_WAIT_SECONDS,
    answer_key,
    answer_payload,
    no_worker_text,
    outcome,
    workflow_id,
)
from ._reconnect import client_engine
from ._tracing import current_traceparent

if TYPE_CHECKING:
    import sqlalchemy

    from ..run import Agent

log = logging.getLogger("callwright.durable")

TAKEN_POLL_SECONDS = 1.0
"""How often a call no worker has taken yet looks again, once it has said so."""


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
    poll_seconds: float | None = None
    """How often a waiting call reads its stream when nothing woke it (default: 1 s on
    Postgres, which notifies, 0.1 s on SQLite, which cannot)."""
    worker_wait: float | None = WORKER_WAIT_SECONDS
    """Seconds a call waits for a worker to take it. After ``WORKER_NOTICE_SECONDS`` it
    reports progress saying it waits (and logs a warning); after ``worker_wait`` it fails
    with an error the model sees (no worker took it) and is withdrawn from the queue: a
    worker started later never runs it. None: wait as long as the tool's timeout. A
    tool's timeout still applies when it is shorter."""
    notice_seconds: float = WORKER_NOTICE_SECONDS
    """After how long a call no worker has taken says so."""
    _client: DBOSClient | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)
    _engine: sqlalchemy.Engine | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.worker_wait is not None and self.worker_wait < 0:
            raise ValueError("worker_wait must be a number of seconds (0 or more), or None")

    def runs_on_workers(self, tool: Tool) -> bool:
        """Whether ``apply`` proxies the tool (never one it proxied already)."""
        if tool.client or tool.executor is None or is_proxy(tool):
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

        execute = _Proxy(self, tool.name).run
        return dataclasses.replace(tool, executor=execute, validator=validate, uses_context=True)

    async def client(self) -> DBOSClient:
        """The process's client, made on first use (it connects when made)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None:
                self._client = await asyncio.to_thread(self._connect)
        return self._client

    def _connect(self) -> DBOSClient:
        """A client whose connections to Postgres open again as soon as it answers after
        an outage (``_reconnect``), rather than after DBOS's own backoff."""
        if not self._notified:
            return DBOSClient(system_database_url=self.database_url, application_name="callwright")
        engine = client_engine(self.database_url, "callwright")
        try:
            client = DBOSClient(
                system_database_engine=engine, application_name="callwright", use_listen_notify=True
            )
        except BaseException:
            engine.dispose()
            raise
        self._engine = engine
        return client

    @property
    def _notified(self) -> bool:
        return self.database_url.startswith("postgres")

    @property
    def _poll(self) -> float:
        if self.poll_seconds is not None:
            return self.poll_seconds
        return NOTIFIED_POLL_SECONDS if self._notified else POLL_SECONDS

    def close(self) -> None:
        if self._client is not None:
            self._client.destroy()
            self._client = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    async def call(self, name: str, arguments: dict[str, Any], ctx: ToolContext[Any]) -> Any:
        """Run one call on a worker: enqueue, relay its stream, return its result."""
        run = ctx.run
        # outside a run nothing retries the call, and call ids may repeat (MCP request ids)
        wf = workflow_id(run.run_id if run is not None else uuid.uuid4().hex, ctx.call_id)
        if ctx.answer is not None:  # the call runs again with a human's answer
            wf += ":" + answer_key(ctx.answer)
        request = {
            "name": name,
            "arguments": arguments,
            "call_id": ctx.call_id,
            "run_id": run.run_id if run is not None else "",
            "thread_id": run.thread_id if run is not None else "",
            "meta": ctx.meta,
            "scope": ctx.scope,
            "traceparent": current_traceparent(),
            "answer": None if ctx.answer is None else answer_payload(ctx.answer),
            # a worker that takes the call later answers without running it (see _worker)
            "take_by": None if self.worker_wait is None else time.time() + self.worker_wait,
            "wait": self.worker_wait,
        }
        options: EnqueueOptions = {
            "queue_name": TOOLS_QUEUE,
            "workflow_name": TOOL_WORKFLOW,
            "workflow_id": wf,
            "app_version": WORKER_VERSION,
        }
        try:
            client = await self.client()
            handle: WorkflowHandleAsync[dict[str, Any]] = await client.enqueue_async(
                options, request
            )
        except Exception as exc:
            raise _unreachable(exc) from None
        return outcome(await self._follow(client, handle, ctx))

    async def _follow(
        self, client: DBOSClient, handle: WorkflowHandleAsync[dict[str, Any]], ctx: ToolContext[Any]
    ) -> dict[str, Any]:
        """Relay the call's stream until it ends, then its output; cancel it when the
        call is cancelled or its task is (a timeout); fail it when no worker takes it."""
        wf = handle.get_workflow_id()
        relay = asyncio.create_task(self._relay(client, wf, ctx))
        cancelled = asyncio.create_task(ctx.cancel.wait())
        waiting = asyncio.create_task(self._until_taken(client, handle, ctx))
        try:
            watched = {relay, cancelled, waiting}
            while not (relay.done() or cancelled.done()):
                await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                if waiting.done():
                    watched.discard(waiting)
                    waiting.result()  # raises when no worker took the call in time
            if not relay.done():
                await _cancel(client, wf)
                raise Cancelled(ctx.cancel.reason)
            if (error := relay.exception()) is not None:
                raise _unreachable(error) from None
            try:
                payload: dict[str, Any] = await handle.get_result(polling_interval_sec=POLL_SECONDS)
            except Exception as exc:  # the workflow itself failed or was cancelled
                raise _workflow_error(exc) from None
        except asyncio.CancelledError:  # the call's timeout, or the run stopped it
            await asyncio.shield(_cancel(client, wf))
            raise
        finally:
            relay.cancel()
            cancelled.cancel()
            waiting.cancel()
        return payload

    async def _until_taken(
        self, client: DBOSClient, handle: WorkflowHandleAsync[dict[str, Any]], ctx: ToolContext[Any]
    ) -> None:
        """Return once a worker has taken the call (its workflow left ``ENQUEUED``). Until
        then: after ``notice_seconds`` say so (progress, a warning); after ``worker_wait``
        withdraw it and raise the error the model sees. The deadline the workers were
        given has passed by then (``CLOCK_MARGIN_SECONDS``), so a worker that takes it
        between the look and the cancel answers without running it; one that took it
        in time makes the look see it taken, and the call goes on waiting for it."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        notice = started + self.notice_seconds
        deadline = None
        if self.worker_wait is not None:
            deadline = started + self.worker_wait + CLOCK_MARGIN_SECONDS
        wake = min(notice, deadline) if deadline is not None else notice
        noticed = False
        while True:
            await asyncio.sleep(max(0.0, wake - loop.time()))
            wake = loop.time() + TAKEN_POLL_SECONDS
            status = await _status(handle)
            if status is not None and status != "ENQUEUED":
                if noticed:  # the client was told it waits: tell it the wait is over
                    ctx.progress(TAKEN_TEXT, None)
                return
            if not noticed and loop.time() >= notice:
                noticed = True
                ctx.progress(WAITING_TEXT, None)
                log.warning(
                    "tool %s, call %s: no tool worker has taken it after %g s (queue %s)",
                    ctx.tool_name,
                    ctx.call_id,
                    self.notice_seconds,
                    TOOLS_QUEUE,
                )
            if status == "ENQUEUED" and deadline is not None and loop.time() >= deadline:
                await _cancel(client, handle.get_workflow_id())
                log.warning(
                    "tool %s, call %s: no tool worker took it within %g s; withdrawn from queue %s",
                    ctx.tool_name,
                    ctx.call_id,
                    self.worker_wait,
                    TOOLS_QUEUE,
                )
                raise ToolError(no_worker_text(self.worker_wait))

    async def _relay(self, client: DBOSClient, wf: str, ctx: ToolContext[Any]) -> None:
        """Progress and partial outputs in the order the worker wrote them, until the
        workflow ends (a recovered call that ran again reports its progress again)."""
        async for item in client.read_stream_async(
            wf, PROGRESS_STREAM, polling_interval_sec=self._poll
        ):
            if item.get("kind") == "update":
                ctx.update(item.get("value"))
            else:
                ctx.progress(str(item.get("text", "")), item.get("fraction"))


@dataclass(frozen=True, slots=True)
class _Proxy:
    """A proxy's code: a bound coroutine method, so ``Tool`` keeps it on the loop and
    ``is_proxy`` knows it."""

    workers: ToolWorkers
    name: str

    async def run(self, arguments: Any, ctx: ToolContext[Any] | None) -> Any:
        assert ctx is not None  # uses_context
        return await self.workers.call(self.name, arguments, ctx)


def is_proxy(tool: Tool) -> bool:
    """Whether the tool's calls run on workers (it is a proxy ``ToolWorkers`` made)."""
    return isinstance(getattr(tool.executor, "__self__", None), _Proxy)


async def _status(handle: WorkflowHandleAsync[dict[str, Any]]) -> str | None:
    """The workflow's DBOS status (``ENQUEUED``, ``PENDING``...), None when it cannot be
    read now (a database blip: the caller looks again)."""
    try:
        return str((await handle.get_status()).status)
    except Exception:
        return None


async def _cancel(client: DBOSClient, wf: str) -> None:
    with contextlib.suppress(Exception):  # already finished, or the database is gone
        await client.cancel_workflow_async(wf)


def _unreachable(exc: BaseException) -> ToolError:
    """The database the workers listen on failed the call: named by its error's type
    only (a database error's text may carry the URL, and the model sees this)."""
    return ToolError(f"the tool workers could not be reached ({type(exc).__name__})")


def _workflow_error(exc: Exception) -> ToolError:
    if "cancel" in type(exc).__name__.lower():
        return Cancelled()
    return ToolError(f"the tool worker failed: {exc}")


ALL_TOOLS_ENV = "CALLWRIGHT_ALL_TOOLS_ON_WORKERS"
"""The deployment-wide setting: ``1`` (or ``true``, ``yes``) runs every tool with its own
code on workers. An environment variable, so every replica of a deployment reads the
same value from where the deployment is configured."""


def use_tool_workers(
    agent: Agent[Any, Any],
    database_url: str,
    *,
    all_tools: bool | None = None,
    worker_wait: float | None = WORKER_WAIT_SECONDS,
) -> ToolWorkers:
    """Run the agent's ``on_workers`` tools (or all of them, with ``all_tools``; by default
    as ``$CALLWRIGHT_ALL_TOOLS_ON_WORKERS`` says) on workers. Call it in the web process
    only: a worker runs the agent's own tools. ``worker_wait``: seconds a call waits for
    a worker to take it before it fails and is withdrawn (see ``ToolWorkers``)."""
    if all_tools is None:
        all_tools = os.environ.get(ALL_TOOLS_ENV, "").strip().lower() in ("1", "true", "yes")
    workers = ToolWorkers(database_url, all_tools=all_tools, worker_wait=worker_wait)
    workers.apply(agent.toolbox)
    return workers
