"""``DurableRuntime``: DBOS in a web replica — segments as workflows, and taking over the
workflows of a process that died for good.

DBOS recovers a workflow on the executor that owned it when that executor starts
again with the same id. A replica that never comes back needs another live process
to take its work over; DBOS leaves the choice of that process to the deployment
(its own recovery API, ``_recover_pending_workflows``, is what its admin endpoint
and its hosted control plane call). Here the choice is the run journal's: each
process's executor id is its journal owner id, whose lease its heartbeat renews;
the watch loop asks the journal for owners that are gone with segments still
running, ``claim`` lets exactly one live process win each, and the winner asks
DBOS to recover that executor's workflows, which continue the segments
(``_segment``). No second scheduler decides anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from dbos import DBOS
from sqlalchemy.exc import DBAPIError

from ..store import Journal, Started, database_errors
from ._rows import WORKFLOW_NAME, WorkflowRows, prune
from ._segment import SegmentSpec, continued_run, drive
from ._workers import is_proxy

if TYPE_CHECKING:
    from ..run import Agent

log = logging.getLogger("callwright.durable")
T = TypeVar("T")

WATCH_SECONDS = 0.5
"""How often a replica looks for gone owners (a killed process on the same host is seen
at once; on another host, when its lease expires)."""


def new_executor_id() -> str:
    """A process's executor id when none is configured: unique, and readable in logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


KEEP_WORKFLOWS_SECONDS = 3600.0
"""How long an ended workflow's rows stay in DBOS's tables."""

REOPEN_ATTEMPTS = 8
"""How often a recovered segment tries to take its run over before its workflow fails."""

_runtime: DurableRuntime | None = None
"""The process's runtime: DBOS is one per process, and so are its workflows' hosts."""


class DurableRuntime:
    """Runs an agent's segments as DBOS workflows on one Postgres shared by replicas.

    Create it with the journal (opened with ``owner_id=executor_id`` and
    ``settle_gone=False``) and give it to ``Endpoints(durable=...)``; the endpoints'
    lifespan launches and closes it.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        journal: Journal,
        database_url: str,
        executor_id: str,
        *,
        watch_seconds: float = WATCH_SECONDS,
        freeze_heap: bool = True,
        keep_workflows: float = KEEP_WORKFLOWS_SECONDS,
        deps_factory: Callable[[Any, str | None], Any] | None = None,
    ) -> None:
        self.agent = agent
        self.journal = journal
        self.database_url = database_url
        self.executor_id = executor_id
        """This process's DBOS executor id, which is also its journal owner id."""
        self.watch_seconds = watch_seconds
        self.freeze_heap = freeze_heap
        """Whether ``launch`` moves the objects alive after start-up out of the garbage
        collector's sight (``gc.freeze``). DBOS, SQLAlchemy and psycopg make a heap
        twice the size of a server without them, which every full collection walked
        again under load: 15 to 20 % of a replica's CPU at 1,000 concurrent runs. Off
        for an application that relies on the collector freeing cycles made before."""
        self.keep_workflows = keep_workflows
        """Seconds an ended segment's or tool call's workflow rows are kept before the
        watch loop deletes them (a few hundred bytes and a row in each of DBOS's indexes
        per workflow; DBOS itself deletes nothing). A tool call's are kept while the
        journal has a call of its run planned or started: a segment continued later makes
        the call again and takes the result from its workflow."""
        self.deps_factory = deps_factory
        """``deps_factory(None, principal)`` (sync or async): the deps of a run this process
        continues for another (no request here, only the principal the journal kept), so
        that a run has the same deps on every replica. ``Endpoints`` hands over its own
        ``deps_factory`` when this is None. None: the agent's own deps."""
        self._next_prune = 0.0
        self._local: dict[str, str] = {}
        """Request ids of the segments this process streams, with their rows' owner tokens."""
        self._rows = WorkflowRows()
        self._watch: asyncio.Task[None] | None = None
        self.recovered: list[str] = []
        """Executor ids this process took over (for logs and tests)."""
        self.launched = False
        """Whether DBOS runs here (``launch`` done, ``close`` not yet): what a readiness
        probe asks."""

    # --- lifecycle -------------------------------------------------------------------

    def launch(self) -> None:
        """Start DBOS (which recovers this executor's own unfinished workflows) and the
        watch for gone processes. Call it on the serving event loop."""
        global _runtime
        if _runtime is not None and _runtime is not self:
            raise RuntimeError("one DurableRuntime per process (DBOS is one per process)")
        _runtime = self
        DBOS(
            config={
                "name": "callwright",
                "system_database_url": self.database_url,
                "executor_id": self.executor_id,
                "log_level": "WARNING",
            }
        )
        DBOS.listen_queues([])  # DBOS's own queues only: the tools queue is the workers'
        DBOS.launch()
        if self.freeze_heap:
            gc.collect()
            gc.freeze()
        self._rows.start()
        self._watch = asyncio.get_running_loop().create_task(self._watch_gone())
        self.launched = True

    async def close(self) -> None:
        global _runtime
        self.launched = False
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._rows.close()
        DBOS.destroy(destroy_registry=False)
        _runtime = None

    # --- a request's segment ---------------------------------------------------------

    async def begin(self, spec: SegmentSpec) -> bool:
        """Record the segment as a PENDING workflow of this executor before it runs (the
        request's stream runs it and calls ``finished``). False when this process
        already runs a segment of that request id (the journal refuses the request).
        A database that cannot be reached raises what the journal's would (one of
        ``database_errors()``), which the server answers with 503 ``journal_unavailable``."""
        if spec.request_id in self._local:
            return False
        self._local[spec.request_id] = ""
        try:
            self._local[spec.request_id] = await self._rows.record(spec)
        except DBAPIError as exc:  # the database is down: the driver's error, as the journal's
            self._local.pop(spec.request_id, None)
            if isinstance(exc.orig, database_errors()):
                raise exc.orig from None
            raise
        except BaseException:
            self._local.pop(spec.request_id, None)
            raise
        return True

    def finished(self, request_id: str, status: str | None) -> None:
        owner = self._local.pop(request_id, None)
        if owner:
            self._rows.end(f"seg:{request_id}", owner)

    async def carry(self, spec: SegmentSpec) -> str:
        """The workflow's body where DBOS runs it: recovery, here or in another process
        (a segment streamed here has a row but is not run by DBOS)."""
        if spec.request_id in self._local:
            return "streamed here"
        # a call on a worker may be made again: it attaches to the worker's (``_workers``)
        idempotent = {t.name for t in self.agent.toolbox if t.idempotent or is_proxy(t)}
        started = await self._reopen(spec.request_id, idempotent)
        if started is None:
            return "finished elsewhere"
        log.info("continuing run %s of thread %s", spec.request_id, spec.thread_id)
        try:
            deps = await self._deps(started.segment.principal or None)
            run = continued_run(self.agent, started, spec, deps)
        except BaseException:
            await self._write(self.journal.release, started.segment, [])  # nothing runs it
            raise
        return await drive(self.journal, run, started, spec)

    async def _deps(self, principal: str | None) -> Any:
        if self.deps_factory is None:
            return None
        deps = self.deps_factory(None, principal)
        return await deps if inspect.isawaitable(deps) else deps

    async def _reopen(self, request_id: str, idempotent: set[str]) -> Started | None:
        """``Journal.reopen``, tried again while the database refuses it (a deadlock
        aborted by Postgres, a restart): the segment must not stay running unowned."""
        for attempt in range(REOPEN_ATTEMPTS):
            try:
                return await self._write(self.journal.reopen, request_id, idempotent)
            except database_errors():
                if attempt == REOPEN_ATTEMPTS - 1:
                    raise
                log.warning("could not reopen run %s; trying again", request_id, exc_info=True)
                await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
        return None

    # --- taking over gone processes --------------------------------------------------

    async def take_over(self) -> list[str]:
        """Claim the gone owners' work and have DBOS recover it here. Returns their ids."""
        taken: list[str] = []
        for owner in await asyncio.to_thread(self.journal.gone_owners):
            if owner == self.executor_id:
                continue
            if await self._write(self.journal.claim, owner):
                log.warning("taking over the workflows of gone executor %s", owner)
                # it re-enqueues them (database writes): off the loop, like the journal's
                await asyncio.to_thread(DBOS._recover_pending_workflows, [owner])
                taken.append(owner)
        self.recovered.extend(taken)
        return taken

    async def prune(self) -> int:
        """Delete the workflow rows of segments and tool calls that ended more than
        ``keep_workflows`` ago (a batch at a time); returns how many."""
        before = time.time() - self.keep_workflows
        return await asyncio.to_thread(prune, before, self.journal.with_open_calls)

    async def _watch_gone(self) -> None:
        while True:
            try:
                await self.take_over()
            except Exception:  # a database restart: try again on the next tick
                log.warning("could not look for gone executors", exc_info=True)
            if time.monotonic() >= self._next_prune:
                self._next_prune = time.monotonic() + min(60.0, self.keep_workflows / 4)
                try:
                    await self.prune()
                except Exception:
                    log.warning("could not delete ended workflows", exc_info=True)
            await asyncio.sleep(self.watch_seconds)

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        submitted = self.journal.submit(fn, *args)
        assert submitted is not None  # on the event loop
        return await submitted


@DBOS.workflow(name=WORKFLOW_NAME)
async def segment_workflow(spec: dict[str, Any]) -> str:
    """One run segment (see ``_segment``)."""
    if _runtime is None:
        raise RuntimeError("no DurableRuntime launched in this process")
    return await _runtime.carry(SegmentSpec(**spec))
