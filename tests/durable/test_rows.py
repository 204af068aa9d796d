"""The workflow rows a replica writes for its segments, as DBOS reads them.

A replica writes its segments' rows itself, in batches (``durable/_rows.py``), not
through ``DBOS.start_workflow``: PENDING rows of its executor while a segment runs,
SUCCESS once it ends (finished, or paused for a human). What must hold: the rows
say that, and DBOS's own recovery runs such a row when the executor that owned it
comes back after a SIGKILL (the other replicas' takeover is in ``test_replicas``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import psycopg

from _postgres import PostgresUrl
from durable._cluster import Replica, agui_body, frames, stream, until_ended, until_started


def _rows(database: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(database) as db:
        rows = db.execute(
            "SELECT workflow_uuid, status, executor_id FROM dbos.workflow_status "
            "WHERE name = 'callwright.segment'"
        ).fetchall()
    return {workflow: (status, executor) for workflow, status, executor in rows}


async def _until_rows(database: str, expected: dict[str, tuple[str, str]]) -> None:
    deadline = time.monotonic() + 20
    rows: dict[str, tuple[str, str]] = {}
    while time.monotonic() < deadline:
        rows = _rows(database)
        if all(rows.get(workflow) == row for workflow, row in expected.items()):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"rows {rows}, expected {expected}")


def test_segment_rows_and_dbos_recovery_on_the_same_executor(
    postgres_url: PostgresUrl, tmp_path: Path
) -> None:
    replica = Replica(postgres_url.fresh_database(), "rows-a", tmp_path / "side_effects.txt")
    _serving(replica, _rows_then_recovery)


def _serving(replica: Replica, scenario: Callable[[Replica, Path], Awaitable[None]]) -> None:
    """Run ``scenario`` against the started replica; its log is printed if it fails."""
    try:
        replica.start()
        asyncio.run(scenario(replica, replica.side_effects))
    except BaseException:
        print(replica.log())
        raise
    finally:
        replica.stop()


async def _rows_then_recovery(replica: Replica, effects: Path) -> None:
    database = replica.database
    async with httpx.AsyncClient(timeout=60) as http:
        done = frames(await stream(http, replica.url, agui_body("t-done", "talk 3", "r-done")))
        assert done[-1]["type"] == "RUN_FINISHED"
        paused = frames(
            await stream(http, replica.url, agui_body("t-paused", "delete f1", "r-paused"))
        )
        assert paused[-1]["outcome"]["interrupts"], paused[-1]
        ended = {"seg:r-done": ("SUCCESS", "rows-a"), "seg:r-paused": ("SUCCESS", "rows-a")}
        await _until_rows(database, ended)

        body = agui_body("t-slow", "idem 1.5 k1", "r-slow")
        running = asyncio.create_task(stream(http, replica.url, body))
        await until_started(effects, ["k1"])
        assert _rows(database)["seg:r-slow"] == ("PENDING", "rows-a")
        replica.kill()
        await running

        replica.start()  # the same executor id: DBOS recovers its PENDING rows itself
        events = await until_ended(http, replica.url, "r-slow")
        results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert results == ["k1 finished"], [e["type"] for e in events]
        await _until_rows(database, {**ended, "seg:r-slow": ("SUCCESS", "rows-a")})


def test_ended_segments_rows_are_deleted_after_keep_workflows(
    postgres_url: PostgresUrl, tmp_path: Path
) -> None:
    """``--keep-workflows``: an ended segment's rows go once they are that old; a running
    segment's PENDING row stays; the run's stream still replays (the journal keeps it)."""
    database, effects = postgres_url.fresh_database(), tmp_path / "side_effects.txt"
    replica = Replica(database, "prune-a", effects, options=("--keep-workflows", "1"))
    _serving(replica, _rows_deleted)


async def _until_gone(database: str, workflow: str) -> None:
    deadline = time.monotonic() + 20
    while workflow in _rows(database):
        assert time.monotonic() < deadline, _rows(database)
        await asyncio.sleep(0.1)


async def _rows_deleted(replica: Replica, effects: Path) -> None:
    database = replica.database
    async with httpx.AsyncClient(timeout=60) as http:
        done = frames(await stream(http, replica.url, agui_body("t-done", "talk 3", "r-done")))
        assert done[-1]["type"] == "RUN_FINISHED"
        body = agui_body("t-slow", "idem 3 k1", "r-slow")
        running = asyncio.create_task(stream(http, replica.url, body))
        await until_started(effects, ["k1"])
        await _until_gone(database, "seg:r-done")
        with psycopg.connect(database) as db:
            inputs = db.execute(
                "SELECT count(*) FROM dbos.workflow_input WHERE workflow_uuid = 'seg:r-done'"
            ).fetchone()
        assert inputs == (0,)
        assert _rows(database)["seg:r-slow"] == ("PENDING", "prune-a")
        await asyncio.sleep(1.5)  # older than --keep-workflows, and still running
        assert _rows(database)["seg:r-slow"] == ("PENDING", "prune-a")
        assert frames(await running)[-1]["type"] == "RUN_FINISHED"
        await _until_gone(database, "seg:r-slow")
        replayed = await until_ended(http, replica.url, "r-done")
        assert [e["type"] for e in replayed] == [e["type"] for e in done]
