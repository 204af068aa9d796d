"""A server on a Postgres journal when the database misbehaves, over real HTTP: the
Postgres counterparts of the SQLite file's faults (tests/server/test_journal_faults.py
and the locked file in test_journal_ownership.py).

A lock another process holds delays only the run that needs it, never the event loop;
a restarted Postgres costs nothing once it is back (the journal reconnects); a stopped
one ends a request at once with an error, it does not hang."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from _postgres import PostgresUrl
from callwright import Agent
from callwright.messages import UserMessage
from callwright.models import ModelRequest, ScriptedModel
from callwright.server import create_app
from callwright.store import PostgresJournal, _pg
from live_server import Server


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    return [f"You said: {last.content}"]


@pytest.fixture
def database(postgres_url: PostgresUrl) -> Iterator[str]:
    url = postgres_url.fresh_database()
    yield url
    postgres_url.drop_database(url)


@pytest.fixture
def served(database: str) -> Iterator[tuple[str, PostgresJournal]]:
    journal = PostgresJournal(database, busy_seconds=5)
    with Server(create_app(Agent(ScriptedModel(script, record=False)), journal=journal)) as s:
        yield s.url, journal
    journal.close()


def agui(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def post(url: str, thread: str, text: str, timeout: float = 30) -> httpx.Response:
    return httpx.post(url + "/agui", json=agui(thread, text), timeout=timeout)


def said(response: httpx.Response) -> str:
    events = [json.loads(b[6:]) for b in response.text.split("\n\n") if b.startswith("data: ")]
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_a_lock_held_elsewhere_delays_only_the_runs_that_write(
    served: tuple[str, PostgresJournal], database: str
) -> None:
    """Another process holds the runs table for 1.5 s: a new run waits for it (within
    the journal's lock timeout), while the server
    keeps answering (well before the lock is let go)."""
    url, _ = served
    assert said(post(url, "t-warm", "hello")) == "You said: hello"
    with psycopg.connect(database) as holder:
        holder.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        out: list[httpx.Response] = []
        worker = threading.Thread(target=lambda: out.append(post(url, "t-locked", "waited")))
        worker.start()
        time.sleep(0.2)
        worst = 0.0
        with httpx.Client(timeout=5) as http:
            for _ in range(10):
                started = time.perf_counter()
                assert http.get(url + "/").status_code == 200
                worst = max(worst, time.perf_counter() - started)
                time.sleep(0.1)
        assert not out  # the run is still waiting for the lock
    worker.join(30)
    assert said(out[0]) == "You said: waited"
    # a loop stalled behind the lock would take over a second (the lock is held 1.5 s);
    # the bound leaves room for a loaded machine
    assert worst < 0.75, f"the loop stalled for {worst * 1000:.0f} ms"


def test_a_restarted_postgres_costs_nothing_once_it_is_back(
    served: tuple[str, PostgresJournal], postgres_url: PostgresUrl
) -> None:
    url, journal = served
    assert said(post(url, "t-restart", "before")) == "You said: before"
    postgres_url.restart()
    assert said(post(url, "t-restart", "after")) == "You said: after"
    assert [m.role for m in journal.history("t-restart")] == ["user", "assistant"] * 2


def test_a_stopped_postgres_ends_a_request_at_once(
    served: tuple[str, PostgresJournal], postgres_url: PostgresUrl
) -> None:
    url, _ = served
    assert said(post(url, "t-stop", "before")) == "You said: before"
    postgres_url.stop()
    try:
        started = time.monotonic()
        refused = post(url, "t-stop", "while stopped", timeout=20)
        assert time.monotonic() - started < 10
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "journal_unavailable"
        assert "127.0.0.1" not in refused.text and str(postgres_url.server.port) not in refused.text
    finally:
        postgres_url.start()
    assert said(post(url, "t-stop", "back")) == "You said: back"


def cluster_pids(server: Any) -> list[int]:
    """The postmaster and every process it started (the backends among them)."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [postmaster, *map(int, children)]


def test_a_frozen_postgres_fails_a_write_instead_of_hanging_it(
    database: str, postgres_url: PostgresUrl
) -> None:
    """The cluster's processes stopped (SIGSTOP): the kernel still acknowledges TCP, so
    only the journal's own bound on a silent database ends the wait. The client's
    timeout is far above that bound: a writer that waited would fail the request."""
    journal = PostgresJournal(database, busy_seconds=1, statement_seconds=1)
    app = create_app(Agent(ScriptedModel(script, record=False)), journal=journal)
    with Server(app) as server:
        assert said(post(server.url, "t-frozen", "before")) == "You said: before"
        frozen = cluster_pids(postgres_url.server)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            refused = post(server.url, "t-frozen", "while frozen", timeout=60)
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "journal_unavailable"
        assert str(postgres_url.server.port) not in refused.text
        assert said(post(server.url, "t-frozen", "back")) == "You said: back"
    journal.close()


def test_connections_have_timeouts_that_the_url_can_change(database: str) -> None:
    def settings(url: str) -> tuple[str, str, str | None, str | None]:
        db = _pg.connect(url, busy_seconds=3, statement_seconds=30)
        try:
            statement = db.execute("SHOW statement_timeout").fetchone()[0]
            lock = db.execute("SHOW lock_timeout").fetchone()[0]
            params = db.raw.info.get_parameters()
            return statement, lock, params.get("connect_timeout"), params.get("keepalives_idle")
        finally:
            db.close()

    assert settings(database) == ("30s", "3s", "3", "30")
    changed = f"{database}?connect_timeout=7&keepalives_idle=5&options=-c%20statement_timeout%3D0"
    assert settings(changed) == ("0", "3s", "7", "5")


def test_a_postgres_frozen_mid_run_ends_the_run_with_journal_unavailable(
    database: str, postgres_url: PostgresUrl
) -> None:
    """Frozen while the model streams its reply: the writer's wait ends after the
    bound and the stream ends with ``RUN_ERROR`` ``journal_unavailable``; the thread
    takes a new request once the database goes on."""
    journal = PostgresJournal(database, busy_seconds=1, statement_seconds=1)
    model = ScriptedModel(script, record=False, split_text=True, delay=0.3)
    with Server(create_app(Agent(model), journal=journal)) as server:
        body = agui("t-mid", "one two three four five six")
        frozen: list[int] = []
        events: list[dict[str, Any]] = []
        try:
            with httpx.stream("POST", server.url + "/agui", json=body, timeout=60) as response:
                for line in response.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    events.append(json.loads(line[6:]))
                    if events[-1]["type"] == "TEXT_MESSAGE_CONTENT" and not frozen:
                        frozen = cluster_pids(postgres_url.server)
                        for pid in frozen:
                            os.kill(pid, signal.SIGSTOP)
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        assert frozen
        last = events[-1]
        assert last["type"] == "RUN_ERROR" and last["code"] == "journal_unavailable", last
        assert str(postgres_url.server.port) not in json.dumps(events)
        assert said(post(server.url, "t-mid-after", "back")) == "You said: back"
    journal.close()


def test_a_postgres_stopped_mid_run_ends_the_run_without_its_address(
    database: str, postgres_url: PostgresUrl
) -> None:
    """Stopped while the model streams its reply: the run ends with ``RUN_ERROR``
    ``journal_unavailable`` naming the driver's error type, never the database's host or
    port (a client must not learn where the database is)."""
    journal = PostgresJournal(database, busy_seconds=1, statement_seconds=1)
    model = ScriptedModel(script, record=False, split_text=True, delay=0.3)
    with Server(create_app(Agent(model), journal=journal)) as server:
        events = _stopped_mid_reply(server, postgres_url, "t-gone")
        last = events[-1]
        assert last["type"] == "RUN_ERROR" and last["code"] == "journal_unavailable", last
        assert "127.0.0.1" not in last["message"], last
        assert str(postgres_url.server.port) not in last["message"], last
    journal.close()


def test_a_run_an_outage_stopped_is_settled_once_postgres_is_back(
    database: str, postgres_url: PostgresUrl
) -> None:
    """A run whose write failed while Postgres was stopped is settled (its replay ends)
    by the first heartbeat after Postgres answers, not at the end of the heartbeat's
    interval: the failed settle asks the heartbeat to beat at its retry pace. The
    interval here (60 s) is longer than the test waits."""
    journal = PostgresJournal(
        database, busy_seconds=1, statement_seconds=1, heartbeat_seconds=60, lease_seconds=180
    )
    model = ScriptedModel(script, record=False, split_text=True, delay=0.3)
    with Server(create_app(Agent(model), journal=journal)) as server:
        events = _stopped_mid_reply(server, postgres_url, "t-settled")
        assert events[-1].get("code") == "journal_unavailable", events[-1]
        deadline = time.monotonic() + 30
        with psycopg.connect(database, autocommit=True) as pg:
            while True:
                row = pg.execute("SELECT status FROM runs WHERE thread_id = 't-settled'").fetchone()
                if (row is not None and row[0] != "running") or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        assert row is not None and row[0] == "interrupted", row
    journal.close()


def _stopped_mid_reply(server: Server, postgres_url: PostgresUrl, thread: str) -> list[Any]:
    """The frames of a run on ``thread`` whose Postgres is stopped at its first text
    delta and started again once the stream has ended."""
    body = agui(thread, "one two three four five six")
    events: list[dict[str, Any]] = []
    stopped = False
    try:
        with httpx.stream("POST", server.url + "/agui", json=body, timeout=60) as response:
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                events.append(json.loads(line[6:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT" and not stopped:
                    postgres_url.stop()
                    stopped = True
    finally:
        if stopped:
            postgres_url.start()
    return events
