"""``DurableRuntime``: a web replica that continues the runs of processes that died.

One mechanism decides who continues a dead process's segments: the run journal. Each
process's executor id is its journal owner id, whose lease its heartbeat renews; each
segment's row holds its ``SegmentSpec``, written in the transaction that begins it.
The watch loop asks the journal for the running segments whose owner is gone
(``orphans``), ``claim`` lets exactly one live process win each gone owner, and the
winner continues its segments itself (``reopen``, then ``_segment.continued_run`` and
``drive``). DBOS keeps what the journal does not: the tool workers' queue and streams
(``_workers``, ``_worker``), through its public API only.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
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

from ..store import Journal, Orphan, Started, database_errors
from ._crossing import TOOL_WORKFLOW, request_of
from ._reconnect import engine_kwargs
from ._segment import SegmentSpec, continued_run, drive
from ._workers import is_proxy

if TYPE_CHECKING:
    from ..run import Agent, Run

log = logging.getLogger("callwright.durable")
T = TypeVar("T")

WATCH_SECONDS = 0.5
"""How often a replica looks for gone owners (a killed process on the same host is seen
at once; on another host, when its lease expires)."""


def new_executor_id() -> str:
    """A process's executor id when none is configured: unique, and readable in logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


KEEP_WORKFLOWS_SECONDS = 3600.0
"""How long an ended tool call's workflow rows stay in DBOS's tables."""

REOPEN_ATTEMPTS = 8
"""How often a continued segment tries to take its run over in one watch tick (the next
tick tries again while the segment is still the gone owner's)."""

_runtime: DurableRuntime | None = None
"""The process's runtime: DBOS is one per process."""


class DurableRuntime:
    """Continues the segments of replicas that died, on one Postgres shared by replicas.

    Create it with the journal (opened with ``owner_id=executor_id`` and
    ``settle_gone=False``) and give it to ``Endpoints(durable=...)``; the endpoints'
    lifespan launches and closes it, and give each request's segment a ``SegmentSpec``
    (``Journal.begin(spec=...)``) so that another replica can continue it.
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
        """Seconds an ended tool call's workflow rows are kept before the watch loop
        deletes them (a few hundred bytes and a row in each of DBOS's indexes per
        workflow; DBOS itself deletes nothing). They are kept while the journal has a
        call of its run planned or started: a segment continued later makes the call
        again and takes the result from its workflow."""
        self.deps_factory = deps_factory
        """``deps_factory(None, principal)`` (sync or async): the deps of a run this process
        continues for another (no request here, only the principal the journal kept), so
        that a run has the same deps on every replica. ``Endpoints`` hands over its own
        ``deps_factory`` when this is None. None: the agent's own deps."""
        self.on_continue: Callable[[Run[Any, Any], str | None], Callable[[], None]] | None = None
        """Called with each run this process continues for another and its principal,
        before the run goes on; returns what to call once it has ended. ``Endpoints``
        sets it so that a continued run's calls can be stopped here (``POST /runs/{run_id}/
        calls/{call_id}/cancel``) like those of a run streamed here."""
        self._next_prune = 0.0
        self._carrying: dict[str, asyncio.Task[str]] = {}
        """The segments this process continues for gone owners, by request id."""
        self._own_looked = False
        """Whether the watch looked for segments left under this process's own id (a
        former process with the same executor id): once, at the first tick."""
        self._watch: asyncio.Task[None] | None = None
        self.recovered: list[str] = []
        """Executor ids this process took over (for logs and tests)."""
        self.launched = False
        """Whether DBOS runs here (``launch`` done, ``close`` not yet): what a readiness
        probe asks."""

    # --- lifecycle -------------------------------------------------------------------

    def launch(self) -> None:
        """Start DBOS (for pruning the tool workers' workflows; the replica listens to no
        queue) and the watch for gone processes, which first continues the segments a
        former process with this executor id left. Call it on the serving event loop."""
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
                "db_engine_kwargs": engine_kwargs(self.database_url, "callwright"),
            }
        )
        DBOS.listen_queues([])  # DBOS's own queues only: the tools queue is the workers'
        DBOS.launch()
        if self.freeze_heap:
            gc.collect()
            gc.freeze()
        self._watch = asyncio.get_running_loop().create_task(self._watch_gone())
        self.launched = True

    async def close(self) -> None:
        """Stop the watch and the segments continued here (each is settled as
        interrupted, as a request's stream is when the server stops)."""
        global _runtime
        self.launched = False
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        carrying = list(self._carrying.values())
        for task in carrying:
            task.cancel()
        await asyncio.gather(*carrying, return_exceptions=True)
        DBOS.destroy(destroy_registry=False)
        _runtime = None

    # --- continuing a gone process's segment -----------------------------------------

    async def carry(self, spec: SegmentSpec) -> str:
        """Continue the segment here from the journal, to its end. Returns its status, or
        why it was not continued (the journal declined: its owner is live after all, or
        it is no longer running)."""
        # a call on a worker may be made again: it attaches to the worker's (``_workers``)
        idempotent = {t.name for t in self.agent.toolbox if t.idempotent or is_proxy(t)}
        started = await self._reopen(spec.request_id, spec.principal, idempotent)
        if started is None:
            return "declined"
        log.info("continuing run %s of thread %s", spec.request_id, spec.thread_id)
        try:
            deps = await self._deps(started.segment.principal or None)
            run = continued_run(self.agent, started, spec, deps)
        except BaseException:
            await self._write(self.journal.release, started.segment, [])  # nothing runs it
            raise
        if self.on_continue is None:
            return await drive(self.journal, run, started, spec)
        ended = self.on_continue(run, started.segment.principal or None)
        try:
            return await drive(self.journal, run, started, spec)
        finally:
            ended()

    async def _deps(self, principal: str | None) -> Any:
        if self.deps_factory is None:
            return None
        deps = self.deps_factory(None, principal)
        return await deps if inspect.isawaitable(deps) else deps

    async def _reopen(
        self, request_id: str, principal: str, idempotent: set[str]
    ) -> Started | None:
        """``Journal.reopen``, tried again while the database refuses it (a deadlock
        aborted by Postgres, a restart); the next watch tick tries again after that."""
        reopen = functools.partial(self.journal.reopen, principal=principal)
        for attempt in range(REOPEN_ATTEMPTS):
            try:
                return await self._write(reopen, request_id, idempotent)
            except database_errors():
                if attempt == REOPEN_ATTEMPTS - 1:
                    raise
                log.warning("could not reopen run %s; trying again", request_id, exc_info=True)
                await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
        return None

    # --- taking over gone processes --------------------------------------------------

    async def take_over(self) -> list[str]:
        """Claim the gone owners of orphaned segments and continue the segments of those
        this process wins (in tasks of their own). Returns the owners won this time."""
        own = not self._own_looked
        orphans = await asyncio.to_thread(functools.partial(self.journal.orphans, own=own))
        self._own_looked = True
        won: list[str] = []
        for owner in sorted({o.owner for o in orphans} - {self.executor_id}):
            if await self._write(self.journal.claim, owner):
                won.append(owner)
        for orphan in orphans:
            if orphan.owner in won or orphan.owner == self.executor_id:
                self._continue(orphan)
        taken = [owner for owner in won if owner not in self.recovered]
        for owner in taken:
            log.warning("taking over the runs of gone executor %s", owner)
        self.recovered.extend(taken)
        return won

    def _continue(self, orphan: Orphan) -> None:
        """Continue the orphan in a task, unless this process already does; settle it
        when it has no spec this version can read (nothing could continue it)."""
        if orphan.request_id in self._carrying:
            return
        loop = asyncio.get_running_loop()
        try:
            spec = SegmentSpec.from_json(orphan.spec)
        except ValueError:
            task = loop.create_task(self._settled(orphan))
        else:
            task = loop.create_task(self._carried(spec))
        self._carrying[orphan.request_id] = task

    async def _settled(self, orphan: Orphan) -> str:
        try:
            settle = functools.partial(self.journal.settle_orphan, principal=orphan.principal)
            if await self._write(settle, orphan.request_id):
                log.warning(
                    "run %s has no spec to continue it (begun by an older version?): "
                    "settled as interrupted; the next request on its thread resumes it",
                    orphan.request_id,
                )
                return "interrupted"
            return "declined"
        except Exception:
            log.warning("could not settle run %s", orphan.request_id, exc_info=True)
            return "failed"
        finally:
            self._carrying.pop(orphan.request_id, None)

    async def _carried(self, spec: SegmentSpec) -> str:
        try:
            return await self.carry(spec)
        except Exception:
            log.warning("could not continue run %s", spec.request_id, exc_info=True)
            return "failed"
        finally:
            self._carrying.pop(spec.request_id, None)

    async def prune(self) -> int:
        """Delete the workflow rows of tool calls that ended more than ``keep_workflows``
        ago (a batch at a time); returns how many."""
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


def prune(
    ended_before: float,
    with_open_calls: Callable[[list[str]], set[str]],
    limit: int = 1000,
) -> int:
    """Delete up to ``limit`` tool workflows that ended before ``ended_before`` (a Unix
    time); returns how many. One is kept while its segment's run has a call planned or
    started (the journal's ``with_open_calls``): a continued segment makes the call once
    more and reads the result from the workflow. DBOS itself keeps every row it is given."""
    ended = datetime.datetime.fromtimestamp(ended_before, datetime.UTC).isoformat()
    tools = DBOS.list_workflows(
        name=TOOL_WORKFLOW,
        status=["SUCCESS", "ERROR", "CANCELLED"],
        completed_before=ended,
        limit=limit,
        load_input=False,
        load_output=False,
    )
    requests = {row.workflow_id: request_of(row.workflow_id) for row in tools}
    still = with_open_calls(sorted(set(requests.values())))
    done = [workflow for workflow, request in requests.items() if request not in still]
    if done:
        DBOS.delete_workflows(done)
    return len(done)
