"""A journal of layout 2 (thread ids global) opened by this code, on both backends: its
threads, messages, pending calls and event logs are kept and rekeyed by principal
(layout 3), a paused run goes on, another principal may now have a thread of the same
id, and two processes opening it at once migrate it once.

The layout-2 database is ``journal_v2.sql``: what callwright's layout-2 code wrote
(its header says how), loaded as it is into SQLite, and for Postgres its tables made
from the same statements in Postgres's types (``_pg.ddl``, as layout 2's code made
them) with the same rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from callwright import Agent, start_journaled, tool
from callwright.messages import AssistantMessage, ToolResultMessage, UserMessage
from callwright.models import ScriptedModel
from callwright.store import Answer, SQLJournal, open_journal
from callwright.store._pg import ddl

DUMP = Path(__file__).with_name("journal_v2.sql")
RAN: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (asks first)."""
    RAN.append(path)
    return f"deleted {path}"


def make_v2(target: str) -> None:
    """The layout-2 journal at ``target`` (a file path or an empty Postgres database)."""
    script = DUMP.read_text(encoding="utf-8")
    if not target.startswith("postgres"):
        with contextlib.closing(sqlite3.connect(target)) as db:
            db.executescript(script)
            db.execute("PRAGMA user_version = 2")
        return
    import psycopg

    source = sqlite3.connect(":memory:")
    source.executescript(script)
    creates = re.findall(r"^CREATE (?:TABLE|INDEX) .*?;$", script, re.S | re.M)
    tables = [name for (name,) in source.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type = 'table'")]  # fmt: skip
    with psycopg.connect(target, autocommit=True) as db, db.transaction():
        for statement in creates:
            db.execute(ddl(statement))
        for table in tables:
            rows = source.execute(f'SELECT * FROM "{table}"').fetchall()
            if rows:
                marks = ", ".join(["%s"] * len(rows[0]))
                db.cursor().executemany(f'INSERT INTO "{table}" VALUES ({marks})', rows)
        for table in ("segments", "inbox"):
            db.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)"
            )
    source.close()


def keys(target: str) -> dict[str, list[str]]:
    """The primary key's columns of each table keyed by thread."""
    out: dict[str, list[str]] = {}
    if target.startswith("postgres"):
        import psycopg

        with psycopg.connect(target) as db:
            for table in ("threads", "messages", "pending"):
                rows = db.execute(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a "
                    "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
                    "WHERE i.indrelid = %s::regclass AND i.indisprimary",
                    [table],
                ).fetchall()
                out[table] = sorted(name for (name,) in rows)
        return out
    with contextlib.closing(sqlite3.connect(target)) as db:
        for table in ("threads", "messages", "pending"):
            rows = db.execute(f"PRAGMA table_info({table})").fetchall()
            out[table] = sorted(row[1] for row in rows if row[5] > 0)
    return out


def roles(journal: SQLJournal, thread: str, principal: str) -> list[str]:
    return [m.role for m in journal.history(thread, principal)]


async def run(journal: SQLJournal, turns: list[list[Any]], thread: str, request: str,
              prompt: str | None, principal: str, answers: list[Answer] | None = None
              ) -> list[Any]:  # fmt: skip
    agent = Agent(ScriptedModel(turns), [delete_file])
    messages = [UserMessage(prompt)] if prompt else []
    started, rec = start_journaled(journal, agent, thread, request, messages, answers or [],
                                   principal=principal)  # fmt: skip
    seen = []
    async for event in started.events():
        rec.record(event, b"frame")
        seen.append(event)
    return seen


def test_a_layout_2_journal_keeps_its_threads_and_keys_them_by_principal(
    journal_target: str,
) -> None:
    make_v2(journal_target)
    RAN.clear()
    journal = open_journal(journal_target)
    try:
        assert roles(journal, "t1", "alice") == ["user", "assistant", "user", "assistant"]
        assert roles(journal, "t2", "bob") == ["user", "assistant"]
        assert roles(journal, "t3", "") == ["user", "assistant"]
        assert journal.state("t1", "alice") == {"owner": "alice"}
        assert journal.events_after("a-1", 0, "alice")[0][1].startswith(b"data: ")
        assert journal.history("t1", "bob") == [] and journal.pending("t1", "bob") == []
        [pending] = journal.pending("t1", "alice")
        assert (pending.tool_name, pending.arguments) == ("delete_file", {"path": "notes.txt"})

        # bob's own t1: a new thread of his (layout 2 refused it as alice's, 404)
        asyncio.run(run(journal, [["hi bob, on your t1"]], "t1", "b-2", "hello", "bob"))
        assert roles(journal, "t1", "bob") == ["user", "assistant"]
        assert roles(journal, "t1", "alice") == ["user", "assistant", "user", "assistant"]

        # alice's paused run goes on where layout 2 left it
        approve = Answer("approval", call_id="call_a", approval_id=pending.approval_id,
                         approved=True)  # fmt: skip
        asyncio.run(run(journal, [["done"]], "t1", "a-3", None, "alice", [approve]))
        history = journal.history("t1", "alice")
        assert isinstance(history[-2], ToolResultMessage)
        assert history[-2].content == "deleted notes.txt" and RAN == ["notes.txt"]
        assert isinstance(history[-1], AssistantMessage) and history[-1].text == "done"
        bobs = journal.history("t1", "bob")[-1]
        assert isinstance(bobs, AssistantMessage) and bobs.text == "hi bob, on your t1"
    finally:
        journal.close()
    assert keys(journal_target) == {
        "threads": ["id", "principal"],
        "messages": ["principal", "seq", "thread_id"],
        "pending": ["call_id", "principal", "thread_id"],
    }
    if not journal_target.startswith("postgres"):
        with contextlib.closing(sqlite3.connect(journal_target)) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == 3


OPEN = """
import sys
from callwright.store import open_journal
open_journal(sys.argv[1]).close()
"""


def test_two_processes_opening_a_layout_2_journal_at_once_migrate_it_once(
    journal_target: str,
) -> None:
    make_v2(journal_target)
    processes = [
        subprocess.Popen([sys.executable, "-c", OPEN, journal_target], stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for process in processes:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err.decode()
    journal = open_journal(journal_target)  # a third open finds the work done
    try:
        assert roles(journal, "t1", "alice") == ["user", "assistant", "user", "assistant"]
        assert [p.call_id for p in journal.pending("t1", "alice")] == ["call_a"]
        assert roles(journal, "t2", "bob") == ["user", "assistant"]
    finally:
        journal.close()
    assert keys(journal_target)["threads"] == ["id", "principal"]
