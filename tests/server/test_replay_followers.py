"""Many clients following one live run over real HTTP: each reads the whole stream (from
its ``after``), and while the run is quiet the journal is polled by one shared reader,
not once per follower per poll (200 followers used to queue 4,000 journal reads a
second behind other requests; issue 24, "200 followers of one live run")."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from callwright import Agent
from callwright.models import ModelRequest, ScriptedModel
from callwright.models.base import ModelEvent
from callwright.server import create_app
from callwright.server._responses import POLL_SECONDS
from callwright.store import SQLiteJournal
from live_server import Server

FOLLOWERS = 30
WORDS = 60
QUIET = 1.5


class Quiet(ScriptedModel):
    """Streams a few words, is quiet for ``QUIET`` seconds, then streams the rest."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        n = 0
        async for part in super().stream(request):
            n += 1
            if n == 5:
                await asyncio.sleep(QUIET)
            yield part


class CountingJournal(SQLiteJournal):
    """A real journal that counts the reads of each segment's kept frames that found
    nothing new (a follower's poll of a quiet run)."""

    empty: Counter[str]

    def events_after(
        self, request_id: str, offset: int, principal: str = "", chunks: int | None = None
    ) -> list[tuple[int, bytes]]:
        rows = super().events_after(request_id, offset, principal, chunks)
        self.empty[request_id] += not rows
        return rows


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, CountingJournal]]:
    journal = CountingJournal(str(tmp_path / "runs.db"))
    journal.empty = Counter()
    model = Quiet(lambda _: [" ".join(["w"] * WORDS)], split_text=True, delay=0.01)
    with Server(create_app(Agent(model, []), journal=journal)) as running:
        yield running.url, journal
    journal.close()


def body() -> dict[str, Any]:
    return {
        "threadId": f"t_{uuid.uuid4().hex}",
        "runId": f"r_{uuid.uuid4().hex}",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "talk"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


async def _follow_live(url: str, run: dict[str, Any]) -> tuple[list[bytes], bytes, float]:
    """The followers' streams (``after=0`` each, the last one ``after=5``), the run's
    whole log read once it ended, and how long the followers followed."""
    limits = httpx.Limits(max_connections=FOLLOWERS + 4)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        started = asyncio.Event()

        async def live() -> None:
            async with http.stream("POST", "/agui", json=run) as response:
                async for _ in response.aiter_bytes():
                    started.set()

        async def follower(after: int) -> bytes:
            path = f"/runs/{run['runId']}/events"
            async with http.stream("GET", path, params={"after": after}) as response:
                return await response.aread()

        posting = asyncio.create_task(live())
        await started.wait()
        began = asyncio.get_running_loop().time()
        afters = [0] * (FOLLOWERS - 1) + [5]
        streams = await asyncio.gather(*(follower(a) for a in afters))
        followed = asyncio.get_running_loop().time() - began
        await posting
        whole = (await http.get(f"/runs/{run['runId']}/events")).content
    return list(streams), whole, followed


def frames(data: bytes) -> list[bytes]:
    return [block for block in data.split(b"\n\n") if block.startswith(b"data: ")]


def test_followers_of_a_live_run_share_one_reader(served: tuple[str, CountingJournal]) -> None:
    url, journal = served
    run = body()
    streams, whole, followed = asyncio.run(_follow_live(url, run))
    assert frames(whole)[-1].startswith(b'data: {"type":"RUN_FINISHED"')
    assert len(frames(whole)) > WORDS
    for stream in streams[:-1]:
        assert stream == whole
    assert frames(streams[-1]) == frames(whole)[5:]
    # each follower catches up on its own (one read that finds nothing), then one reader
    # polls for all; a reader per follower was about FOLLOWERS empty reads per poll
    polls = followed / POLL_SECONDS
    empty = journal.empty[run["runId"]]
    assert empty <= 2 * FOLLOWERS + polls + 10, (empty, polls)
