"""Several processes on one journal: taking a gone owner's runs over, and races.

Two journals on one database stand for two processes (two owner ids). On both
backends: a gone owner's segment is continued elsewhere (``reopen``) with its
history rebuilt as recovery would, but left running; a claimed owner whose claimer
died can be claimed again. Only on Postgres (several writers at once): two
processes race ``begin`` on one thread and ``claim`` on one gone owner; the server
stopped mid-run stops the run with ``JournalUnavailable`` (not a hang), and the
journal works again once the server is back.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from _postgres import PostgresUrl
from callwright import Agent, begin_journaled, start_journaled, tool
from callwright import events as ev
from callwright.messages import AssistantMessage, ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.store import (
    JournalUnavailable,
    Recorder,
    Rejected,
    SQLJournal,
    open_journal,
    recorder_for,
)

POSTGRES_ONLY = pytest.mark.parametrize("journal_target", ["postgres"], indirect=True)
"""SQLite has one writer at a time: there is no race to lose."""


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


def serving(journal: SQLJournal) -> str:
    """Make the journal an owner (as a server's first write does) and wait for its lease."""

    async def written() -> None:
        done = journal.submit(lambda: None)
        assert done is not None
        await done

    waiter = threading.Thread(target=asyncio.run, args=(written(),))  # callable on a loop too
    waiter.start()
    waiter.join(30)
    assert journal.owner is not None
    return journal.owner


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls at the same moment on threads of their own; results or exceptions."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def one(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@POSTGRES_ONLY
def test_two_processes_racing_begin_on_one_thread_one_wins(
    journals: Callable[..., SQLJournal],
) -> None:
    a, b = journals(owner_id="replica-a"), journals(owner_id="replica-b")
    serving(a), serving(b)
    for n in range(20):
        thread = f"t{n}"
        results = race(
            lambda t=thread, n=n: a.begin(t, f"a{n}", [UserMessage("from a")], [], {}),
            lambda t=thread, n=n: b.begin(t, f"b{n}", [UserMessage("from b")], [], {}),
        )
        refused = [r for r in results if isinstance(r, Rejected)]
        assert len(refused) == 1, results
        assert (refused[0].code, refused[0].status) == ("thread_busy", 409)
        assert len([r for r in results if not isinstance(r, Exception)]) == 1
        assert len(a.snapshot()["segments"]) == n + 1


@POSTGRES_ONLY
def test_a_gone_owner_is_claimed_by_exactly_one(
    journals: Callable[..., SQLJournal],
) -> None:
    gone = journals(owner_id="executor-gone")
    serving(gone)
    gone.begin("t", "r1", [UserMessage("hi")], [], {})
    others = [journals(owner_id=f"executor-{n}", settle_gone=False) for n in range(4)]
    assert others[0].claim("executor-gone") is False  # still live
    gone.close()
    assert others[0].gone_owners() == ["executor-gone"]
    results = race(*(lambda j=j: j.claim("executor-gone") for j in others))
    assert sorted(results) == [False, False, False, True]
    winner = others[results.index(True)]
    assert winner.claim("executor-gone") is True  # the winner asking again
    assert all(j.gone_owners() == [] for j in others)  # taken by a live owner
    assert others[0].recover(set()) == []  # settle_gone=False: left to be continued


def test_a_claimed_owner_whose_claimer_died_can_be_claimed_again(
    journals: Callable[..., SQLJournal],
) -> None:
    gone = journals(owner_id="dead-1")
    serving(gone)
    gone.begin("t", "r1", [UserMessage("hi")], [], {})
    gone.close()
    first, second = journals(owner_id="c-1"), journals(owner_id="c-2")
    assert first.claim("dead-1") and not second.claim("dead-1")
    first.close()
    assert second.gone_owners() == ["c-1", "dead-1"] or second.gone_owners() == ["dead-1"]
    assert second.claim("dead-1") is True


def expire_lease(target: str, owner: str) -> None:
    """Make the owner's lease look expired, as a stalled process's does (a client of the
    test's own writes it)."""
    sql = "UPDATE owners SET expires_at = 0 WHERE id = %s"
    if target.startswith("postgresql://"):
        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute(sql, (owner,))
    else:
        with sqlite3.connect(target, timeout=30) as lite:
            lite.execute(sql.replace("%s", "?"), (owner,))


def beat(journal: SQLJournal) -> None:
    """One heartbeat of the journal, now, on its writer (as its heartbeat thread posts it)."""
    waiter = threading.Thread(target=asyncio.run, args=(_beat(journal),))
    waiter.start()
    waiter.join(30)


async def _beat(journal: SQLJournal) -> None:
    done = journal.submit(journal._tick)
    assert done is not None
    await done


def test_a_reopen_declined_by_a_renewed_lease_leaves_the_segment_to_take_later(
    journals: Callable[..., SQLJournal], journal_target: str
) -> None:
    """The owner renews its lease between another process's claim and its reopen: the
    reopen declines and the segment stays the owner's; when the owner dies later, the
    segment is listed again (with its spec) and continued."""
    owner = journals(owner_id="stalled", heartbeat_seconds=3600)
    serving(owner)
    owner.begin("t", "r1", [UserMessage("hi")], [], {}, spec='{"request_id": "r1"}')
    heir = journals(owner_id="heir", settle_gone=False)
    assert heir.orphans() == []  # its owner is live
    expire_lease(journal_target, "stalled")
    assert [(o.owner, o.request_id, o.spec) for o in heir.orphans()] == [
        ("stalled", "r1", '{"request_id": "r1"}')
    ]
    assert heir.claim("stalled")
    beat(owner)  # the stalled process wakes and renews its lease first
    assert heir.reopen("r1", set()) is None
    assert heir.orphans() == [] and heir.run_status(owner.snapshot()["segments"][0][1]) == "running"
    owner.close()  # now it dies
    [orphan] = heir.orphans()
    assert (orphan.owner, orphan.request_id) == ("stalled", "r1")
    assert heir.claim("stalled")
    started = heir.reopen("r1", set())
    assert started is not None and started.segment.request_id == "r1"
    assert heir.orphans() == []  # its owner is the heir now, which is live


def test_a_gone_owners_segment_without_spec_is_settled_not_continued(
    journals: Callable[..., SQLJournal],
) -> None:
    """A segment begun with no spec (an older version's) cannot be continued: the heir
    settles it as recovery would, and its thread takes requests again."""
    gone = journals(owner_id="plain")
    serving(gone)
    started = gone.begin("t", "r1", [UserMessage("hi")], [], {})
    gone.close()
    heir = journals(owner_id="heir", settle_gone=False)
    [orphan] = heir.orphans()
    assert (orphan.owner, orphan.request_id, orphan.spec) == ("plain", "r1", "")
    with pytest.raises(Rejected):  # not settled by the journal itself
        heir.begin("t", "r2", [UserMessage("me?")], [], {})
    assert heir.claim("plain") and heir.settle_orphan("r1")
    assert heir.run_status(started.segment.run_id) == "interrupted"
    assert heir.orphans() == [] and not heir.settle_orphan("r1")
    heir.begin("t", "r3", [UserMessage("again")], [], {})


calls: list[str] = []


@tool
def done_before_crash() -> str:
    """Done."""
    calls.append("a")
    return "finished output"


@tool
def running_at_crash() -> str:
    """Running."""
    calls.append("b")
    return "never returns"


@tool(idempotent=True)
def safe_to_retry() -> str:
    """Idempotent."""
    calls.append("c")
    return "retried"


@tool
def never_started() -> str:
    """Not reached."""
    calls.append("d")
    return "ran later"


def crash_agent() -> Agent:
    turn = [
        call("done_before_crash", id="a"),
        call("running_at_crash", id="b"),
        call("safe_to_retry", id="c"),
        call("never_started", id="d"),
    ]
    return Agent(
        ScriptedModel([turn, ["after the take-over"]]),
        [done_before_crash, running_at_crash, safe_to_retry, never_started],
        strategy="sequential",
    )


async def crash_midway(journal: SQLJournal, agent: Agent) -> Recorder:
    """Run until a finished and b, c started; d never started. The process then dies."""
    run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("go")], [])
    async for e in run.events():
        rec.record(e, b"frame")
        if isinstance(e, ev.ToolCallResult) and e.call_id == "a":
            rec.record(ev.ToolExecutionStart("b", "running_at_crash"), b"frame")
            rec.record(ev.ToolExecutionStart("c", "safe_to_retry"), b"frame")
            break
    return rec


async def test_reopen_continues_a_gone_owners_segment_here(
    journals: Callable[..., SQLJournal],
) -> None:
    calls.clear()
    agent = crash_agent()
    gone = journals(owner_id="gone-executor")
    serving(gone)
    rec = await crash_midway(gone, agent)
    last_offset = rec.offset
    gone.close()
    heir = journals(owner_id="heir", settle_gone=False)
    with pytest.raises(Rejected) as busy:  # not settled, not free either: being continued
        heir.begin("t", "r2", [UserMessage("me?")], [], {})
    assert busy.value.code == "thread_busy"
    assert heir.recover(set()) == [] and heir.run_status(rec.segment.run_id) == "running"
    assert heir.claim("gone-executor")
    started = heir.reopen("r1", {"safe_to_retry"})
    assert started is not None
    assert started.segment.id == rec.segment.id and started.decisions == {}
    assert started.event_offset == last_offset
    assert started.next_operation == heir.next_operation(rec.segment.run_id)
    results = {m.call_id: m for m in started.history if isinstance(m, ToolResultMessage)}
    assert results["a"].content == "finished output" and not results["a"].is_error
    assert results["b"].is_error and results["b"].content.startswith("In doubt:")
    assert "c" not in results and "d" not in results  # run on resume
    assert heir.history("t") == started.history  # written, and kept running
    assert heir.run_status(rec.segment.run_id) == "running"
    assert not heir.segment_done("r1")
    [segment] = heir.snapshot()["segments"]
    assert segment[8] == "heir"
    assert heir.reopen("r1", set()) is None  # running here now
    assert journals(owner_id="third").reopen("r1", set()) is None  # heir is live

    calls.clear()
    run = agent.start(messages=started.history, decisions={}, state=started.state,
                      run_id="r1", thread_id="t")  # fmt: skip
    recorder = recorder_for(heir, started, run)
    async for e in run.events():
        recorder.record(e, b"more")
    assert calls == ["c", "d"]
    assert heir.run_status(rec.segment.run_id) == "completed"
    offsets = [o for o, _ in heir.events_after("r1", 0)]
    assert offsets == sorted(set(offsets)) and offsets[-1] > last_offset
    assert heir.events_after("r1", last_offset)[0][1] == b"more"
    assert isinstance(heir.history("t")[-1], AssistantMessage)
    assert heir.reopen("r1", set()) is None  # finished


@POSTGRES_ONLY
async def test_a_stopped_server_stops_the_run_then_the_journal_comes_back(
    postgres_url: PostgresUrl, journals: Callable[..., SQLJournal]
) -> None:
    """The server stopped between two writes: the run's next durable write raises
    ``JournalUnavailable`` at once, and after a restart the journal reconnects."""
    journal = journals()
    gate = asyncio.Event()

    @tool
    async def slow() -> str:
        """Waits for the test."""
        await gate.wait()
        return "done"

    agent = Agent(ScriptedModel([[call("slow", id="s")], ["after"]]), [slow])
    run, rec = await begin_journaled(journal, agent, "t", "r1", [UserMessage("go")], [])
    failure: BaseException | None = None
    try:
        async for e in run.events():
            pending = rec.record(e, b"frame")
            if isinstance(e, ev.ToolExecutionStart):
                if pending is not None:
                    await pending
                await asyncio.to_thread(postgres_url.stop)
                gate.set()
                continue
            if pending is not None:
                await asyncio.wait_for(pending, 30)
    except JournalUnavailable as exc:
        failure = exc
    finally:
        if not postgres_url.server.data.joinpath("postmaster.pid").exists():
            await asyncio.to_thread(postgres_url.start)
    assert isinstance(failure, JournalUnavailable)
    await rec.finish()
    assert journal.history("t")  # the reader reconnects
    run2, rec2 = await begin_journaled(journal, Agent(ScriptedModel([["again"]])), "t2", "r2",
                                       [UserMessage("hi")], [])  # fmt: skip
    async for e in run2.events():
        pending = rec2.record(e, b"frame")
        if pending is not None:
            await pending
    await rec2.finish()
    assert journal.run_status(rec2.segment.run_id) == "completed"
