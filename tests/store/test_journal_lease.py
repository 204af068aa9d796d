"""A process's lease through a database outage, and when it really lapses.

Two journals on one database stand for two processes. An outage shorter than the
lease (Postgres stopped, SQLite's write lock held past the busy timeout by another
connection) costs nothing: the heartbeat beats again once the database answers, the
lease is held again, and the other process neither settles nor takes over the run,
whose tool runs once (over real HTTP too: the client's stream ends with the run
finished). When the lease really lapses (the process stalled past it) and
another process takes its run over or settles it, the stalled process, once it beats
again, stops that run where it is: it never writes to it as its owner again, and the
run's next tool does not run there.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest

from _postgres import PostgresUrl
from callwright import Agent, begin_journaled, tool
from callwright import events as ev
from callwright.messages import UserMessage
from callwright.models import ScriptedModel, call
from callwright.server import create_app
from callwright.store import (
    JournalUnavailable,
    Rejected,
    SQLJournal,
    open_journal,
)
from live_server import Server

OUTAGE_SECONDS = 4.0
"""How long the database is away: with the time Postgres takes to stop and start, well
inside ``LEASE_SECONDS`` and many heartbeats long."""
LEASE_SECONDS = 15.0


@pytest.fixture
def journals(journal_target: str) -> Iterator[Callable[..., SQLJournal]]:
    opened: list[SQLJournal] = []

    def make(**options: Any) -> SQLJournal:
        if not journal_target.startswith("postgresql://"):
            options.setdefault("busy_seconds", 0.5)  # a held lock fails a beat quickly
        journal = open_journal(journal_target, **options)
        opened.append(journal)
        return journal

    yield make
    for journal in opened:
        journal.close()


def lease_expiry(target: str, owner: str) -> float | None:
    """The owner's lease as the database holds it (None: no row), read by a client of
    the test's own."""
    sql = "SELECT expires_at FROM owners WHERE id = %s"
    if target.startswith("postgresql://"):
        with psycopg.connect(target, autocommit=True) as pg:
            row = pg.execute(sql, (owner,)).fetchone()
    else:
        with sqlite3.connect(target, timeout=30) as lite:
            row = lite.execute(sql.replace("%s", "?"), (owner,)).fetchone()
    return None if row is None else float(row[0])


async def renewed_after(target: str, owner: str, expiry: float | None, within: float) -> bool:
    """Whether the owner's lease is renewed past ``expiry`` within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        now = await asyncio.to_thread(lease_expiry, target, owner)
        if now is not None and (expiry is None or now > expiry):
            return True
        await asyncio.sleep(0.1)
    return False


def outage(target: str, postgres: Callable[[], PostgresUrl]) -> None:
    """Take the database away for ``OUTAGE_SECONDS``: Postgres stopped, or SQLite's write
    lock held by another connection (past the journals' busy timeout)."""
    if target.startswith("postgresql://"):
        server = postgres()
        server.stop()
        try:
            time.sleep(OUTAGE_SECONDS)
        finally:
            server.start()
        return
    holder = sqlite3.connect(target, timeout=30, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        time.sleep(OUTAGE_SECONDS)
        holder.execute("ROLLBACK")
    finally:
        holder.close()


async def until_writer_runs(journal: SQLJournal) -> None:
    done = journal.submit(lambda: None)
    assert done is not None
    await asyncio.wait_for(done, 30)


async def test_an_outage_shorter_than_the_lease_costs_no_lease_and_no_run(
    journals: Callable[..., SQLJournal], journal_target: str, request: pytest.FixtureRequest
) -> None:
    a = journals(owner_id="a", lease_seconds=LEASE_SECONDS, heartbeat_seconds=1)
    b = journals(owner_id="b", lease_seconds=LEASE_SECONDS, heartbeat_seconds=1)
    gate = asyncio.Event()
    ran: list[str] = []

    @tool
    async def once() -> str:
        """Not idempotent: must run once."""
        ran.append("once")
        await gate.wait()
        return "done"

    agent = Agent(ScriptedModel([[call("once", id="o")], ["after"]]), [once])
    run, rec = await begin_journaled(a, agent, "t", "r1", [UserMessage("go")], [])
    await until_writer_runs(b)
    assert a.owner == "a"
    async for e in run.events():
        pending = rec.record(e, b"frame")
        if pending is not None:
            await asyncio.wait_for(pending, 30)
        if isinstance(e, ev.ToolExecutionStart):
            await asyncio.to_thread(
                outage, journal_target, lambda: request.getfixturevalue("postgres_url")
            )
            before = await asyncio.to_thread(lease_expiry, journal_target, "a")
            assert await renewed_after(journal_target, "a", before, LEASE_SECONDS), (
                "the heartbeat did not beat again after the outage"
            )
            assert "a" not in b.gone_owners()
            assert b.sweep() == []  # nothing of a's settled
            with pytest.raises(Rejected) as busy:
                b.begin("t", "r2", [UserMessage("meanwhile")], [], {})
            assert busy.value.code == "thread_busy"
            gate.set()
    await rec.finish()
    assert ran == ["once"]
    assert a.run_status(rec.segment.run_id) == "completed"
    assert [m.role for m in a.history("t")] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("elsewhere", ["taken over", "settled"])
async def test_a_lease_that_lapsed_stops_the_runs_taken_from_it(
    journals: Callable[..., SQLJournal], journal_target: str, elsewhere: str
) -> None:
    """a cannot beat past its lease while b can write: on Postgres a's writer is held
    (a stalled process), on SQLite b holds the write lock while it acts. b continues a's
    run (``reopen``, as a durable replica does) or settles it (``sweep``, as a sibling
    server does). a beats again and holds its lease again, but the run's next write on a
    fails with a clear error: a writes nothing more to it, and its next tool never runs."""
    a = journals(owner_id="a", lease_seconds=2, heartbeat_seconds=0.2)
    b = journals(
        owner_id="b", lease_seconds=30, heartbeat_seconds=60, busy_seconds=30,
        settle_gone=elsewhere == "settled",
    )  # fmt: skip
    gate = asyncio.Event()
    ran: list[str] = []

    @tool
    async def first() -> str:
        """Runs when a's lease lapses."""
        ran.append("first")
        await gate.wait()
        return "first done"

    @tool
    def second() -> str:
        """Must not run on a once a's run is b's."""
        ran.append("second")
        return "second done"

    def take_from_a() -> int:
        """b, once a's lease has lapsed: takes a's run or settles it; the frames it has."""
        deadline = time.monotonic() + 30
        while "a" not in b.gone_owners():
            assert time.monotonic() < deadline, "a's lease never lapsed"
            time.sleep(0.1)
        if elsewhere == "taken over":
            assert b.claim("a") and b.reopen("r1", set()) is not None
        else:
            assert b.sweep() == [rec.segment.run_id]
        return len(b.events_after("r1", 0))

    model = ScriptedModel([[call("first", id="f")], [call("second", id="s")], ["end"]])
    run, rec = await begin_journaled(a, Agent(model, [first, second]), "t", "r1",
                                     [UserMessage("go")], [])  # fmt: skip
    await until_writer_runs(b)
    failure: JournalUnavailable | None = None
    frames = 0
    try:
        async for e in run.events():
            pending = rec.record(e, b"frame")
            if pending is not None:
                await asyncio.wait_for(pending, 30)
            if isinstance(e, ev.ToolExecutionStart) and e.call_id == "f":
                if journal_target.startswith("postgresql://"):
                    release = threading.Event()
                    a.submit(release.wait, 30)  # a stalls: no heartbeat, no write
                    frames = await asyncio.to_thread(take_from_a)
                    release.set()
                else:
                    taken = b.submit(take_from_a)  # on b's writer: b holds the lock
                    assert taken is not None
                    frames = await asyncio.wait_for(taken, 60)
                before = await asyncio.to_thread(lease_expiry, journal_target, "a")
                assert await renewed_after(journal_target, "a", before, 30), (
                    "a's heartbeat did not beat again"
                )
                gate.set()
    except JournalUnavailable as exc:
        failure = exc
    await rec.finish()
    assert failure is not None, "a went on writing a run another process had"
    assert elsewhere in failure.message
    assert ran == ["first"]
    assert len(b.events_after("r1", 0)) == frames
    ops = {op["call_id"]: op["status"] for op in b.operations(rec.segment.run_id)}
    assert ops.get("f") == "in_doubt" and "s" not in ops  # started, never reported


async def test_a_process_whose_lease_lapsed_takes_no_new_run_until_it_holds_it_again(
    journals: Callable[..., SQLJournal],
) -> None:
    """No beat within the lease (a heartbeat slower than it, as a stalled one): a new
    request is refused with 503 ``journal_unavailable`` rather than started under a
    lease another process may be taking; once the lease is held again (any renewal
    checks it first: here ``reopen``), requests are taken again."""
    a = journals(owner_id="a", lease_seconds=0.5, heartbeat_seconds=3600)
    await until_writer_runs(a)
    await asyncio.sleep(1.0)
    with pytest.raises(Rejected) as refused:
        a.begin("t", "r1", [UserMessage("hi")], [], {})
    assert (refused.value.code, refused.value.status) == ("journal_unavailable", 503)
    assert "lease" in refused.value.message
    assert a.reopen("nothing-running", set()) is None  # renews the lease, checked
    started = a.begin("t", "r1", [UserMessage("hi")], [], {})
    assert a.run_status(started.segment.run_id) == "running"


def test_a_client_of_a_run_through_an_outage_gets_its_whole_run(
    journals: Callable[..., SQLJournal], journal_target: str, request: pytest.FixtureRequest
) -> None:
    """The outage of the first test under a served run, over real HTTP, with the other
    process's heartbeat settling gone owners' runs on its own: the client's stream
    ends with ``RUN_FINISHED`` and the tool's real result (before: ``RUN_ERROR``
    "settled by recovery" once the lease lapsed, and the tool reported "not run again")."""
    a = journals(owner_id="a", lease_seconds=LEASE_SECONDS, heartbeat_seconds=1)
    b = journals(owner_id="b", lease_seconds=LEASE_SECONDS, heartbeat_seconds=1)
    asyncio.run(until_writer_runs(b))
    started, gate = threading.Event(), threading.Event()
    ran: list[str] = []

    @tool
    def slow() -> str:
        """Not idempotent; waits for the test."""
        ran.append("slow")
        started.set()
        gate.wait(60)
        return "slow result"

    model = ScriptedModel([[call("slow", id="s")], ["after the outage"]])
    with Server(create_app(Agent(model, [slow]), journal=a)) as server:
        body = {
            "threadId": "t", "runId": "r1", "tools": [], "context": [], "state": {},
            "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "go"}],
        }  # fmt: skip
        out: list[httpx.Response] = []
        client = threading.Thread(
            target=lambda: out.append(httpx.post(server.url + "/agui", json=body, timeout=120))
        )
        client.start()
        try:
            assert started.wait(30)
            outage(journal_target, lambda: request.getfixturevalue("postgres_url"))
            before = lease_expiry(journal_target, "a")
            assert asyncio.run(renewed_after(journal_target, "a", before, LEASE_SECONDS))
            assert b.sweep() == [] and "a" not in b.gone_owners()
        finally:
            gate.set()
            client.join(60)
    events = [json.loads(f[6:]) for f in out[0].text.split("\n\n") if f.startswith("data: ")]
    assert [e["type"] for e in events if e["type"].startswith("RUN_")] == [
        "RUN_STARTED",
        "RUN_FINISHED",
    ]
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["slow result"] and ran == ["slow"]
