"""The worker side of tool workers: ``run_worker`` and the ``callwright.tool`` workflow.

At most once unless idempotent: DBOS steps are at-least-once, so the workflow's
first step only marks the attempt (and records whether the call was taken before the
deadline the web side gave it: one taken later is answered without running, so that a
call the web side gave up on never runs). A worker that dies mid-tool leaves the workflow
PENDING with that mark recorded; when it is recovered (by a live worker's
``take_over``, on a restart with the same executor id, or by ``recover_executor``),
the replayed mark says the tool had started, and the tool step answers
``InDoubt`` (or what its ``reconcile`` hook says) instead of running the tool again,
unless the worker's tool is idempotent.

Recovery uses DBOS's public API only: the gone worker's PENDING calls are listed
(``DBOS.list_workflows``) and resumed on the tools queue (``DBOS.resume_workflow``),
which hands each to whichever live worker dequeues it. Resuming clears the workflow's
owner token and the dequeuing worker writes its own, and DBOS records a step or an
outcome only for the token that owns the workflow: a worker that was only stalled past
its lease (not dead) and finishes the tool later has its result refused by DBOS (which
logs it and waits for the owner's outcome), so a call another worker has taken is
finished and reported once.

Workers run under a DBOS application version of their own (``_crossing.worker_version``)
so that a replica never takes a tool call from any of DBOS's queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbos import DBOS

from ..call import Cancelled, InDoubt, ToolError, ToolNotFound, idempotency_key
from ..context import CancelToken, RunScope, ToolContext
from ..elicitation import InputRequired
from ..state import RunState
from ..tool import Tool, as_result, reconciled
from ..usage import Usage
from ._crossing import (
    DEFAULT_CONCURRENCY,
    POLL_SECONDS,
    PROGRESS_STREAM,
    TOOL_WORKFLOW,
    TOOLS_QUEUE,
    answer_from_payload,
    dbos_config,
    error_payload,
    no_worker_text,
    question_payload,
    result_payload,
)
from ._tracing import worker_span

if TYPE_CHECKING:
    from ..run import Agent
    from ..store import Journal

log = logging.getLogger("callwright.durable")


@dataclass(frozen=True, slots=True)
class _Host:
    """What this process's ``callwright.tool`` workflows run with."""

    agent: Agent[Any, Any]
    deps: Any
    grace: float
    executor_id: str


_host: _Host | None = None
"""Set by ``run_worker``: DBOS is one per process, and so is the agent it serves."""


class _Attempt:
    """Whether this execution of the workflow ran its first step or replayed it."""

    def __init__(self, take_by: float | None) -> None:
        self.first = False
        self.take_by = take_by

    async def begin(self) -> bool:
        """Whether the call was taken by its deadline (``take_by``, the web side's wall
        clock): recorded with the step, so that a recovered attempt decides the same."""
        self.first = True
        return self.take_by is None or time.time() <= self.take_by


@DBOS.workflow(name=TOOL_WORKFLOW)
async def tool_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One call on a worker: mark the attempt, then run the tool (or say it was
    interrupted, when a recovered attempt finds the mark already there, or that it was
    taken too late, when the web side has given up on it)."""
    attempt = _Attempt(request.get("take_by"))
    in_time: bool = await DBOS.run_step_async({"name": "callwright.tool.begin"}, attempt.begin)
    result: dict[str, Any] = await DBOS.run_step_async(
        {"name": "callwright.tool.run"}, _carry_out, request, attempt.first, in_time
    )
    return result


async def _carry_out(request: dict[str, Any], first: bool, in_time: bool) -> dict[str, Any]:
    """The tool step; its stream is closed at the end, which wakes the web side's reader
    at once (the end of a workflow alone is not notified)."""
    try:
        if not in_time:
            log.warning(
                "tool %s, call %s: taken after its deadline (the web side gave up on it); not run",
                request.get("name"),
                request.get("call_id"),
            )
            return error_payload(ToolError(no_worker_text(request.get("wait"))))
        return await _outcome(request, first)
    finally:
        with contextlib.suppress(Exception):
            await DBOS.close_stream_async(PROGRESS_STREAM)


async def _outcome(request: dict[str, Any], first: bool) -> dict[str, Any]:
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
        return await _in_doubt(tool, request)
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
        answer=answer_from_payload(request["answer"]) if request.get("answer") else None,
        idempotency_key=idempotency_key(
            request.get("thread_id") or "", request["call_id"], request["arguments"]
        ),
    )
    traced = worker_span(
        tool.name, request["call_id"], request.get("traceparent"), host.executor_id
    )
    task = asyncio.create_task(
        executor(validated, ctx if tool.uses_context else None),
        context=None if traced is None else traced.context,
    )
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
    outcome = _finished(task, token, host.agent.limits.max_tool_file_bytes)
    if traced is not None:
        traced.end(outcome)
    return outcome


async def _in_doubt(tool: Tool, request: dict[str, Any]) -> dict[str, Any]:
    """A recovered attempt of a call that had started: its ``reconcile`` hook's answer,
    or in doubt."""
    arguments = request["arguments"]
    key = idempotency_key(request.get("thread_id") or "", request["call_id"], arguments)
    result = await reconciled(tool, key, arguments)
    return error_payload(InDoubt()) if result is None else result_payload(result)


def _finished(task: asyncio.Task[Any], token: CancelToken, max_file_bytes: int) -> dict[str, Any]:
    """The tool task's outcome as plain data (its files within the agent's
    ``Limits.max_tool_file_bytes``)."""
    if task.cancelled():
        return error_payload(Cancelled(token.reason))
    error = task.exception()
    if error is None:
        return result_payload(as_result(task.result(), max_file_bytes))
    if isinstance(error, ToolError):
        return error_payload(error)
    if isinstance(error, InputRequired):
        return question_payload(error.request)
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
    """Once the workflow is cancelled, cancel the tool's token, and its task when the
    tool has not stopped within the grace."""
    await _cancellations().wait(wf)
    token.cancel("cancelled")
    await asyncio.sleep(grace)
    task.cancel()


class _Cancellations:
    """Which of this worker's running calls were cancelled: one status query for all of
    them per poll, rather than one per call (DBOS's own preemptible steps do the same,
    but cancel the step's task at once, leaving the tool no grace to stop by itself)."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}
        self._poller: asyncio.Task[None] | None = None

    async def wait(self, wf: str) -> None:
        future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(wf, []).append(future)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll(), context=contextvars.Context())
        try:
            await future
        finally:
            futures = self._waiting.get(wf, [])
            if future in futures:
                futures.remove(future)
            if not futures:
                self._waiting.pop(wf, None)

    async def _poll(self) -> None:
        while self._waiting:
            await asyncio.sleep(POLL_SECONDS)
            ids = list(self._waiting)
            try:
                cancelled = await DBOS.list_workflows_async(
                    workflow_ids=ids, status="CANCELLED", load_input=False, load_output=False
                )
            except Exception:  # a database blip: look again
                continue
            for status in cancelled:
                for future in self._waiting.get(status.workflow_id, []):
                    if not future.done():
                        future.set_result(None)


_watch: dict[asyncio.AbstractEventLoop, _Cancellations] = {}


def _cancellations() -> _Cancellations:
    """The watch of the running loop (DBOS runs a worker's workflows on one loop)."""
    loop = asyncio.get_running_loop()
    if loop not in _watch:
        _watch.clear()  # a loop before this one is closed: nothing of it is waited on
        _watch[loop] = _Cancellations()
    return _watch[loop]


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
    go back on the tools queue; a call that had started answers interrupted unless its
    tool is idempotent). Workers do it for each other (``take_over``); by hand, call it
    where DBOS was launched (``DBOS.launch``) on the workers' database. Returns the
    workflow ids."""
    running = DBOS.list_workflows(
        status="PENDING",
        executor_id=executor_id,
        name=TOOL_WORKFLOW,
        load_input=False,
        load_output=False,
    )
    for workflow in running:
        DBOS.resume_workflow(workflow.workflow_id, queue_name=TOOLS_QUEUE)
    return [workflow.workflow_id for workflow in running]


def default_executor_id() -> str:
    return f"worker-{socket.gethostname()}-{os.getpid()}"


DRAIN_SECONDS = 20.0
"""How long a stopping worker lets its running calls finish (within the 30 s most
orchestrators give a process between SIGTERM and SIGKILL)."""


def run_worker(
    agent: Agent[Any, Any],
    database_url: str,
    *,
    executor_id: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    deps: Any = None,
    grace: float | None = None,
    drain: float = DRAIN_SECONDS,
    ready: Callable[[], None] | None = None,
    stopping: Callable[[], None] | None = None,
) -> None:
    """Serve the tools queue until SIGTERM or SIGINT (call it from the main thread, with
    no event loop running: the worker runs its own, and the tools run on it).

    Launching DBOS recovers this executor id's unfinished calls, so a worker restarted
    with the same ``executor_id`` picks up its own; on Postgres the worker also holds a
    lease and takes over the calls of workers that died for good (``take_over``).
    ``concurrency`` is the queue's per-worker limit; DBOS keeps it on the queue, so the
    last worker started sets it for all. The tools get ``deps`` (default: the agent's own
    ``deps``); ``grace`` is how long a cancelled tool may take to stop before its task is
    cancelled (default: the agent's ``cancel_grace``). On SIGTERM the worker takes no new
    calls and lets the running ones finish for up to ``drain`` seconds. ``ready`` is
    called once it takes calls, ``stopping`` once a signal has stopped it taking them.
    """
    global _host
    deps = deps if deps is not None else agent.deps
    executor_id = executor_id or default_executor_id()
    _host = _Host(agent, deps, agent.cancel_grace if grace is None else grace, executor_id)
    try:
        asyncio.run(_serve(database_url, executor_id, concurrency, ready, drain, stopping))
    finally:
        _host = None


async def _serve(
    database_url: str,
    executor_id: str,
    concurrency: int,
    ready: Callable[[], None] | None,
    drain: float,
    stopping: Callable[[], None] | None = None,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    dbos = DBOS(config=dbos_config(database_url, executor_id))
    DBOS.listen_queues([TOOLS_QUEUE])
    lease: Journal | None = None
    watch: asyncio.Task[None] | None = None
    try:
        lease = await _lease(database_url, executor_id)  # alive before it takes any call
        DBOS.launch()  # on this loop: DBOS runs the dequeued workflows here
        await DBOS.register_queue_async(
            TOOLS_QUEUE,
            worker_concurrency=concurrency,
            polling_interval_sec=POLL_SECONDS,
            on_conflict="always_update",
        )
        if lease is not None:
            watch = asyncio.create_task(_watch_gone(lease, executor_id))
        if ready is not None:
            ready()
        await stop.wait()
        for taking in dbos.background_thread_stop_events:  # the queue threads: no new calls
            taking.set()
        if stopping is not None:
            stopping()
        await _drained(executor_id, drain)
    finally:
        if watch is not None:
            watch.cancel()
        DBOS.destroy(destroy_registry=False)
        if lease is not None:
            lease.close()


async def _drained(executor_id: str, seconds: float) -> None:
    """Wait, up to ``seconds``, until none of this worker's calls is running (whatever
    still runs then is taken over by another worker once this one is gone)."""
    deadline = _loop_time() + seconds
    while _loop_time() < deadline:
        running = await DBOS.list_workflows_async(
            status="PENDING", executor_id=executor_id, load_input=False, load_output=False
        )
        if not running:
            return
        await asyncio.sleep(POLL_SECONDS)


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


# --- workers that die for good ---------------------------------------------------------

WATCH_SECONDS = 0.5
"""How often a worker looks for dead workers' calls (a killed worker on the same host is
seen at once; on another host, when its lease expires)."""


async def _lease(database_url: str, executor_id: str) -> Journal | None:
    """On Postgres, the run journal's lease for this worker (its heartbeat says it is
    alive), so that another process can tell when it died and take its calls over.
    None on SQLite (one host: restart the worker with its id, or ``recover_executor``)."""
    from ..store import open_journal
    from ..store.postgres import is_postgres_url

    if not is_postgres_url(database_url):
        return None
    journal = open_journal(database_url, owner_id=executor_id, settle_gone=False)
    became_owner = journal.submit(_nothing)  # the first write takes the lease
    if became_owner is not None:
        await became_owner
    return journal


def _nothing() -> None:
    return None


async def take_over(journal: Journal, executor_id: str) -> list[str]:
    """Recover here the calls of dead workers: the executors that own running calls and
    whose lease is gone, each claimed through the journal so that exactly one live
    process (a worker or a replica) recovers it. Returns the executor ids taken."""
    running = await DBOS.list_workflows_async(
        status="PENDING", name=TOOL_WORKFLOW, load_input=False, load_output=False
    )
    owners = sorted({w.executor_id for w in running if w.executor_id} - {executor_id})
    taken: list[str] = []
    for owner in owners:
        claimed = journal.submit(journal.claim, owner)
        if claimed is not None and await claimed:
            log.warning("taking over the tool calls of gone worker %s", owner)
            await asyncio.to_thread(recover_executor, owner)
            taken.append(owner)
    return taken


async def _watch_gone(journal: Journal, executor_id: str) -> None:
    while True:
        try:
            await take_over(journal, executor_id)
        except Exception:  # a database restart: look again on the next tick
            log.warning("could not look for gone workers", exc_info=True)
        await asyncio.sleep(WATCH_SECONDS)
