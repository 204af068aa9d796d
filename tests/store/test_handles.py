"""A running call's handle to its work (``ToolContext.save_handle``), on both backends:
kept with the call's operation row, so that a run whose process died while the call ran
runs it again with the handle (``ToolContext.resumed_handle``) rather than doubting it,
whether the run is resumed by the next request (``recover`` then ``begin``) or continued
by another process (``reopen``). A journal of the layout before the ``handle`` column
gets it when opened, and its started calls stay in doubt as they were."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from callwright import Agent, ToolContext, begin_journaled, start_journaled, tool
from callwright import events as ev
from callwright.call import is_in_doubt
from callwright.context import HANDLE_BYTES
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.store import SQLJournal, open_journal


def job_agent(resumed: list[Any], twice: bool = False) -> Agent:
    """``job`` starts an external job, saves its id, and waits for it; run again with the
    handle, it reports what it re-attached to. The model calls it once (``twice``: in
    two runs)."""

    @tool
    async def job(ctx: ToolContext) -> str:
        """Start the job and wait for it."""
        resumed.append(ctx.resumed_handle)
        if ctx.resumed_handle is not None:
            return f"job {ctx.resumed_handle['job']} finished"
        ctx.save_handle({"job": 7})
        ctx.progress("started job 7")
        await asyncio.Event().wait()  # the process dies while the job runs
        return "never"

    turns: list[Any] = [[call("job", {}, id="c1")], ["noted"]]
    if twice:
        turns += [[call("job", {}, id="c2")], ["noted again"]]
    return Agent(ScriptedModel(turns), [job])


async def crash_mid_job(journal: SQLJournal, agent: Agent, server: bool = False) -> str:
    """Run until the job's tool has saved its handle, then stop as a killed process would.
    ``server``: the recorder's asynchronous mode, as a server records (the handle is a
    durable point: written before the stream goes on)."""
    prompt = [UserMessage("run the job")]
    if server:
        run, rec = await begin_journaled(journal, agent, "t", "r1", prompt, [])
    else:
        run, rec = start_journaled(journal, agent, "t", "r1", prompt, [])
    async for e in run.events():
        durable = rec.record(e, b"frame")
        if durable is not None:
            await durable
        if isinstance(e, ev.ToolProgress):
            break
    return rec.segment.run_id


@pytest.fixture
def journals(journal_target: str) -> Iterator[Callable[..., SQLJournal]]:
    opened: list[SQLJournal] = []

    def make(**options: Any) -> SQLJournal:
        journal = open_journal(journal_target, **options)
        opened.append(journal)
        return journal

    yield make
    for journal in opened:
        journal.close()


@pytest.mark.parametrize("server", [False, True], ids=["library", "server"])
async def test_a_call_that_saved_a_handle_runs_again_with_it_after_recovery(
    journals: Callable[..., SQLJournal], server: bool
) -> None:
    resumed: list[Any] = []
    agent = job_agent(resumed)
    first = journals()
    run_id = await crash_mid_job(first, agent, server)
    first.close()  # its process is gone (a serving one held a lease: released)
    fresh = journals()
    assert fresh.recover(set()) == [run_id]
    [op] = [o for o in fresh.operations(run_id) if o["name"] != "model"]
    assert op["status"] == "started"  # not in doubt
    assert not any(isinstance(m, ToolResultMessage) for m in fresh.history("t"))
    run, rec = start_journaled(fresh, agent, "t", "r2", [], [])
    async for e in run.events():
        rec.record(e, b"frame")
    assert resumed == [None, {"job": 7}]
    assert run.result is not None and run.result.output == "noted"
    [result] = [m for m in fresh.history("t") if isinstance(m, ToolResultMessage)]
    assert result.content == "job 7 finished"
    [op] = [o for o in fresh.operations(run_id) if o["name"] != "model"]
    assert op["status"] == "completed"


async def test_reopen_hands_the_saved_handle_to_the_process_that_continues(
    journals: Callable[..., SQLJournal],
) -> None:
    agent = job_agent([])
    gone = journals(owner_id="gone-executor")
    await crash_mid_job(gone, agent)
    gone.close()
    heir = journals(owner_id="heir", settle_gone=False)
    assert heir.claim("gone-executor")
    started = heir.reopen("r1", set())
    assert started is not None
    assert started.handles == {"c1": {"job": 7}}
    assert not any(isinstance(m, ToolResultMessage) for m in started.history)


def test_a_handle_is_small_json() -> None:
    ctx: ToolContext[None] = ToolContext("c1", "job")
    with pytest.raises(ValueError, match="JSON"):
        ctx.save_handle({"job": object()})
    with pytest.raises(ValueError, match=f"at most {HANDLE_BYTES} bytes"):
        ctx.save_handle({"job": "x" * HANDLE_BYTES})
    ctx.save_handle({"job": 7})  # outside a run: nowhere to keep it, and no error


def drop_handle_column(target: str) -> None:
    """Make the journal at ``target`` one of the layout before ``operations.handle``."""
    if target.startswith("postgres"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as db:
            db.execute("ALTER TABLE operations DROP COLUMN handle")
        return
    with contextlib.closing(sqlite3.connect(target)) as db:
        db.execute("ALTER TABLE operations DROP COLUMN handle")
        db.commit()


async def test_a_journal_without_the_handle_column_gets_it_and_keeps_its_runs(
    journal_target: str,
) -> None:
    resumed: list[Any] = []
    agent = job_agent(resumed, twice=True)
    old = open_journal(journal_target)
    run_id = await crash_mid_job(old, agent)
    old.close()
    drop_handle_column(journal_target)
    # the started call's handle went with the column: it is in doubt, as before handles
    fresh = open_journal(journal_target)
    try:
        assert fresh.recover(set()) == [run_id]
        [op] = [o for o in fresh.operations(run_id) if o["name"] != "model"]
        assert op["status"] == "in_doubt"
        last = fresh.history("t")[-1]
        assert isinstance(last, ToolResultMessage) and is_in_doubt(last.content)
        run, rec = start_journaled(fresh, agent, "t", "r2", [], [])
        async for e in run.events():
            rec.record(e, b"frame")
        assert resumed == [None]  # not run again
        # the column is back and keeps handles again
        next_run, rec = start_journaled(fresh, agent, "t", "r3", [UserMessage("again")], [])
        async for e in next_run.events():
            rec.record(e, b"frame")
            if isinstance(e, ev.ToolProgress):
                break
    finally:
        fresh.close()
    again = open_journal(journal_target)
    try:
        again.recover(set())
        run, rec = start_journaled(again, agent, "t", "r4", [], [])
        async for e in run.events():
            rec.record(e, b"frame")
        assert resumed == [None, None, {"job": 7}]
        assert run.result is not None and run.result.output == "noted again"
    finally:
        again.close()
