"""A Postgres outage under a call on a tool worker: the call moves again as soon as
Postgres answers, not when DBOS's backoff (1 s doubling, jittered) next wakes the
worker writing its outcome or the web side reading it.

The measure is an order, not a clock: a call whose tool ended during the outage must
report its result before a second call, started only once Postgres is back, has run
its 3 s tool. Before the fix both sides slept on in DBOS's backoff for seconds after an
8 s outage, and the second call finished first.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from callwright.durable import ToolWorkers
from callwright.events import ToolCallResult
from callwright.run import Agent

from .test_workers import Worker, lines, ran, tag, wait_for
from .worker_agent import make_agent, note

OUTAGE_SECONDS = 8.0
"""How long Postgres stays down after the first call's tool ended."""


async def _call(agent: Agent[Any, Any], seconds: float, name: str) -> ToolCallResult:
    """Run the worker tool ``slow`` and note ``result <name>`` in the side-effect log when
    its result reaches the web side."""
    prompt = f'slow {{"seconds": {seconds}, "tag": "{name}"}}'
    result: ToolCallResult | None = None
    async for event in agent.stream(prompt):
        if isinstance(event, ToolCallResult) and result is None:
            result = event
            note(f"result {name}")
    assert result is not None
    return result


async def test_a_worker_call_moves_again_as_soon_as_postgres_is_back(
    postgres_url: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    worker = Worker(database, "worker-outage", effects).start()
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    before, after = tag(), tag()
    try:
        first = asyncio.ensure_future(_call(agent, 2, before))
        await wait_for(lambda: ran(effects, "start", before), 60)
        await asyncio.to_thread(postgres_url.stop)
        try:
            await wait_for(lambda: ran(effects, "end", before), 30)
            await asyncio.sleep(OUTAGE_SECONDS)
        finally:
            await asyncio.to_thread(postgres_url.start)
        second = asyncio.ensure_future(_call(agent, 3, after))
        results = await asyncio.wait_for(asyncio.gather(first, second), 120)
    finally:
        workers.close()
        worker.stop()
    seen = f"{lines(effects)}\n{worker.log.read_text()[-3000:]}"
    assert [r.output for r in results] == [f"{before} finished", f"{after} finished"], seen
    order = [line.split(" pid=")[0] for line in lines(effects)]
    assert order.index(f"result {before}") < order.index(f"end {after}"), seen
    assert (len(ran(effects, "start", before)), len(ran(effects, "start", after))) == (1, 1), seen
