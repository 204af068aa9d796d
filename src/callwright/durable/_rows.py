"""The workflow rows of the segments a replica runs itself, written in batches.

A segment that starts on a replica is streamed by the request that started it; DBOS
only has to know that it exists, so that another process can recover it if this one
dies (``DBOS._recover_pending_workflows`` re-enqueues this executor's PENDING rows
and whoever dequeues one runs ``callwright.segment`` on its input). That takes a
PENDING row before the journal begins the segment and a SUCCESS row once it ends.

``DBOS.start_workflow_async`` would write the same rows, but it also runs the
workflow function here and hops to a thread for each write: about 3 ms of CPU per
workflow, as much as the whole in-memory run. Here the rows of every segment that
starts (or ends) while the last batch was written go in one transaction, one
multi-row statement per table. The status is built by DBOS
(``_assemble_workflow_status``: name, executor, application version, serialized
input); ``_row`` names the columns DBOS's ``_insert_workflow_status`` writes for a
workflow it runs at once, and an end sets what ``update_workflow_outcome`` sets
(SUCCESS, no owner) without an output row: nobody reads a streamed segment's result.
These are DBOS internals, hence the ``dbos>=3.4,<4`` pin; the durable tests
recover such rows with DBOS's own recovery (kill a replica, a restart) every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa
from dbos import DBOS
from dbos._context import DBOSContext
from dbos._core import _assemble_workflow_status
from dbos._dbos import _get_dbos_instance
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ._crossing import TOOL_WORKFLOW, request_of
from ._segment import SegmentSpec

log = logging.getLogger("callwright.durable")

WORKFLOW_NAME = "callwright.segment"
"""The name ``segment_workflow`` is registered under (what recovery looks up)."""


@dataclass(slots=True)
class _Start:
    spec: SegmentSpec
    future: asyncio.Future[str]
    """Resolved with the row's owner token once the row is committed."""


@dataclass(slots=True)
class _End:
    workflow_id: str
    owner: str


class WorkflowRows:
    """Group commit for segment workflow rows, on the serving event loop.

    One flush runs at a time; what arrives while it runs goes in the next one, so a
    thousand segments starting together cost a few transactions, not a thousand.
    """

    def __init__(self) -> None:
        self._starts: list[_Start] = []
        self._ends: list[_End] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._flush_forever())

    async def close(self) -> None:
        """Write what is queued, then stop."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        if self._starts or self._ends:
            with contextlib.suppress(Exception):
                await self._flush()

    async def record(self, spec: SegmentSpec) -> str:
        """Write the segment's PENDING row of this executor; returns its owner token."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._starts.append(_Start(spec, future))
        self._wake.set()
        return await future

    def end(self, workflow_id: str, owner: str) -> None:
        """Mark the workflow SUCCESS (soon: nobody waits for it; a row left PENDING by a
        crash is recovered and finds its segment closed in the journal)."""
        self._ends.append(_End(workflow_id, owner))
        self._wake.set()

    async def _flush_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._flush()

    async def _flush(self) -> None:
        starts, self._starts = self._starts, []
        ends, self._ends = self._ends, []
        try:
            owners = await asyncio.to_thread(_write, [s.spec for s in starts], ends)
        except Exception as exc:
            for start in starts:
                if not start.future.done():
                    start.future.set_exception(exc)
            log.warning("could not write %d workflow rows", len(starts) + len(ends))
            return
        for start, owner in zip(starts, owners, strict=True):
            if not start.future.done():
                start.future.set_result(owner)


def _write(specs: list[SegmentSpec], ends: list[_End]) -> list[str]:
    """The new rows, then the ends, each kind in one statement."""
    sys_db = _get_dbos_instance()._sys_db
    ws, inputs = sys_db.tables.workflow_status, sys_db.tables.workflow_input
    owners = [str(uuid.uuid4()) for _ in specs]
    with sys_db.engine.begin() as conn:
        if specs:
            statuses = [_status(spec) for spec in specs]
            rows = [_row(status, owner) for status, owner in zip(statuses, owners, strict=True)]
            keep = ["workflow_uuid"]
            conn.execute(pg_insert(ws).on_conflict_do_nothing(index_elements=keep), rows)
            conn.execute(
                pg_insert(inputs).on_conflict_do_nothing(index_elements=keep),
                [{"workflow_uuid": s["workflow_uuid"], "inputs": s["inputs"]} for s in statuses],
            )
        if ends:
            now = int(time.time() * 1000)
            conn.execute(
                sa.update(ws)
                .where(
                    sa.tuple_(ws.c.workflow_uuid, ws.c.owner_xid).in_(
                        [(end.workflow_id, end.owner) for end in ends]
                    )
                )
                .where(ws.c.status == "PENDING")
                .values(
                    status="SUCCESS",
                    deduplication_id=None,
                    owner_xid=None,
                    updated_at=now,
                    completed_at=now,
                )
            )
    return owners


def _status(spec: SegmentSpec) -> Any:
    """The status ``DBOS.start_workflow_async(segment_workflow, asdict(spec))`` builds."""
    return _assemble_workflow_status(
        _get_dbos_instance(),
        DBOSContext(),
        inputs={"args": (asdict(spec),), "kwargs": {}},
        wf_name=WORKFLOW_NAME,
        class_name=None,
        config_name=None,
        queue=None,
        workflow_timeout_ms=None,
        workflow_deadline_epoch_ms=None,
        enqueue_options=None,
        serialization_type=None,
        child_workflow_id=spec.workflow_id,
    )


def _row(status: Any, owner: str) -> dict[str, Any]:
    """The columns DBOS's ``_insert_workflow_status`` writes for a workflow it starts
    and runs at once (PENDING, owned by the token that created it)."""
    return {
        "workflow_uuid": status["workflow_uuid"],
        "status": status["status"],
        "name": status["name"],
        "class_name": status["class_name"],
        "config_name": status["config_name"],
        "executor_id": status["executor_id"],
        "application_version": status["app_version"],
        "application_id": status["app_id"],
        "authenticated_user": status["authenticated_user"],
        "authenticated_roles": status["authenticated_roles"],
        "assumed_role": status["assumed_role"],
        "queue_name": status["queue_name"],
        "recovery_attempts": 1,
        "workflow_timeout_ms": status["workflow_timeout_ms"],
        "workflow_deadline_epoch_ms": status["workflow_deadline_epoch_ms"],
        "deduplication_id": status["deduplication_id"],
        "priority": status["priority"],
        "serialization": status["serialization"],
        "queue_partition_key": status["queue_partition_key"],
        "parent_workflow_id": status["parent_workflow_id"],
        "creator_xid": owner,
        "owner_xid": owner,
        "delay_until_epoch_ms": status["delay_until_epoch_ms"],
        "attributes": status["attributes"],
        "schedule_name": status["schedule_name"],
        "debounce_deadline_epoch_ms": status["debounce_deadline_epoch_ms"],
        "is_debounced": status["is_debounced"],
        "application_name": status["application_name"],
    }


def prune(
    ended_before: float,
    with_open_calls: Callable[[list[str]], set[str]],
    limit: int = 1000,
) -> int:
    """Delete up to ``limit`` segment workflows and ``limit`` tool workflows that ended
    before ``ended_before`` (a Unix time); returns how many.

    A segment's SUCCESS row serves nothing (recovery reads PENDING rows; a replayed
    request is refused by the journal, whose segments keep the deduplication key). A
    tool workflow's result is read again by a continued segment that makes the call once
    more: one is kept while its segment's run has a call planned or started (the
    journal's ``with_open_calls``). DBOS itself keeps every row it is given."""
    ended = datetime.datetime.fromtimestamp(ended_before, datetime.UTC).isoformat()
    segments = DBOS.list_workflows(
        name=WORKFLOW_NAME,
        status="SUCCESS",
        completed_before=ended,
        limit=limit,
        load_input=False,
        load_output=False,
    )
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
    done = [row.workflow_id for row in segments]
    done += [workflow for workflow, request in requests.items() if request not in still]
    if done:
        DBOS.delete_workflows(done)
    return len(done)
