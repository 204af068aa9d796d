"""What the journal stores: size caps with a marker (a 30 MB reply is not stored twice),
the event log's cap, the migration from the first layout, and the writer thread's group
commit (one call's failure is its own; a failed transaction fails every call in it)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from callwright import Agent, begin_journaled, start_journaled
from callwright.messages import AssistantMessage, UserMessage
from callwright.models import ScriptedModel, call
from callwright.store import (
    JournalLimits,
    SQLiteJournal,
    SQLJournal,
    open_journal,
)
from callwright.store._writer import JournalWriter
from callwright.wire import agui


def stored_bytes(journal: SQLJournal) -> dict[str, int]:
    with journal._read_lock:
        db = journal._reader
        return {
            "messages": db.execute("SELECT COALESCE(SUM(LENGTH(body)), 0) FROM messages")
            .fetchone()[0],
            "operations": db.execute("SELECT COALESCE(SUM(LENGTH(output)), 0) FROM operations")
            .fetchone()[0],
            "events": db.execute("SELECT COALESCE(SUM(LENGTH(frames)), 0) FROM events")
            .fetchone()[0],
        }  # fmt: skip


async def drive(journal: SQLJournal, agent: Agent, thread: str, prompt: str) -> Any:
    """A run as the server records it (asynchronous recorder, AG-UI frames)."""
    encoder = agui.AGUIEncoder()
    run, rec = await begin_journaled(journal, agent, thread, f"{thread}-r", [UserMessage(prompt)],
                                     [], closing=encoder.error("x", "interrupted"))  # fmt: skip
    rec.cut_frame = lambda cap: encoder.error(f"cut at {cap}", "stream_truncated")
    async for event in run.events():
        pending = rec.record(event, encoder.encode(event))
        if pending is not None:
            await pending
    await rec.finish()
    return rec


async def test_a_30_mb_reply_is_stored_once_and_capped(journal: SQLJournal) -> None:
    reply = "word " * 6_000_000  # 30 MB
    agent = Agent(ScriptedModel([[reply]], record=False))
    await drive(journal, agent, "big", "say a lot")
    sizes = stored_bytes(journal)
    limits = journal.limits
    assert sizes["messages"] < limits.max_text_bytes + 10_000
    assert sizes["operations"] == 0  # the model operation's copy is dropped once committed
    assert sizes["events"] <= limits.max_event_log_bytes + 1_000
    assert sum(sizes.values()) < 10_000_000  # not 30 MB twice over (~120 MB before)
    [_, answer] = journal.history("big")
    assert isinstance(answer, AssistantMessage)
    assert answer.text.endswith(
        f"[… truncated by the journal: kept 1,048,576 of {len(reply):,} bytes]"
    )
    frames = journal.events_after("big-r", 0)
    assert b"stream_truncated" in frames[-1][1]  # a replay says the rest was not kept


async def test_oversized_arguments_are_stored_as_a_marker(journal_target: str) -> None:
    journal = open_journal(journal_target, limits=JournalLimits(max_argument_bytes=1_000))
    agent = Agent(ScriptedModel([[call("nothing_here", {"blob": "y" * 5_000}, id="c1")], ["ok"]]))
    await drive(journal, agent, "args", "call it")
    [_, asked, *_] = journal.history("args")
    assert isinstance(asked, AssistantMessage)
    assert asked.tool_calls[0].arguments == {
        "_truncated": "arguments of 5,011 bytes not stored (over the journal's 1,000)"
    }
    journal.close()


async def test_a_small_reply_is_not_rewritten_once_committed(journal: SQLJournal) -> None:
    """Dropping a short reply's second copy would cost more than it saves."""
    agent = Agent(ScriptedModel([[call("nothing_here", {}, id="c1")], ["short"]]))
    await drive(journal, agent, "small", "hi")
    ops = journal.operations(journal.snapshot()["runs"][0][0])
    assert [o["name"] for o in ops] == ["model", "tool:nothing_here", "model"]
    assert ops[0]["output"] is not None  # planned before its tool: kept until the step commit


LEGACY = """
CREATE TABLE threads (id TEXT PRIMARY KEY, state TEXT, created_at REAL, updated_at REAL);
CREATE TABLE messages (thread_id TEXT, seq INTEGER, run_id TEXT, body TEXT,
    PRIMARY KEY (thread_id, seq));
CREATE TABLE runs (id TEXT PRIMARY KEY, thread_id TEXT, status TEXT, reason TEXT,
    created_at REAL, updated_at REAL);
CREATE TABLE segments (run_id TEXT, seq INTEGER, request_id TEXT, dedup_key TEXT UNIQUE,
    status TEXT, created_at REAL, PRIMARY KEY (run_id, seq));
CREATE TABLE operations (run_id TEXT, seq INTEGER, segment INTEGER, name TEXT, call_id TEXT,
    input_hash TEXT, idempotency_key TEXT UNIQUE, status TEXT, output TEXT, started_at REAL,
    completed_at REAL, PRIMARY KEY (run_id, seq));
CREATE TABLE pending (thread_id TEXT, call_id TEXT, run_id TEXT, kind TEXT,
    approval_id TEXT UNIQUE, tool_name TEXT, arguments TEXT, reason_for_call TEXT,
    created_at REAL, resolved_at REAL, PRIMARY KEY (thread_id, call_id));
CREATE TABLE inbox (id INTEGER PRIMARY KEY, thread_id TEXT, run_id TEXT, call_id TEXT,
    kind TEXT, payload TEXT, dedup_key TEXT UNIQUE, created_at REAL);
CREATE TABLE events (run_id TEXT, "offset" INTEGER, type TEXT, frame BLOB,
    PRIMARY KEY (run_id, "offset"));
INSERT INTO threads VALUES ('t', '{"n": 1}', 1, 1);
INSERT INTO messages VALUES ('t', 0, 'run_1', '{"role": "user", "content": "hi"}');
INSERT INTO messages VALUES ('t', 1, 'run_1', '{"role": "assistant", "text": "hello"}');
INSERT INTO runs VALUES ('run_1', 't', 'completed', NULL, 1, 2);
INSERT INTO segments VALUES ('run_1', 0, 'req-1', 'd1', 'completed', 1);
INSERT INTO events VALUES ('req-1', 1, 'run-started', X'6461746131');
INSERT INTO events VALUES ('req-1', 2, 'text-delta', X'6461746132');
"""


def test_a_journal_of_the_first_layout_is_migrated(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(LEGACY)
    journal = SQLiteJournal(path)
    try:
        assert [m.role for m in journal.history("t")] == ["user", "assistant"]
        assert journal.state("t") == {"n": 1}
        assert journal.events_after("req-1", 0) == [(1, b"data1"), (2, b"data2")]
        assert journal.segment_done("req-1")
        run, rec = start_journaled(journal, Agent(ScriptedModel([["again"]])), "t", "req-2",
                                   [UserMessage("more")], [])  # fmt: skip
        asyncio.run(_consume(run, rec))
        assert [m.role for m in journal.history("t")][-2:] == ["user", "assistant"]
    finally:
        journal.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 3


async def _consume(run: Any, rec: Any) -> None:
    async for event in run.events():
        rec.record(event, b"frame")


class _Batch:
    """A transaction as the writer sees it, for a fake journal."""

    def __init__(self, fail_commit: bool) -> None:
        self.fail_commit = fail_commit
        self.batches: list[int] = []

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        self.batches.append(0)
        yield
        if self.fail_commit:
            raise sqlite3.OperationalError("database or disk is full")


async def test_the_writer_groups_calls_and_reports_each_failure_to_its_own_caller() -> None:
    batch = _Batch(fail_commit=False)
    writer = JournalWriter(batch)

    def ok(n: int) -> int:
        return n * 2

    def bad() -> None:
        raise ValueError("this call's own problem")

    futures = [writer.submit(ok, 1), writer.submit(bad), writer.submit(ok, 3)]
    assert all(f is not None for f in futures)
    results = await asyncio.gather(*futures, return_exceptions=True)  # type: ignore[arg-type]
    assert results[0] == 2 and results[2] == 6 and isinstance(results[1], ValueError)
    assert len(batch.batches) == 1  # submitted in one pass of the loop: one transaction
    writer.close()


async def test_a_failed_transaction_fails_every_call_in_it() -> None:
    writer = JournalWriter(_Batch(fail_commit=True))
    futures = [writer.submit(lambda: "written?"), writer.submit(lambda: "me too?")]
    results = await asyncio.gather(*futures, return_exceptions=True)  # type: ignore[arg-type]
    assert all(isinstance(r, sqlite3.OperationalError) for r in results)
    writer.close()
