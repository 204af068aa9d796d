"""The journaled server under faults, over real HTTP: a disk that fills up or turns
read-only mid-run, a write that fails before a tool starts, event logs past retention.

The full disk is real: SQLite is told the file may not grow past its current size
(``PRAGMA max_page_count``), so the next write that needs a page fails with SQLite's own
``database or disk is full``. The read-only one is ``PRAGMA query_only``. The failing
write is a journal subclass raising ``sqlite3.OperationalError`` at a chosen write.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from _sse import frames
from callwright import Agent, tool
from callwright.messages import AssistantMessage, ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLiteJournal, SQLJournal, open_journal
from callwright.store.base import Segment
from live_server import Server

RAN: list[str] = []
BIG = "x" * 200_000  # a result that needs new pages


@tool
async def produce(name: str) -> str:
    """Makes a large result (after a moment)."""
    await asyncio.sleep(0.1)
    RAN.append(name)
    return BIG


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {len(last.content)} characters"]
    assert isinstance(last, UserMessage)
    word, _, rest = last.content.partition(" ")
    if word == "produce":
        return [call("produce", {"name": rest}, id=f"call_{uuid.uuid4().hex[:8]}")]
    return [f"You said: {last.content}"]


class FaultyDisk(SQLiteJournal):
    """A journal whose disk fills up (or turns read-only) when a tool's outcome is written,
    until ``free()``."""

    def __init__(self, path: str, fault: str, **options: Any) -> None:
        super().__init__(path, **options)
        self.fault = fault
        self.armed = True

    def mark_operation(
        self, segment: Segment, call_id: str, status: str, output: Any = None, events: Any = ()
    ) -> None:
        if status == "completed" and self.armed:
            self.armed = False
            self._set_fault(True)
        super().mark_operation(segment, call_id, status, output, events)

    def _set_fault(self, on: bool) -> None:
        with self._lock:  # the writer thread's connection
            if self.fault == "full":
                pages = self._db.execute("PRAGMA page_count").fetchone()[0]
                self._db.execute(f"PRAGMA max_page_count={pages if on else 1 << 30}")
            else:
                self._db.execute(f"PRAGMA query_only={int(on)}")

    def free(self) -> None:
        self._set_fault(False)


class FailingWrite(SQLiteJournal):
    """A journal whose first write of a tool's ``started`` row fails."""

    armed = True

    def mark_operation(
        self, segment: Segment, call_id: str, status: str, output: Any = None, events: Any = ()
    ) -> None:
        if status == "started" and self.armed:
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        super().mark_operation(segment, call_id, status, output, events)


class UnreachableDatabase(SQLiteJournal):
    """A journal whose write of a tool's ``started`` row fails as a refused Postgres
    connection does, its text naming the database's address."""

    def mark_operation(
        self, segment: Segment, call_id: str, status: str, output: Any = None, events: Any = ()
    ) -> None:
        if status == "started":
            raise psycopg.OperationalError(
                'connection failed: connection to server at "10.20.30.40", port 6543 failed: '
                "Connection refused"
            )
        super().mark_operation(segment, call_id, status, output, events)


def agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [produce])


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    journals: list[SQLJournal] = []
    servers: list[Server] = []

    def start(journal: SQLJournal) -> str:
        journals.append(journal)
        server = Server(create_app(agent(), journal=journal))
        servers.append(server.__enter__())
        return server.url

    yield start
    for server in servers:
        server.__exit__(None, None, None)
    for journal in journals:
        journal.close()


def post(url: str, thread: str, text: str | None, run_id: str | None = None) -> httpx.Response:
    body = {
        "threadId": thread,
        "runId": run_id or f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    return httpx.post(url + "/agui", json=body, timeout=30)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def replay(url: str, run_id: str) -> httpx.Response:
    """The replay, which must end (a hang fails on the timeout)."""
    return httpx.get(f"{url}/runs/{run_id}/events", timeout=10)


@pytest.mark.parametrize(
    ("fault", "error"),
    [("full", "database or disk is full"), ("readonly", "attempt to write a readonly database")],
)
def test_a_disk_that_fails_mid_run_ends_the_run_and_nothing_diverges(
    serve: Any, tmp_path: Path, fault: str, error: str
) -> None:
    RAN.clear()
    journal = FaultyDisk(str(tmp_path / "runs.db"), fault, heartbeat_seconds=60)
    url = serve(journal)
    events = frames(post(url, "t-disk", "produce report", run_id="run-disk").text)
    # the tool ran; its outcome could not be written: the run stops there, with the reason
    assert RAN == ["report"]
    last = events[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "journal_unavailable", last
    assert error in last["message"]
    assert text_of(events) == ""  # the model was not asked again: nothing went on unrecorded
    # while the disk is still failing, the thread cannot move on either
    still = post(url, "t-disk", "hello")
    assert still.status_code == 503 and still.json()["error"]["code"] == "journal_unavailable"

    journal.free()
    after = frames(post(url, "t-disk", "hello").text)
    assert text_of(after) == "You said: hello"
    history = journal.history("t-disk")
    kinds = [type(m).__name__ for m in history]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    result = history[2]
    assert isinstance(result, ToolResultMessage) and result.content == BIG  # what really ran
    assert not result.is_error
    assert RAN == ["report"]  # and it was not run again
    stored = frames(replay(url, "run-disk").text)
    assert stored[-1]["type"] == "RUN_ERROR" and stored[-1]["code"] == "interrupted"


def test_a_failed_write_before_a_tool_starts_means_the_tool_does_not_run(
    serve: Any, tmp_path: Path
) -> None:
    RAN.clear()
    journal = FailingWrite(str(tmp_path / "runs.db"))
    url = serve(journal)
    events = frames(post(url, "t-fail", "produce draft", run_id="run-fail").text)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "journal_unavailable"
    assert "database or disk is full" in events[-1]["message"]
    assert RAN == []  # its started row was not durable, so it never started
    stored = frames(replay(url, "run-fail").text)  # settled at once: the disk was fine again
    assert stored[-1]["type"] == "RUN_ERROR" and stored[-1]["code"] == "interrupted"
    resumed = frames(post(url, "t-fail", None).text)  # resume: the model asks again
    assert text_of(resumed) == f"Done: {len(BIG)} characters"
    assert RAN == ["draft"]
    history = journal.history("t-fail")
    assert [type(m) for m in history] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]


def test_a_database_error_mid_run_names_its_type_and_not_the_databases_address(
    serve: Any, tmp_path: Path
) -> None:
    url = serve(UnreachableDatabase(str(tmp_path / "runs.db")))
    events = frames(post(url, "t-addr", "produce draft").text)
    last = events[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "journal_unavailable", last
    assert "OperationalError" in last["message"]
    assert "10.20.30.40" not in last["message"] and "6543" not in last["message"]


def test_event_logs_past_retention_are_deleted(serve: Any, journal_target: str) -> None:
    journal = open_journal(journal_target, retention_days=1)
    url = serve(journal)
    first = post(url, "t-old", "hello", run_id="run-old")
    assert replay(url, "run-old").text == first.text
    journal.sweep()  # a day has not passed: kept
    assert replay(url, "run-old").text == first.text
    journal.retention_days = 0
    journal.sweep()
    gone = replay(url, "run-old")
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "expired"
    assert journal.history("t-old")  # the conversation itself stays
    assert post(url, "t-old", "still here").status_code == 200


def test_a_settled_segment_ends_a_live_replay(serve: Any, tmp_path: Path) -> None:
    """A replay following a run whose process could not finish it ends once the run is
    settled, with the closing error frame (not after a timeout)."""
    RAN.clear()
    journal = FaultyDisk(str(tmp_path / "runs.db"), "full", heartbeat_seconds=0.2)
    url = serve(journal)
    out: list[httpx.Response] = []
    follower = threading.Thread(target=lambda: out.append(replay_when_started(url, "run-live")))
    follower.start()
    post(url, "t-live", "produce live", run_id="run-live")
    time.sleep(0.5)
    journal.free()  # the next heartbeat settles the run
    follower.join(15)
    assert out and out[0].status_code == 200
    assert frames(out[0].text)[-1]["code"] == "interrupted"


def replay_when_started(url: str, run_id: str) -> httpx.Response:
    deadline = time.monotonic() + 10
    while True:
        response = replay(url, run_id)
        if response.status_code != 404 or time.monotonic() > deadline:
            return response
        time.sleep(0.02)
