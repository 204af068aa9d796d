"""Many clients following one live run over real HTTP: each reads the whole stream (from
its ``after``), and while the run is quiet the journal is polled by one shared reader,
not once per follower per poll (200 followers used to queue 4,000 journal reads a
second behind other requests; issue 24, "200 followers of one live run")."""

from __future__ import annotations

import asyncio
import threading
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
from callwright.server import _follow, create_app
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


class GatedJournal(SQLiteJournal):
    """A real journal whose look-ups of a run wait for ``gate`` once it is set up: the
    followers of a run all arrive while the first look-up is still under way."""

    gate: threading.Event | None = None
    looked_up: Counter[str]
    read_from_start: Counter[str]

    def has_events(self, request_id: str, principal: str = "") -> bool:
        self.looked_up[request_id] += 1
        if self.gate is not None:
            self.gate.wait(30)
        return super().has_events(request_id, principal)

    def events_after(
        self, request_id: str, offset: int, principal: str = "", chunks: int | None = None
    ) -> list[tuple[int, bytes]]:
        self.read_from_start[request_id] += offset == 0
        return super().events_after(request_id, offset, principal, chunks)


def _waiting_for_reads() -> int:
    reading = getattr(_follow, "_READING", {})
    return sum(len(waiting) for waiting in list(reading.values()))


async def _arrive_together(url: str, run_id: str, journal: GatedJournal) -> list[bytes]:
    """The followers' streams, every one of them sent before the run's first look-up is
    answered (or as soon as a second look-up is made: a reader each)."""
    limits = httpx.Limits(max_connections=FOLLOWERS + 4)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:

        async def follower() -> bytes:
            return (await http.get(f"/runs/{run_id}/events", params={"after": 0})).content

        following = [asyncio.create_task(follower()) for _ in range(FOLLOWERS)]
        for _ in range(3000):  # until every follower waits on the one look-up
            if _waiting_for_reads() >= FOLLOWERS or journal.looked_up[run_id] > 1:
                break
            await asyncio.sleep(0.01)
        assert journal.gate is not None
        journal.gate.set()
        return list(await asyncio.gather(*following))


def test_followers_arriving_together_read_the_journal_once(tmp_path: Path) -> None:
    """200 followers arriving at once made 200 look-ups and 400 reads of the log in worker
    threads, each a trip the event loop pays for; now those asking the same at the same
    time share one read, and each still gets the whole stream."""
    journal = GatedJournal(str(tmp_path / "runs.db"))
    journal.looked_up, journal.read_from_start = Counter(), Counter()
    model = ScriptedModel(lambda _: [" ".join(["w"] * WORDS)], split_text=True)
    with Server(create_app(Agent(model, []), journal=journal)) as running:
        run = body()
        assert httpx.post(running.url + "/agui", json=run, timeout=30).status_code == 200
        whole = httpx.get(f"{running.url}/runs/{run['runId']}/events", timeout=30).content
        journal.looked_up.clear()
        journal.read_from_start.clear()
        journal.gate = threading.Event()
        streams = asyncio.run(_arrive_together(running.url, run["runId"], journal))
    journal.close()
    assert frames(whole)[-1].startswith(b'data: {"type":"RUN_FINISHED"')
    assert all(stream == whole for stream in streams)
    assert journal.looked_up[run["runId"]] == 1
    # the first frame's wire once; the first page at most once per group of followers
    # answered together (a reader each: two reads per follower, 60)
    groups = -(-FOLLOWERS // _follow.WAKE_GROUP)
    assert journal.read_from_start[run["runId"]] <= 1 + groups
