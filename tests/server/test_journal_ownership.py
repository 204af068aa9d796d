"""The journaled server (``--journal``) over real HTTP, as many users and processes use it:
threads, runs, approvals and event logs belong to their principal (a thread id is the
principal's: two principals' threads of one id are two threads); the journal owns a
thread's state; a run id names one request of one thread; one thread runs one request at
a time across processes, and concurrent answers to one approval have one winner; a locked
database does not stall the event loop."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from _sse import frames
from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.server import create_app
from callwright.store import SQLJournal, open_journal
from live_server import Server

RAN: list[str] = []


@tool(requires_approval=True)
async def delete_file(path: str) -> str:
    """Delete a file (asks first); takes a moment, so that answers can race."""
    await asyncio.sleep(0.2)
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool(requires_approval=True, allow_edits=True)
def pay(amount: int) -> str:
    """Pay (asks first; the human may change the amount)."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
async def slow(seconds: float) -> str:
    """Runs for a while."""
    await asyncio.sleep(seconds)
    return "finished"


@tool
def whoami(ctx: ToolContext) -> str:
    """The role the thread's state gives."""
    assert ctx.state is not None
    return str(ctx.state.data.get("role"))


def script(request: ModelRequest) -> list[Any]:
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return [f"Done: {last.content}"]
    assert isinstance(last, UserMessage)
    word, _, rest = last.content.partition(" ")
    if word == "recall":  # what the model was given of the thread
        said = [m.content for m in request.messages if isinstance(m, UserMessage)]
        return [f"Seen: {' | '.join(said)}"]
    calls = {
        "delete": lambda: call("delete_file", {"path": rest}, id=new_id()),
        "pay": lambda: call("pay", {"amount": int(rest)}, id=new_id()),
        "slow": lambda: call("slow", {"seconds": float(rest)}, id=new_id()),
        "role": lambda: call("whoami", {}, id=new_id()),
    }
    return [calls[word]()] if word in calls else [f"You said: {last.content}"]


def new_id() -> str:
    return f"call_{uuid.uuid4().hex[:10]}"


def agent() -> Agent:
    return Agent(ScriptedModel(script, record=False), [delete_file, pay, slow, whoami])


def as_user(request: Request) -> str | None:
    """The test's authentication: the caller names themself."""
    return request.headers.get("x-user")


@pytest.fixture
def db(journal_target: str) -> str:
    """The journal every server of a test opens: a file, or a Postgres database."""
    return journal_target


@pytest.fixture
def served(db: str) -> Iterator[tuple[str, SQLJournal]]:
    journal = open_journal(db)
    with Server(create_app(agent(), journal=journal, authenticate=as_user)) as server:
        yield server.url, journal
    journal.close()


@pytest.fixture
def second(db: str) -> Iterator[str]:
    """Another server process on the same journal file (its own journal and lease)."""
    journal = open_journal(db)
    with Server(create_app(agent(), journal=journal, authenticate=as_user)) as server:
        yield server.url
    journal.close()


def post(
    url: str,
    user: str,
    thread: str,
    text: str | None,
    *,
    run_id: str | None = None,
    **extra: Any,
) -> httpx.Response:
    body = {
        "threadId": thread,
        "runId": run_id or f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}] if text else [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }
    return httpx.post(url + "/agui", json=body, headers={"x-user": user}, timeout=30)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def pause(url: str, user: str, thread: str, text: str, run_id: str | None = None) -> str:
    events = frames(post(url, user, thread, text, run_id=run_id))
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", events[-1]
    return str(outcome["interrupts"][0]["id"])


def resume(interrupt: str, approved: bool = True, **payload: Any) -> dict[str, Any]:
    return {
        "resume": [
            {
                "interruptId": interrupt,
                "status": "resolved",
                "payload": {"approved": approved, **payload},
            }
        ]
    }


def refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


# --- ownership -----------------------------------------------------------------------


def test_another_principals_thread_answers_like_an_unused_id(
    served: tuple[str, SQLJournal],
) -> None:
    """bob, on the id of alice's paused thread, gets what an id nobody used gets: his
    answer to her approval is unknown, his message starts a thread of his own. Nothing
    tells him the id is taken, and alice's thread is untouched."""
    url, journal = served
    RAN.clear()
    interrupt = pause(url, "alice", "t-alice", "delete secret.txt", run_id="run-alice")
    before = journal.snapshot()

    on_hers = post(url, "bob", "t-alice", None, **resume(interrupt))
    on_unused = post(url, "bob", "t-unused", None, **resume(interrupt))
    refused(on_hers, 404, "unknown_approval")
    assert on_hers.json() == on_unused.json()
    refused(post(url, "bob", "t-bob", None, **resume(interrupt)), 404, "unknown_approval")
    replay = httpx.get(f"{url}/runs/run-alice/events", headers={"x-user": "bob"})
    refused(replay, 404, "unknown_run")
    assert journal.snapshot() == before  # nothing written for bob's refused answers
    assert RAN == []

    hers = frames(post(url, "bob", "t-alice", "recall"))
    unused = frames(post(url, "bob", "t-unused", "recall"))
    assert [e["type"] for e in hers] == [e["type"] for e in unused]
    assert text_of(hers) == text_of(unused) == "Seen: recall"  # nothing of alice's
    assert journal.pending("t-alice", "bob") == []
    assert [p.tool_name for p in journal.pending("t-alice", "alice")] == ["delete_file"]

    done = frames(post(url, "alice", "t-alice", None, **resume(interrupt)))
    assert text_of(done) == "Done: deleted secret.txt" and RAN == ["delete secret.txt"]
    mine = httpx.get(f"{url}/runs/run-alice/events", headers={"x-user": "alice"})
    assert mine.status_code == 200 and '"RUN_FINISHED"' in mine.text
    said = frames(post(url, "alice", "t-alice", "recall"))
    assert text_of(said) == "Seen: delete secret.txt | recall"


def test_two_principals_use_one_thread_id_at_once_each_in_their_own_thread(
    served: tuple[str, SQLJournal],
) -> None:
    """bob starts a run on ``t-same`` while alice's run on her ``t-same`` is going on:
    neither is busy, and each principal's model sees only their own messages."""
    url, journal = served

    async def both() -> tuple[list[str], httpx.Response]:
        headers = {"x-user": "alice"}
        alice = agui_body("t-same", "slow 0.5")
        async with (
            httpx.AsyncClient(base_url=url, timeout=30) as http,
            http.stream("POST", "/agui", json=alice, headers=headers) as first,
        ):
            lines = first.aiter_lines()
            seen = []
            async for line in lines:  # until alice's run is live in the journal
                seen.append(line)
                if "TOOL_CALL_START" in line:
                    break
            bob = await http.post(
                "/agui", json=agui_body("t-same", "slow 0"), headers={"x-user": "bob"}
            )
            seen += [line async for line in lines]
        return seen, bob

    alice_lines, bob = asyncio.run(both())
    assert bob.status_code == 200, bob.text
    assert text_of(frames(bob)) == "Done: finished"
    alice_events = [json.loads(line[6:]) for line in alice_lines if line.startswith("data: ")]
    assert text_of(alice_events) == "Done: finished"

    assert text_of(frames(post(url, "alice", "t-same", "recall"))) == "Seen: slow 0.5 | recall"
    assert text_of(frames(post(url, "bob", "t-same", "recall"))) == "Seen: slow 0 | recall"
    assert [m.role for m in journal.history("t-same", "alice")] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert len(journal.history("t-same", "bob")) == 6


def agui_body(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def test_a_journaled_threads_state_is_the_journals_not_the_clients(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    first = frames(post(url, "alice", "t-state", "role", state={"role": "user"}))
    assert text_of(first) == "Done: user"
    again = frames(post(url, "alice", "t-state", "role", state={"role": "admin"}))
    assert text_of(again) == "Done: user"  # the client's state was ignored
    snapshots = [e["snapshot"] for e in again if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots == [{"role": "user"}]
    assert journal.state("t-state", "alice") == {"role": "user"}


def test_the_same_run_id_on_two_threads_is_refused(served: tuple[str, SQLJournal]) -> None:
    url, _ = served
    first = post(url, "alice", "t-one", "hello one", run_id="run-shared")
    assert first.status_code == 200
    again = post(url, "alice", "t-two", "hello two", run_id="run-shared")
    refused(again, 409, "run_id_in_use")
    assert "hello one" not in again.text
    replay = httpx.get(f"{url}/runs/run-shared/events", headers={"x-user": "alice"})
    assert replay.text == first.text  # one thread's events, never the other's
    # run ids are scoped to their principal: bob's run-shared is another run
    bobs = post(url, "bob", "t-bob", "hello bob", run_id="run-shared")
    assert bobs.status_code == 200
    assert httpx.get(f"{url}/runs/run-shared/events", headers={"x-user": "bob"}).text == bobs.text


# --- one thread, one run -------------------------------------------------------------


def in_background(fn: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(fn(*args, **kwargs)))
    worker.start()
    return worker, out


def wait_until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def running(journal: SQLJournal) -> bool:
    return any(row[2] == "running" for row in journal.snapshot()["runs"])


def test_a_thread_running_in_another_process_is_busy(
    served: tuple[str, SQLJournal], second: str
) -> None:
    url, journal = served
    worker, out = in_background(post, url, "alice", "t-busy", "slow 1.5")
    wait_until(lambda: running(journal))
    refused(post(second, "alice", "t-busy", "me too"), 409, "thread_busy")
    worker.join(30)
    assert text_of(frames(out[0])) == "Done: finished"
    after = post(second, "alice", "t-busy", "now")  # the thread is free again
    assert text_of(frames(after)) == "You said: now"


def test_concurrent_answers_to_one_approval_have_one_winner(
    served: tuple[str, SQLJournal], second: str
) -> None:
    url, _ = served
    RAN.clear()
    interrupt = pause(url, "alice", "t-race", "delete race.txt")
    barrier = threading.Barrier(2)

    def answer(server: str) -> httpx.Response:
        barrier.wait()
        return post(server, "alice", "t-race", None, **resume(interrupt))

    workers = [in_background(answer, server) for server in (url, second)]
    for worker, _ in workers:
        worker.join(30)
    responses = [out[0] for _, out in workers]
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 409], [r.text for r in responses]
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["error"]["code"] in ("thread_busy", "already_answered")
    assert RAN == ["delete race.txt"]


# --- edited arguments ----------------------------------------------------------------


def test_edited_arguments_apply_where_the_tool_allows_edits(
    served: tuple[str, SQLJournal],
) -> None:
    url, journal = served
    RAN.clear()
    interrupt = pause(url, "alice", "t-pay", "pay 500")
    done = frames(post(url, "alice", "t-pay", None, **resume(interrupt, arguments={"amount": 150})))
    note = (
        '[The user edited the arguments before running: proposed {"amount":500}, '
        'ran {"amount":150}.] paid 150'
    )
    assert text_of(done) == f"Done: {note}" and RAN == ["pay 150"]
    results = [m for m in journal.history("t-pay", "alice") if isinstance(m, ToolResultMessage)]
    assert [m.content for m in results] == [note]  # a resumed thread shows the same
    interrupt = pause(url, "alice", "t-edit", "delete a.txt")
    edited = post(url, "alice", "t-edit", None, **resume(interrupt, arguments={"path": "/etc"}))
    refused(edited, 409, "arguments_changed")
    assert RAN == ["pay 150"]


# --- a locked database ---------------------------------------------------------------


@pytest.mark.parametrize("journal_target", ["sqlite"], indirect=True)  # a SQLite file's lock
def test_a_locked_database_delays_only_the_runs_that_write(
    served: tuple[str, SQLJournal], db: str
) -> None:
    """Another process holds the write lock for 1.5 s: a new run waits for it (the
    journal's busy timeout), while the server
    keeps answering (well before the lock is let go)."""
    url, _ = served
    assert post(url, "alice", "t-warm", "hello").status_code == 200
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        worker, out = in_background(post, url, "alice", "t-locked", "hello while locked")
        time.sleep(0.2)
        worst = 0.0
        with httpx.Client(timeout=5) as http:
            for _ in range(10):
                started = time.perf_counter()
                assert http.get(url + "/").status_code == 200
                worst = max(worst, time.perf_counter() - started)
                time.sleep(0.1)
        assert not out  # the run is still waiting for the lock
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    worker.join(30)
    assert text_of(frames(out[0])) == "You said: hello while locked"
    # a loop stalled behind the lock would take over a second (the lock is held 1.5 s);
    # the bound leaves room for a loaded machine
    assert worst < 0.75, f"the loop stalled for {worst * 1000:.0f} ms"
