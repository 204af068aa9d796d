"""The writer's batches: a run's recorded writes share one transaction with other runs'
without a savepoint each, so a write that fails (here a duplicate operation, as a bug
would make) rolls the batch back and its calls run again without it: the other runs'
writes are kept, and a call run again finds the journal's memory as it was."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from callwright import AssistantMessage, UserMessage
from callwright.store import SQLJournal, open_journal
from callwright.store._pg import connect
from callwright.store._sql import thread_key
from callwright.store._writer import JournalWriter, RolledBack
from callwright.store.base import Rejected, Started

ROW = {"seq": 1, "name": "tool:x", "call_id": "c1", "arguments": {}, "status": "planned"}


@pytest.fixture
def batches(journal: SQLJournal) -> list[int]:
    """How many calls each batch the writer ran had (its transactions, in order)."""
    sizes: list[int] = []
    once = journal._writer._once

    def counted(items: list[Any]) -> Any:
        sizes.append(len(items))
        return once(items)

    journal._writer._once = counted  # type: ignore[method-assign]
    return sizes


async def started(journal: SQLJournal, thread: str) -> Started:
    future = journal.submit(journal.begin, thread, f"r-{thread}", [UserMessage("hi")], [], {})
    assert future is not None
    return await future


async def in_one_pass(*calls: tuple[Callable[..., Any], tuple[Any, ...]]) -> list[Any]:
    """Submit the calls in one pass of the loop (one batch), and their outcomes."""
    journal = calls[0][0].__self__
    futures = [journal.submit(fn, *args) for fn, args in calls]
    assert all(f is not None for f in futures)
    return await asyncio.gather(*futures, return_exceptions=True)  # type: ignore[arg-type]


async def test_a_failing_write_leaves_the_other_runs_writes_in_its_batch(
    journal: SQLJournal, batches: list[int]
) -> None:
    a, b = await started(journal, "ta"), await started(journal, "tb")
    await journal.submit(journal.plan_operations, b.segment, [ROW])  # type: ignore[misc]
    batches.clear()
    results = await in_one_pass(
        (journal.plan_operations, (a.segment, [ROW], [(1, "X", b"a1")])),
        (journal.plan_operations, (b.segment, [ROW])),  # the same operation again: refused
        (journal.append_events, (a.segment, [(2, "X", b"a2")])),
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], journal._errors)
    assert journal.events_after("r-ta", 0) == [(1, b"a1"), (2, b"a2")]
    assert batches[0] == 3 and len(batches) > 1  # rolled back, then run again without it
    assert journal.next_operation(a.segment.run_id) == 2


async def test_a_heartbeat_in_a_batch_rolled_back_for_another_write_says_nothing(
    journal: SQLJournal, caplog: pytest.LogCaptureFixture
) -> None:
    """A beat sharing its batch with a write that fails runs again with the others, and
    nothing is logged about it (only the failing write is reported, to its caller)."""
    a = await started(journal, "ta")
    await journal.submit(journal.plan_operations, a.segment, [ROW])  # type: ignore[misc]
    renewed = journal._renewed
    with caplog.at_level("WARNING", logger="callwright.store"):
        results = await in_one_pass(
            (journal.plan_operations, (a.segment, [ROW])),  # the same operation: refused
            (journal._tick, ()),  # one beat
        )
    assert isinstance(results[0], journal._errors) and results[1] is None
    assert journal._renewed > renewed
    assert not [r for r in caplog.records if "heartbeat" in r.getMessage()]


async def test_a_commit_run_again_writes_its_messages_once(journal: SQLJournal) -> None:
    """A commit replaces the history from its start on: run again after its batch was
    rolled back (another write in it failed), it writes its messages once."""
    a, b = await started(journal, "ta"), await started(journal, "tb")
    await journal.submit(journal.plan_operations, b.segment, [ROW])  # type: ignore[misc]
    reply = AssistantMessage("hello")
    results = await in_one_pass(
        (journal.commit, (a.segment, len(a.history), [reply], None, [], [])),
        (journal.plan_operations, (b.segment, [ROW])),
    )
    assert results[0] is None and isinstance(results[1], journal._errors)
    assert journal.history("ta") == [*a.history, reply]


async def test_a_refused_request_between_writes_keeps_them(journal: SQLJournal) -> None:
    a = await started(journal, "ta")
    again = (journal.begin, ("ta", "r-ta", [UserMessage("hi")], [], {}))  # a replay
    results = await in_one_pass(
        (journal.append_events, (a.segment, [(1, "X", b"a1")])),
        again,
        (journal.append_events, (a.segment, [(2, "X", b"a2")])),
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Rejected) and results[1].code in (
        "thread_busy",
        "duplicate_request",
    )
    assert journal.events_after("r-ta", 0) == [(1, b"a1"), (2, b"a2")]


async def test_a_request_after_a_failing_write_in_its_batch_still_starts(
    journal: SQLJournal,
) -> None:
    """On Postgres the write's error surfaces in the request's first read (a pipeline):
    neither call can tell whose it was, so each runs again alone."""
    b = await started(journal, "tb")
    await journal.submit(journal.plan_operations, b.segment, [ROW])  # type: ignore[misc]
    results = await in_one_pass(
        (journal.plan_operations, (b.segment, [ROW])),
        (journal.begin, ("tc", "r-tc", [UserMessage("hi")], [], {})),
    )
    assert isinstance(results[0], journal._errors)
    assert isinstance(results[1], Started)
    assert journal.history("tc") == [UserMessage("hi")]
    assert journal.live_segment("tc") == "r-tc"


async def test_held_writes_keep_every_byte_and_character(journal: SQLJournal) -> None:
    """On Postgres a batch's writes are bound on this side and sent as one query string:
    what comes back is what was written, quotes, backslashes and all."""
    a = await started(journal, "ta")
    frame = bytes(range(256)) + b"'; DROP TABLE events; --\\"
    text = "it's \\x00-free: \u00e9\u4e2d\U0001f600 %s ? $1 '' \\' E'\\n'"
    reply = AssistantMessage(text)
    messages = [*a.history, reply]
    results = await in_one_pass(
        (journal.append_events, (a.segment, [(1, "X", frame), (2, "X", b"%s?")])),
        (journal.commit, (a.segment, len(a.history), [reply], {"k": text}, [], [])),
    )
    assert results == [None, None]
    assert journal.events_after("r-ta", 0) == [(1, frame), (2, b"%s?")]
    assert journal.history("ta") == messages
    assert journal.state("ta") == {"k": text}


def _raw_sql(target: str, sql: str) -> list[Any]:
    """``sql`` on the journal's database, beside the journal."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as pg:
            cursor = pg.execute(sql)
            return cursor.fetchall() if cursor.description else []
    import sqlite3

    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as lite:
        return lite.execute(sql).fetchall()


async def test_frames_are_compressed_on_postgres_and_rows_written_before_read_as_they_are(
    journal_target: str,
) -> None:
    """On Postgres a chunk's frames are stored zlib-compressed (``packed``), on SQLite as
    they are; either way they read back byte for byte, and so does a chunk written before
    frames were compressed (a database whose ``events`` had no ``packed`` column)."""
    journal = open_journal(journal_target)
    a = await started(journal, "ta")
    journal.close()
    old = b"data: before\n\n"
    _raw_sql(journal_target, "ALTER TABLE events DROP COLUMN packed")
    _raw_sql(
        journal_target,
        'INSERT INTO events (segment, "first", "last", offsets, lengths, frames) VALUES '
        f"({a.segment.id}, 1, 1, '1', '{len(old)}', {_blob(journal_target, old)})",
    )
    journal = open_journal(journal_target)
    try:
        frames = [(i, b'data: {"type":"TEXT_MESSAGE_CONTENT","delta":"word"}\n\n') for i in (2, 3)]
        future = journal.submit(journal.append_events, a.segment, [(i, "X", f) for i, f in frames])
        assert future is not None
        await future
        assert journal.events_after("r-ta", 0) == [(1, old), *frames]
        assert journal.events_after("r-ta", 2) == frames[1:]
    finally:
        journal.close()
    packed, size = _raw_sql(
        journal_target, 'SELECT packed, LENGTH(frames) FROM events WHERE "first" = 2'
    )[0]
    if journal_target.startswith("postgresql://"):
        assert packed == 1 and size < len(frames[0][1]) * 2
    else:
        assert (packed, size) == (0, len(frames[0][1]) * 2)


def _blob(target: str, data: bytes) -> str:
    if target.startswith("postgresql://"):
        return f"'\\x{data.hex()}'::bytea"
    return f"X'{data.hex()}'"


@pytest.mark.parametrize("journal_target", ["postgres"], indirect=True)
async def test_a_new_threads_request_starts_in_one_round_trip_and_a_busy_one_leaves_no_row(
    journal: SQLJournal, journal_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new thread's segment is inserted with the thread's lock and read: its batch is
    BEGIN, that query, COMMIT. Where another process holds the thread's lock the request
    is refused and leaves no row; a request id another thread used is still told apart."""
    import psycopg

    from callwright.store import _pg

    sent: list[bytes] = []
    exchange = _pg.exchange

    def counted(pgconn: Any, query: bytes, silence_ms: int = -1) -> Any:
        sent.append(query)
        return exchange(pgconn, query, silence_ms)

    await started(journal, "warm")
    monkeypatch.setattr(_pg, "exchange", counted)
    a = await started(journal, "ta")
    assert len(sent) == 3 and sent[0] == b"BEGIN" and sent[-1].endswith(b"COMMIT")
    assert a.segment.seq == 0 and a.segment.id > 0
    assert journal.live_segment("ta") == "r-ta"

    with psycopg.connect(journal_target, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [thread_key("", "tb")])
        with pytest.raises(Rejected) as busy:
            await started(journal, "tb")
        assert busy.value.code == "thread_busy"
        count = other.execute("SELECT count(*) FROM segments WHERE thread_id = 'tb'")
        assert count.fetchone() == (0,)
        other.execute("SELECT pg_advisory_unlock_all()")  # not left to the backend's exit
    assert (await started(journal, "tb")).segment.seq == 0

    reused = journal.submit(journal.begin, "tc", "r-ta", [UserMessage("hi")], [], {})
    assert reused is not None
    with pytest.raises(Rejected) as refused:
        await reused
    assert refused.value.code == "run_id_in_use"


@pytest.mark.parametrize("journal_target", ["postgres"], indirect=True)
async def test_a_threads_lock_is_its_principals(journal: SQLJournal, journal_target: str) -> None:
    """Another process holding alice's thread ``t`` (its lock) keeps alice's requests on
    ``t`` out, never bob's: his ``t`` is another thread."""
    import psycopg

    def begin(principal: str) -> Any:
        call = functools.partial(journal.begin, principal=principal)
        submitted = journal.submit(call, "t", f"r-{principal}", [UserMessage("hi")], [], {})
        assert submitted is not None
        return submitted

    with psycopg.connect(journal_target, autocommit=True) as other:
        other.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))", [thread_key("alice", "t")]
        )
        with pytest.raises(Rejected) as busy:
            await begin("alice")
        assert busy.value.code == "thread_busy"
        bob = await begin("bob")
        other.execute("SELECT pg_advisory_unlock_all()")
    assert (bob.segment.thread_id, bob.segment.principal) == ("t", "bob")
    assert (await begin("alice")).segment.principal == "alice"


@pytest.mark.parametrize("journal_target", ["postgres"], indirect=True)
def test_a_statement_postgres_cannot_prepare_is_sent_as_text(journal_target: str) -> None:
    """Statements run as prepared ones (``PREPARE``/``EXECUTE``, made once per
    connection); one whose parameter's type Postgres cannot tell fails once, then goes
    as text, and the prepared ones outlive a rollback."""
    import psycopg

    db = connect(journal_target, 5)
    try:
        assert db.execute("SELECT ? || 'b'", ("a",)).fetchone() == ("ab",)
        db.execute("BEGIN")
        with pytest.raises(psycopg.errors.IndeterminateDatatype):
            db.execute("SELECT ? IS NULL", (None,))
        db.execute("ROLLBACK")
        assert db.execute("SELECT ? IS NULL", (None,)).fetchone() == (True,)
        assert db.execute("SELECT ? || 'b'", ("c",)).fetchone() == ("cb",)
    finally:
        db.close()


class _Failing:
    """A batch as the writer sees it: it rolls back while a call in it failed (``error``
    holds the failing call's error, ``culprit`` says whether it is known whose);
    ``sizes`` counts the calls each batch ran."""

    def __init__(self, culprit: bool) -> None:
        self.culprit = culprit
        self.error: BaseException | None = None
        self.sizes: list[int] = []

    def __call__(self) -> Any:
        @contextlib.contextmanager
        def batch() -> Iterator[None]:
            self.sizes.append(0)
            self.error = None
            yield
            if self.error is not None:
                raise RolledBack(self.error, self.error if self.culprit else None)

        return batch()


@pytest.mark.parametrize("culprit", [True, False])
async def test_the_writer_runs_a_rolled_back_batch_again_without_the_failing_call(
    culprit: bool,
) -> None:
    batch = _Failing(culprit)
    writer = JournalWriter(batch)

    def ok(n: int) -> int:
        batch.sizes[-1] += 1
        return n

    def bad() -> None:
        batch.sizes[-1] += 1
        batch.error = ValueError("a bug's write")
        raise batch.error

    futures = [writer.submit(ok, 1), writer.submit(bad), writer.submit(ok, 3)]
    results = await asyncio.gather(*futures, return_exceptions=True)  # type: ignore[arg-type]
    assert results[0] == 1 and results[2] == 3 and isinstance(results[1], ValueError)
    # known: the two others again in one batch; unknown: each of the three alone
    assert batch.sizes == ([3, 2] if culprit else [3, 1, 1, 1])
    writer.close()


async def test_a_write_to_a_settled_segment_fails_alone(journal: SQLJournal) -> None:
    """The fence (a segment settled elsewhere is not written to) refuses one run's write;
    the other run's write in the same batch is kept."""
    a, b = await started(journal, "ta"), await started(journal, "tb")
    other = open_journal(journal.target)
    try:
        with other._tx() as db:  # another process's recovery settled it
            db.execute("UPDATE segments SET status = 'interrupted' WHERE id = ?", (a.segment.id,))
    finally:
        other.close()
    journal._renewed = 0.0  # the lease not surely held: every write checks its segment
    results = await in_one_pass(
        (journal.append_events, (b.segment, [(1, "X", b"b1")])),
        (journal.mark_operation, (a.segment, "c1", "started")),
        (journal.append_events, (b.segment, [(2, "X", b"b2")])),
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], RuntimeError) and "settled" in str(results[1])
    assert journal.events_after("r-tb", 0) == [(1, b"b1"), (2, b"b2")]
