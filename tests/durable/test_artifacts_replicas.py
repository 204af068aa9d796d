"""Artifacts on replicas and tool workers: two replicas of an application with users
and ``Artifacts`` (``artifacts_app.py``) and a tool worker on one Postgres.

A large result made on the worker, and one made by a run that replica B continued after
A was SIGKILLed, is stored in the journal's database: the model reads a range with
``read_artifact``, and the owner downloads the whole from either live replica; another
principal gets 404 there too.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import (
    Replica,
    ToolWorker,
    agui_body,
    frames,
    ran_in,
    side_effects,
    until_ended_sync,
)

APP = str(Path(__file__).with_name("artifacts_app.py"))
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
NOT_FOUND = {"error": {"message": "no such artifact", "code": "artifact_not_found"}}


def big_text(tag: str) -> bytes:
    return "".join(f"{tag} line {i:06d}\n" for i in range(10_000)).encode()


@dataclass
class ArtifactsReplica(Replica):
    """A replica of ``artifacts_app.py``."""

    def command(self) -> list[str]:
        return [sys.executable, APP, self.database, self.executor_id, str(self.port)]


@pytest.fixture
def cluster(postgres_url: PostgresUrl, tmp_path: Path) -> Iterator[list[Any]]:
    database = postgres_url.fresh_database()
    effects = tmp_path / "effects.txt"
    processes: list[Any] = [ArtifactsReplica(database, f"art-{n}", effects) for n in "ab"]
    processes.append(ToolWorker(database, "art-w", effects, agent=f"{APP}:make_agent"))
    try:
        for process in processes:
            process.start()
        yield processes
    except BaseException:
        for process in processes[:2]:
            print(f"--- {process.executor_id}\n{process.log()}")
        raise
    finally:
        for process in processes:
            process.stop()


def assert_stored_and_read(events: list[dict[str, Any]], tag: str, urls: list[str]) -> None:
    """The big call's result is a preview with a link, the model read lines 5,001-5,002,
    and the owner alone downloads the whole from every replica in ``urls``."""
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    big = next(e for e in results if e["toolCallId"] == f"call_{tag}")
    artifact = big["metadata"]["callwright"]["artifact"]
    assert len(big["content"].encode()) <= 4096 and artifact["id"] in big["content"]
    read = next(e for e in results if e["toolCallId"] == f"call_read_{tag}")
    assert f"{tag} line 005000" in read["content"] and f"{tag} line 005001" in read["content"]
    assert f"{tag} line 005002" not in read["content"]
    text = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("Done: ") and f"{tag} line 005000" in text
    path = artifact["url"]
    for url in urls:
        owner = httpx.get(url + path, headers=ALICE, timeout=30)
        assert owner.status_code == 200 and owner.content == big_text(tag)
        other = httpx.get(url + path, headers=BOB, timeout=30)
        assert other.status_code == 404 and other.json() == NOT_FOUND


def test_a_large_result_from_a_tool_worker_is_downloadable_from_either_replica(
    cluster: list[Any],
) -> None:
    a, b, worker = cluster
    tag = f"w{uuid.uuid4().hex[:6]}"
    run_id = f"r-{tag}"
    body = agui_body(f"t-{tag}", f"big remote {tag}", run_id)
    response = httpx.post(a.url + "/agui", json=body, headers=ALICE, timeout=60)
    assert response.status_code == 200
    assert ran_in(a.side_effects, tag) == [worker.pid]
    assert_stored_and_read(frames(response.text), tag, [a.url, b.url])


def test_a_large_result_of_a_run_continued_on_b_is_stored_for_every_replica(
    cluster: list[Any],
) -> None:
    a, b, _ = cluster
    tag = f"c{uuid.uuid4().hex[:6]}"
    run_id = f"r-{tag}"
    body = agui_body(f"t-{tag}", f"big here {tag}", run_id)
    try:
        with httpx.stream("POST", a.url + "/agui", json=body, headers=ALICE, timeout=30) as got:
            assert got.status_code == 200
            for line in got.iter_lines():
                if f"start {tag}" in side_effects(a.side_effects):
                    a.kill()
                    break
                if "TOOL_CALL_END" in line:
                    deadline = time.monotonic() + 30
                    while f"start {tag}" not in side_effects(a.side_effects):
                        assert time.monotonic() < deadline
                        time.sleep(0.05)
                    a.kill()
                    break
    except httpx.HTTPError:
        pass  # A died under the stream
    events = until_ended_sync(b.url, run_id, ALICE)
    assert b.process is not None and ran_in(b.side_effects, tag)[-1] == b.process.pid
    assert_stored_and_read(events, tag, [b.url])
