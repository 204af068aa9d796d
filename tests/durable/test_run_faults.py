"""Replicas on a real Postgres: whose run a continued segment serves, and what a client
gets while Postgres is down.

The replicas are real processes: ``callwright serve --journal postgresql://…`` for the
outage, and an application with users built in Python (``app_with_users.py``:
``authenticate``, ``deps_factory``, a ``DurableRuntime``) for the principal.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import Replica, agui_body, frames, side_effects, until_ended_sync

APP = str(Path(__file__).with_name("app_with_users.py"))
ALICE = {"authorization": "Bearer alice-token"}


@dataclass
class UsersReplica(Replica):
    """A replica of the application with users."""

    def command(self) -> list[str]:
        return [sys.executable, APP, self.database, self.executor_id, str(self.port)]


@pytest.fixture
def users_cluster(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[list[UsersReplica]]:
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    replicas = [UsersReplica(database, f"users-{n}", effects) for n in "ab"]
    try:
        for replica in replicas:
            replica.start()
        yield replicas
    except BaseException:
        for replica in replicas:
            print(f"--- {replica.executor_id}\n{replica.log()}")
        raise
    finally:
        for replica in replicas:
            replica.stop()


def test_a_run_continued_on_another_replica_keeps_its_principal_and_gets_its_deps_again(
    users_cluster: list[UsersReplica],
) -> None:
    a, b = users_cluster
    tag = f"w{uuid.uuid4().hex[:6]}"
    run_id = f"r-{tag}"
    body = agui_body(f"t-{tag}", f"who 3 {tag}", run_id)
    with httpx.stream("POST", a.url + "/agui", json=body, headers=ALICE, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if "TOOL_CALL_END" in line:
                break
        deadline = time.monotonic() + 30
        while f"start {tag}" not in side_effects(a.side_effects):
            assert time.monotonic() < deadline, side_effects(a.side_effects)
            time.sleep(0.05)
        a.kill()
    events = until_ended_sync(b.url, run_id, ALICE)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    notes = [line for line in side_effects(a.side_effects) if line.startswith("who ")]
    assert notes == [
        f"who {tag} principal=alice tenant=tenant-of-alice by=request",
        f"who {tag} principal=alice tenant=tenant-of-alice by=continuation",
    ]


def test_postgres_down_answers_503_on_requests_and_replays(
    postgres_url: PostgresUrl, tmp_path: Path
) -> None:
    replica = Replica(postgres_url.fresh_database(), "down-a", tmp_path / "effects.txt")
    replica.start()
    try:
        tag = uuid.uuid4().hex[:6]
        done = httpx.post(
            replica.url + "/agui", json=agui_body(f"t-{tag}", "hello", f"r-{tag}"), timeout=30
        )
        assert frames(done.text)[-1]["type"] == "RUN_FINISHED"
        postgres_url.stop()
        try:
            refused = [
                httpx.post(
                    replica.url + "/agui",
                    json=agui_body(f"t2-{tag}", "hello", f"r2-{tag}"),
                    timeout=30,
                ),
                httpx.get(f"{replica.url}/runs/r-{tag}/events", timeout=30),
                httpx.get(f"{replica.url}/api/chat/t-{tag}/stream", timeout=30),
            ]
            for response in refused:
                assert response.status_code == 503, (response.request.url, response.text)
                assert response.json()["error"]["code"] == "journal_unavailable"
                assert "127.0.0.1" not in response.text
                assert str(postgres_url.server.port) not in response.text
        finally:
            postgres_url.start()
        deadline = time.monotonic() + 60
        while True:  # served again once Postgres is back (the lease renewed first)
            again = httpx.post(
                replica.url + "/agui", json=agui_body(f"t3-{tag}", "hi", f"r3-{tag}"), timeout=30
            )
            if again.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert again.status_code == 200, again.text
        assert frames(again.text)[-1]["type"] == "RUN_FINISHED"
    except BaseException:
        print(replica.log())
        raise
    finally:
        replica.stop()
