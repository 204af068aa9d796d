"""Kill cycles on a multi-replica deployment: runs lost, tools run twice, time to move again.

Three ``callwright serve --journal postgresql://…`` replicas share one Postgres. Each cycle starts
runs on one replica (slow non-idempotent and idempotent tools, streaming text),
SIGKILLs it while its tools run, and follows every run through another replica's
``GET /runs/{id}/events`` until it ends. It reports, over all cycles: runs that
never ended (goal 0), non-idempotent tools that ran twice (goal 0), and the time
from the kill to the first new frame of each run (goal < 3 s). The killed replica
is started again with a new executor id for the next cycle.

    python bench/kill_any_one.py --cycles 100 --database postgresql://…

Without ``--database`` it starts a throw-away Postgres the way the tests do.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _postgres import PostgresServer  # noqa: E402
from durable._cluster import (  # noqa: E402
    Replica,
    agui_body,
    frames,
    side_effects,
)


async def _post(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> int:
    """Stream a run; returns how many frames arrived before the stream ended or broke."""
    text = ""
    try:
        async with http.stream("POST", url + "/agui", json=body) as response:
            async for chunk in response.aiter_text():
                text += chunk
    except httpx.HTTPError:
        pass
    return len(frames(text))


async def _follow(
    http: httpx.AsyncClient, url: str, run: str, seen: int, killed: float, deadline: float
) -> tuple[float | None, bool]:
    """(seconds from the kill until the run's log grew past the ``seen`` frames the client
    had, whether the run ended), reading another replica's replay as it streams."""
    moved: float | None = None
    while time.monotonic() < deadline:
        text = ""
        try:
            async with http.stream(
                "GET", f"{url}/runs/{run}/events", params={"after": 0}, timeout=5
            ) as response:
                async for chunk in response.aiter_text():
                    text += chunk
                    if moved is None and len(frames(text)) > seen:
                        moved = time.monotonic() - killed
        except httpx.HTTPError:
            pass
        events = frames(text)
        if events and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return moved, True
        await asyncio.sleep(0.05)
    return moved, False


async def cycle(
    victim: Replica, other: Replica, effects: Path, runs: int
) -> tuple[int, int, list[float]]:
    tag = uuid.uuid4().hex[:6]
    texts = {}
    for i in range(runs):
        kind = ("slow 3 s", "idem 3 i", "talk 150")[i % 3]
        texts[f"r-{tag}-{i}"] = f"{kind}{tag}{i}" if kind != "talk 150" else kind
    async with httpx.AsyncClient(timeout=60) as http:
        tasks = {
            run: asyncio.create_task(_post(http, victim.url, agui_body(f"t-{run}", text, run)))
            for run, text in texts.items()
        }
        tools = [t.split()[-1] for t in texts.values() if not t.startswith("talk")]
        deadline = time.monotonic() + 30
        while not all(f"start {t}" in side_effects(effects) for t in tools):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        victim.kill()
        killed = time.monotonic()
        seen = dict(zip(tasks, await asyncio.gather(*tasks.values()), strict=True))
        end = killed + 60
        follows = await asyncio.gather(
            *(_follow(http, other.url, run, seen[run], killed, end) for run in texts)
        )
    lost_runs = [run for run, (_, ended) in zip(texts, follows, strict=True) if not ended]
    for run in lost_runs:
        print(f"  lost {run} ({texts[run]}): {diagnose(victim.database, run)}", flush=True)
    lost = len(lost_runs)
    lines = side_effects(effects)
    twice = sum(1 for t in tools if t.startswith("s") and lines.count(f"start {t}") > 1)
    return lost, twice, [m for m, _ in follows if m is not None]


def diagnose(database: str, run: str) -> str:
    """What the journal and DBOS say of a run that never ended."""
    import psycopg

    with psycopg.connect(database) as db:
        segment = db.execute(
            "SELECT status, owner FROM segments WHERE request_id = %s", (run,)
        ).fetchall()
        workflow = db.execute(
            "SELECT status, executor_id, recovery_attempts, error FROM dbos.workflow_status "
            "WHERE workflow_uuid = %s",
            (f"seg:{run}",),
        ).fetchall()
    return f"segment {segment}, workflow {workflow}"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = PostgresServer() if args.database is None else None
        database = server.fresh_database() if server is not None else args.database
        effects = Path(tmp) / "effects.txt"
        replicas = [Replica(database, f"bench-{n}-0", effects).start() for n in "abc"]
        lost = twice = 0
        moved: list[float] = []
        try:
            for n in range(args.cycles):
                victim, other = replicas[n % 3], replicas[(n + 1) % 3]
                cycle_lost, cycle_twice, cycle_moved = await cycle(
                    victim, other, effects, args.runs
                )
                lost, twice = lost + cycle_lost, twice + cycle_twice
                moved += cycle_moved
                replicas[n % 3] = Replica(database, f"bench-{'abc'[n % 3]}-{n + 1}", effects)
                replicas[n % 3].start()
                print(f"cycle {n + 1}: lost {cycle_lost}, twice {cycle_twice}", flush=True)
        finally:
            for replica in replicas:
                replica.stop()
            if server is not None:
                server.close()
    moved.sort()
    print(f"cycles: {args.cycles}, runs: {args.cycles * args.runs}")
    print(f"runs lost: {lost}   non-idempotent tools run twice: {twice}")
    if moved:
        p95 = moved[int(len(moved) * 0.95) - 1] if len(moved) > 1 else moved[0]
        print(
            f"kill to moving again: median {statistics.median(moved):.2f} s, "
            f"p95 {p95:.2f} s, max {moved[-1]:.2f} s"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--runs", type=int, default=9, help="runs on the victim per cycle")
    parser.add_argument("--database", default=None, help="an empty Postgres database's URL")
    asyncio.run(main(parser.parse_args()))
