"""Recovery keeps history in order and true: results land after their call (before
anything written later), a finished tool keeps its output, only a started one is
in doubt, and only runs whose owner is gone are settled."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from typing import Any

import pytest

from callwright import Agent, InDoubt, begin_journaled, start_journaled, tool
from callwright import events as ev
from callwright.messages import AssistantMessage, ToolCallPart, ToolResultMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.store import (
    Answer,
    Rejected,
    SQLJournal,
    _owners,
    open_journal,
)
from callwright.store._recovery import rebuilt_history


def op(name: str, call_id: str, status: str, content: str | None = None) -> dict[str, Any]:
    output = None if content is None else {"content": content, "is_error": False}
    return {"name": name, "call_id": call_id, "status": status, "output": output,
            "idempotent": False}  # fmt: skip


def test_results_go_after_their_call_and_before_what_came_later() -> None:
    asked = AssistantMessage("", [ToolCallPart("a", "one", {}), ToolCallPart("b", "two", {})])
    later = UserMessage("and another thing")
    history = [UserMessage("go"), asked, later]
    ops = [op("tool:one", "a", "completed", "one's output"), op("tool:two", "b", "started")]
    settled = rebuilt_history(history, ops, idempotent=set())
    assert settled[:2] == history[:2] and settled[-1] is later
    results = settled[2:4]
    assert [(r.call_id, r.content) for r in results] == [  # type: ignore[union-attr]
        ("a", "one's output"),
        ("b", InDoubt().model_text()),
    ]


def test_an_unrecorded_reply_is_appended_with_its_outcomes() -> None:
    history: list[Any] = [UserMessage("go")]
    reply = AssistantMessage("", [ToolCallPart("c", "three", {}), ToolCallPart("d", "four", {})])
    reply.id = "m1"
    from callwright.messages import message_to_dict

    ops = [
        {**op("model", "m1", "completed"), "output": message_to_dict(reply)},
        op("tool:three", "c", "completed", "done"),
        op("tool:four", "d", "planned"),  # never started: it runs on resume
    ]
    settled = rebuilt_history(history, ops, idempotent=set())
    assert [type(m).__name__ for m in settled] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert settled[2].content == "done"  # type: ignore[union-attr]


async def test_a_crash_while_resuming_keeps_the_resumed_result_in_place(
    journal: SQLJournal,
) -> None:
    """Approve a call and write in the same request; the server dies after the tool
    finished but before the step committed: the result goes after its call, before the
    user's new message, and says what the tool returned."""
    ran: list[str] = []

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete."""
        ran.append(path)
        return f"deleted {path}"

    agent = Agent(ScriptedModel([[call("delete_file", {"path": "x"}, id="c1")], ["ok"]]),
                  [delete_file])  # fmt: skip
    run, rec = start_journaled(journal, agent, "t", "r1", [UserMessage("delete x")], [])
    async for e in run.events():
        rec.record(e, b"frame")
    [pending] = journal.pending("t")
    approval = Answer("approval", "c1", pending.approval_id, True)
    run, rec = start_journaled(journal, agent, "t", "r2", [], [approval])
    async for e in run.events():
        rec.record(e, b"frame")
        if isinstance(e, ev.ToolCallResult):
            break  # the process dies here: the outcome is an operation row, not history yet
    assert ran == ["x"]
    fresh = open_journal(journal.target)
    try:
        assert fresh.recover(set()) == [rec.segment.run_id]
        history = fresh.history("t")
        assert isinstance(history[-1], ToolResultMessage)
        assert history[-1].content == "deleted x" and not history[-1].is_error
        assert fresh.run_status(rec.segment.run_id) == "interrupted"
    finally:
        fresh.close()


async def test_a_running_segment_of_a_live_owner_is_busy_and_not_recovered(
    journal_target: str,
) -> None:
    """Two journals on one file (two processes): the one serving a run owns it; the other
    refuses the thread (409 thread_busy) and its recovery leaves the run alone, until the
    owner is gone (closed: its lease row is dropped)."""
    path = journal_target
    owner, other = open_journal(path), open_journal(path)
    agent = Agent(ScriptedModel([["hello"]]))
    _, rec = await begin_journaled(owner, agent, "t", "r1", [UserMessage("hi")], [])
    assert owner.owner is not None
    with pytest.raises(Rejected) as info:
        other.begin("t", "r2", [UserMessage("me too")], [], {})
    assert (info.value.code, info.value.status) == ("thread_busy", 409)
    assert other.recover(set()) == []
    owner.close()  # the process goes away without finishing the run
    assert other.recover(set()) == [rec.segment.run_id]
    assert other.run_status(rec.segment.run_id) == "interrupted"
    other.close()


async def test_a_sweep_looks_up_each_owner_once_and_leaves_a_live_ones_runs(
    journal_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep (every heartbeat) asks about each other process once, not once per run it
    serves: three replicas with a thousand runs each would otherwise send thousands of
    lookups per beat."""
    owner, other = open_journal(journal_target), open_journal(journal_target)
    agent = Agent(ScriptedModel([["hello"]] * 10))
    try:
        runs = [
            (await begin_journaled(owner, agent, f"t{i}", f"r{i}", [UserMessage("hi")], []))[1]
            for i in range(10)
        ]
        lookups: list[str | None] = []
        alive = _owners.alive

        def counted(db: Any, owner_id: str | None, now: float) -> bool:
            lookups.append(owner_id)
            return alive(db, owner_id, now)

        monkeypatch.setattr(_owners, "alive", counted)
        assert other.sweep() == []
        assert 1 <= lookups.count(owner.owner) <= 2  # its runs, then its lease row
        assert all(other.run_status(r.segment.run_id) == "running" for r in runs)
        owner.close()
        assert sorted(other.sweep()) == sorted(r.segment.run_id for r in runs)
    finally:
        owner.close()
        other.close()


def test_an_owner_is_gone_when_its_process_is(journal_target: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    journal = open_journal(journal_target)
    now = time.time()
    try:
        with journal._lock:
            db = journal._db
            _owners.register(db, "dead", now, 30)
            db.execute("UPDATE owners SET pid = ? WHERE id = 'dead'", (child.pid,))
            _owners.register(db, "expired", now - 100, 30)
            db.execute("UPDATE owners SET pid = ? WHERE id = 'expired'", (os.getppid(),))
            _owners.register(db, "elsewhere", now, 30)
            db.execute("UPDATE owners SET host = 'another-host' WHERE id = 'elsewhere'")
            _owners.register(db, "sibling", now, 30)
            db.execute("UPDATE owners SET pid = ? WHERE id = 'sibling'", (os.getppid(),))
            _owners.register(db, "closed-journal-of-ours", now, 30)
            alive = {o: _owners.alive(db, o, now) for o in
                     ("dead", "expired", "elsewhere", "sibling", "closed-journal-of-ours",
                      "never-registered", None)}  # fmt: skip
    finally:
        journal.close()
    assert alive == {
        "dead": False,  # this host, no such process
        "expired": False,  # its lease ran out
        "elsewhere": True,  # another host, lease current
        "sibling": True,  # this host, a live process
        "closed-journal-of-ours": False,  # our process id, not a journal we hold
        "never-registered": False,
        None: False,  # written by the synchronous library API: nobody owns it
    }


async def test_a_process_owns_its_segments_and_gives_up_its_lease_on_close(
    journal_target: str,
) -> None:
    path = journal_target
    journal = open_journal(path)
    agent = Agent(ScriptedModel([["one"]]))
    run, rec = await begin_journaled(journal, agent, "t", "r1", [UserMessage("hi")], [])
    async for e in run.events():
        pending = rec.record(e, b"f")
        if pending is not None:
            await pending
    await rec.finish()
    [segment] = journal.snapshot()["segments"]
    status, owner = segment[7], segment[8]
    assert (status, owner) == ("completed", journal.owner)
    assert _owner_ids(path) == [journal.owner]
    journal.close()
    assert _owner_ids(path) == []


def _owner_ids(target: str) -> list[str]:
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as pg:
            return [row[0] for row in pg.execute("SELECT id FROM owners")]
    db = sqlite3.connect(target)
    try:
        return [row[0] for row in db.execute("SELECT id FROM owners")]
    finally:
        db.close()
