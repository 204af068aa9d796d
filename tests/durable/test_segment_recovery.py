"""Who continues a replica's segments: the run journal, not DBOS.

Each segment's row holds what another process needs to continue it (its spec, written
with the segment); a replica that comes back after a SIGKILL with the same executor id
continues its own segments from the journal, as another replica would (that takeover is
in ``test_replicas``). What must hold: the run goes on to its end, its tool not run
twice, and DBOS holds no workflow of a segment (DBOS is kept for the tool workers).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import psycopg
import pytest

from _postgres import PostgresUrl
from durable._cluster import Replica, agui_body, frames, stream, until_ended, until_started


def test_a_replica_back_with_its_id_continues_its_own_segments(
    postgres_url: PostgresUrl, tmp_path: Path
) -> None:
    replica = Replica(postgres_url.fresh_database(), "rows-a", tmp_path / "side_effects.txt")
    try:
        replica.start()
        asyncio.run(_killed_and_back(replica, replica.side_effects))
    except BaseException:
        print(replica.log())
        raise
    finally:
        replica.stop()


async def _killed_and_back(replica: Replica, effects: Path) -> None:
    database = replica.database
    async with httpx.AsyncClient(timeout=60) as http:
        done = frames(await stream(http, replica.url, agui_body("t-done", "talk 3", "r-done")))
        assert done[-1]["type"] == "RUN_FINISHED"

        body = agui_body("t-slow", "idem 1.5 k1", "r-slow")
        running = asyncio.create_task(stream(http, replica.url, body))
        await until_started(effects, ["k1"])
        with psycopg.connect(database) as db:
            row = db.execute("SELECT status, owner, spec FROM segments WHERE request_id = 'r-slow'")
            status, owner, spec = row.fetchone()
        assert (status, owner) == ("running", "rows-a")
        assert json.loads(spec)["thread_id"] == "t-slow"
        replica.kill()
        await running

        replica.start()  # the same executor id: it continues its own segment
        events = await until_ended(http, replica.url, "r-slow")
        results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert results == ["k1 finished"], [e["type"] for e in events]
        assert [e for e in events if e["type"] == "RUN_STARTED"][1:] == []

    with psycopg.connect(database) as db:
        segments = db.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE 'seg:%'"
        ).fetchone()
    assert segments == (0,)


def test_a_spec_reads_back_what_it_wrote_and_refuses_what_is_not_one() -> None:
    from callwright.durable import SegmentSpec

    spec = SegmentSpec(
        "r1", "t1", "alice", "aisdk", ai_version=7, message_id="m1",
        client_tools=[{"name": "pick", "description": "", "parameters": {}}],
        forwarded_props={"k": [1]},
    )  # fmt: skip
    assert SegmentSpec.from_json(spec.to_json()) == spec
    newer = json.dumps({**json.loads(spec.to_json()), "added_later": 1})
    assert SegmentSpec.from_json(newer) == spec  # a newer replica's field is left out
    for text in ("not json", "[1]", '{"thread_id": "t"}'):
        with pytest.raises(ValueError):
            SegmentSpec.from_json(text)
