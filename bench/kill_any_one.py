"""The chaos run: faults of every kind under live runs, every replay read by the real clients.

Three ``callwright serve --journal postgresql://…`` replicas and two ``callwright worker``
processes share one Postgres (a throw-away cluster on 127.0.0.1, started the way the
tests start theirs). Each cycle starts runs of every kind on both wires (streaming text,
a slow tool, an idempotent slow tool, tools on the workers, idempotent or not: AG-UI
``POST /agui`` and the AI SDK's ``POST /api/chat``) and pauses one on an approval, then
injects one fault while the tools run:

- ``replica``: SIGKILL of the replica serving the cycle's runs (started again after);
- ``worker``: SIGKILL of the tool worker running most of the cycle's worker calls;
- ``restart``: a Postgres restart (a fast shutdown, then a start on the same port);
- ``outage``: Postgres stopped for 5-10 s, then started again.

After the fault, every run is followed through another replica's ``GET
/runs/{id}/events?after=0`` until it ends, the paused run is approved through another
replica, and every replay is read by ``@ag-ui/client`` 1.0 (AG-UI runs) or by ``ai`` 5, 6
and 7 (AI SDK runs), through their own stream checks (tests/js/verify_replays.mjs).
Reported over all cycles: runs lost (never ended; goal 0), non-idempotent tools run
twice (goal 0), replays a client rejected (goal 0), tools running in two processes at
once (goal 0; from the tools' side-effect log, where the harness notes each process it
kills), and the time from the fault's end (the kill, or Postgres accepting connections
again) to each live run's first new frame (goal < 3 s). Also counted: replays a client
accepted that are still not the whole run (no opening ``RUN_STARTED``/``start``: the
frames the client saw first were never kept), and the runs that ended with an error.
The exit status is 1 when one of the four goal-0 figures is not 0.

    python bench/kill_any_one.py --cycles 100 --seed 1 --faults replica,worker,restart,outage

Every process it starts (replicas, workers, Postgres) is stopped at the end, on an error
and on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _chaos import (  # noqa: E402
    AI_CLIENTS,
    KILLED,
    Run,
    agui_body,
    chat_body,
    follow,
    in_two_at_once,
    incomplete,
    note,
    post,
    rejection,
    starts,
    verify,
)
from _postgres import PostgresServer  # noqa: E402
from durable._cluster import Replica, ToolWorker, side_effects  # noqa: E402

FAULTS = ("replica", "worker", "restart", "outage")
NON_IDEMPOTENT = ("slow", "remote", "delete")


@dataclass
class Cluster:
    """The processes under test, and how to hurt each."""

    database: str
    effects: Path
    server: PostgresServer | None
    replicas: list[Replica] = field(default_factory=list)
    workers: list[ToolWorker] = field(default_factory=list)
    generation: int = 0
    options: tuple[str, ...] = ()
    """More ``serve`` options for the replicas (``--log-level info``)."""

    def start(self) -> None:
        self.replicas = [
            Replica(self.database, f"chaos-{n}-0", self.effects, options=self.options)
            for n in "abc"
        ]
        self.workers = [ToolWorker(self.database, f"chaos-w{n}-0", self.effects) for n in "12"]
        for process in [*self.replicas, *self.workers]:
            process.start()

    def stop(self) -> None:
        for process in [*self.replicas, *self.workers]:
            try:
                process.stop()
            except Exception as exc:  # a stuck process: killed, and the rest still stopped
                print(f"stopping {process.executor_id}: {exc!r}", flush=True)
                process.kill()

    def kill(self, process: Replica | ToolWorker) -> None:
        assert process.process is not None
        pid = process.process.pid
        process.kill()
        note(self.effects, f"{KILLED} pid={pid}")

    def replace(self, process: Replica | ToolWorker) -> None:
        """A killed process started again under a new executor id."""
        self.generation += 1
        name = f"{process.executor_id.rsplit('-', 1)[0]}-{self.generation}"
        if isinstance(process, Replica):
            i = self.replicas.index(process)
            replica = Replica(self.database, name, self.effects, options=self.options)
            self.replicas[i] = replica.start()
        else:
            i = self.workers.index(process)
            self.workers[i] = ToolWorker(self.database, name, self.effects).start()


@dataclass
class Tally:
    """The figures over all cycles."""

    runs: int = 0
    lost: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    two_at_once: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    replays: Counter[str] = field(default_factory=Counter)
    refused: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    moved: dict[str, list[float]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(self.lost or self.twice or self.two_at_once or self.rejected)


def schedule(faults: list[str], cycles: int, seed: int) -> list[str]:
    """Each fault as often as the others, in a seeded order."""
    rng = random.Random(seed)
    order: list[str] = []
    while len(order) < cycles:
        round_ = list(faults)
        rng.shuffle(round_)
        order += round_
    return order[:cycles]


def make_runs(tag: str, hosts: list[str]) -> list[Run]:
    texts = [
        ("agui", "talk 150"), ("agui", f"slow 3 s{tag}"), ("agui", f"idem 3 i{tag}"),
        ("agui", f"remote 3 w{tag}"), ("agui", f"ridem 3 v{tag}"),
        ("aisdk", "talk 150"), ("aisdk", f"slow 3 x{tag}"), ("aisdk", f"remote 3 y{tag}"),
        ("aisdk", f"ridem 3 j{tag}"),
    ]  # fmt: skip
    return [
        Run(f"r-{tag}-{i}", wire, text, hosts[i % len(hosts)], thread=f"t-{tag}-{i}")
        for i, (wire, text) in enumerate(texts)
    ]


def body(run: Run) -> dict[str, Any]:
    return agui_body(run) if run.wire == "agui" else chat_body(run)


async def until(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def pause_one(http: httpx.AsyncClient, host: str, tag: str) -> tuple[Run, str]:
    """A run paused on ``delete_file``'s approval: (the run, its interrupt's id)."""
    run = Run(f"r-{tag}-del", "agui", f"delete f{tag}", host, thread=f"t-{tag}-del")
    await post(http, run, agui_body(run), refused_for=30)
    interrupts = (run.last.get("outcome") or {}).get("interrupts") or []
    if not interrupts:
        raise RuntimeError(f"the approval run did not pause: {run.last} {run.refused}")
    return run, str(interrupts[0]["id"])


async def inject(
    cluster: Cluster, fault: str, victim: int, tags: list[str], rng: random.Random
) -> str:
    """The fault; returns what was hurt."""
    if fault == "replica":
        replica = cluster.replicas[victim]
        cluster.kill(replica)
        return replica.executor_id
    if fault == "worker":
        lines = all_side_effects(cluster.effects)
        counts = [
            sum(w.pid in starts(lines, t) for t in tags if t[0] in "wvyj") for w in cluster.workers
        ]
        worker = cluster.workers[counts.index(max(counts))]
        cluster.kill(worker)
        return f"{worker.executor_id} ({max(counts)} calls)"
    assert cluster.server is not None
    if fault == "restart":
        await asyncio.to_thread(cluster.server.restart)
        return "postgres"
    seconds = rng.uniform(5, 10)
    await asyncio.to_thread(cluster.server.stop)
    await asyncio.sleep(seconds)
    await asyncio.to_thread(cluster.server.start)
    return f"postgres for {seconds:.1f} s"


async def cycle(n: int, fault: str, cluster: Cluster, tally: Tally, rng: random.Random) -> None:
    """One fault under one set of runs, and its figures added to ``tally``."""
    tag = uuid.uuid4().hex[:6]
    victim = n % len(cluster.replicas)
    urls = [r.url for r in cluster.replicas]
    hosts = [urls[victim]] if fault == "replica" else urls
    reader = urls[(victim + 1) % len(urls)]

    def read_from(run: Run) -> str:
        """A replica other than the one the run was posted to (the victim's survivor)."""
        if fault == "replica":
            return reader
        return urls[(urls.index(run.host) + 1) % len(urls)]

    runs = make_runs(tag, hosts)
    tags = [t for t in (r.tag for r in runs) if t]
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=120)) as http:
        paused, interrupt = await pause_one(http, hosts[-1], tag)
        posts = [asyncio.create_task(post(http, run, body(run), refused_for=30)) for run in runs]
        await until(lambda: all(r.started.is_set() for r in runs), 60, "the runs to start")
        await until(
            lambda: (
                all(f"start {t}" in side_effects(cluster.effects) for t in tags)
                and all(r.frames >= 10 for r in runs if r.tag is None)
            ),
            60,
            "the tools and the text to start",
        )
        await asyncio.sleep(rng.uniform(0, 1.0))
        began = time.monotonic()
        hurt = await inject(cluster, fault, victim, tags, rng)
        fault_end = time.monotonic()
        ended_at = time.strftime("%H:%M:%S")  # to find the fault in the processes' logs
        live = {run.id: run.frames for run in runs if not run.ended}
        follows = [
            asyncio.create_task(
                follow(http, read_from(run), run, live.get(run.id, 0), fault_end, fault_end + 90)
            )
            for run in runs
        ]
        for outcome in await asyncio.gather(*posts, return_exceptions=True):
            if isinstance(outcome, BaseException):
                print(f"  a client failed: {outcome!r}", flush=True)
        moved = await asyncio.gather(*follows)
        moves = [m for run, m in zip(runs, moved, strict=True) if run.id in live and m is not None]
        for run, m in zip(runs, moved, strict=True):
            if run.id in live and m is not None and m > 3:
                print(f"  slow to move: {run.id} ({run.wire} {run.text!r}) {m} s", flush=True)
        tally.moved.setdefault(fault, []).extend(moves)

        # the paused run is approved through another replica once the fault is over
        resumed = Run(f"r2-{tag}-del", "agui", "", reader, thread=paused.thread)
        payload = {"approved": True}
        resume = {"resume": [{"interruptId": interrupt, "status": "resolved", "payload": payload}]}
        await post(http, resumed, agui_body(resumed, **resume), refused_for=60)
        now = time.monotonic()
        for run in (paused, resumed):
            await follow(http, read_from(run), run, 0, now, now + 60)
        resumed.text = paused.text  # its tool's tag, for the side-effect checks
    every = [paused, *runs, resumed]

    # every replay, read by the real clients
    reads: list[tuple[str, str]] = []
    for run in every:
        url = run.replay_url(read_from(run))
        reads += [("agui", url)] if run.wire == "agui" else [(c, url) for c in AI_CLIENTS]
    results = await asyncio.to_thread(verify, reads)
    label = f"cycle {n + 1} {fault}"
    rejected, partial = [], []
    for (client, url), read in zip(reads, results, strict=True):
        tally.replays[client] += 1
        why = rejection(read)
        if why is not None:
            rejected.append(f"{label} {client} {url}: {why}")
        elif (gap := incomplete(read)) is not None:
            partial.append(f"{label} {client} {url}: accepted, but {gap}")

    lines = all_side_effects(cluster.effects)
    lost = [f"{label} {r.id} ({r.wire} {r.text!r}): last {r.last}" for r in every if not r.replayed]
    tool_tags = sorted({t for r in every if (t := r.tag)})
    once = sorted({t for r in every if (t := r.tag) and r.text.split()[0] in NON_IDEMPOTENT})
    twice = [f"{label} {t}: ran in {starts(lines, t)}" for t in once if len(starts(lines, t)) > 1]
    at_once = [f"{label} {t}" for t in tool_tags if in_two_at_once(lines, t)]
    for run in every:
        if run.last.get("type") == "RUN_ERROR":
            tally.errors[f"{fault}: RUN_ERROR {run.last.get('code')}"] += 1
        elif run.last.get("type") == "error":
            tally.errors[f"{fault}: error chunk {str(run.last.get('errorText'))[:14]}"] += 1
    tally.runs += len(every)
    tally.refused += sum(bool(r.refused) for r in every)
    tally.lost += lost
    tally.twice += twice
    tally.two_at_once += at_once
    tally.rejected += rejected
    tally.incomplete += partial
    for line in lost + twice + at_once + rejected + partial:
        print(f"  {line}", flush=True)
    refused = [f"{r.id}: {r.refused[0]}" for r in every if r.refused]
    if refused:
        print(f"  refused before taken: {refused}", flush=True)
    print(
        f"{label} ({hurt}, {fault_end - began:.1f} s, over at {ended_at}): runs {len(every)}, "
        f"lost {len(lost)}, "
        f"twice {len(twice)}, two at once {len(at_once)}, rejected {len(rejected)}/{len(reads)}, "
        f"incomplete {len(partial)}, "
        f"moving again max {max(moves, default=float('nan')):.2f} s",
        flush=True,
    )
    if fault == "replica":
        await asyncio.to_thread(cluster.replace, cluster.replicas[victim])
    elif fault == "worker":
        dead = [w for w in cluster.workers if w.process and w.process.poll() is not None]
        for worker in dead:
            await asyncio.to_thread(cluster.replace, worker)


def all_side_effects(path: Path) -> list[str]:
    """The side-effect log's lines, process ids kept."""
    return path.read_text().splitlines() if path.exists() else []


async def chaos(cluster: Cluster, args: argparse.Namespace, tally: Tally) -> None:
    rng = random.Random(args.seed)
    for n, fault in enumerate(schedule(args.faults, args.cycles, args.seed)):
        await cycle(n, fault, cluster, tally, rng)


def report(tally: Tally, args: argparse.Namespace, seconds: float) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"cycles: {args.cycles} (faults {','.join(args.faults)}, seed {args.seed}), "
          f"runs: {tally.runs}, wall time {seconds:.0f} s, load average now {load}")  # fmt: skip
    print(f"runs lost: {len(tally.lost)}   non-idempotent tools run twice: {len(tally.twice)}")
    replays = ", ".join(f"{c} {k}" for c, k in sorted(tally.replays.items()))
    print(f"replays rejected by a client: {len(tally.rejected)} of {sum(tally.replays.values())} "
          f"({replays})")  # fmt: skip
    print(f"tools running in two processes at once: {len(tally.two_at_once)}")
    print(f"replays accepted but not the whole run (frames the client saw not kept): "
          f"{len(tally.incomplete)}")  # fmt: skip
    ended = ", ".join(f"{k} {v}" for k, v in sorted(tally.errors.items())) or "none"
    print(f"runs that ended with an error: {sum(tally.errors.values())} ({ended}); "
          f"requests refused before they were taken (then retried): {tally.refused}")  # fmt: skip
    every = sorted(m for moves in tally.moved.values() for m in moves)
    for fault, moves in [*sorted(tally.moved.items()), ("all", every)]:
        if moves:
            print(f"fault to moving again ({fault}, {len(moves)} live runs): median "
                  f"{statistics.median(moves):.2f} s, max {max(moves):.2f} s")  # fmt: skip


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(args: argparse.Namespace) -> int:
    if args.database and {"restart", "outage"} & set(args.faults):
        raise SystemExit("restart and outage need the harness's own Postgres: drop --database")
    signal.signal(signal.SIGTERM, _terminate)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tally = Tally()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        server = PostgresServer() if args.database is None else None
        cluster = None
        try:
            database = server.fresh_database() if server is not None else args.database
            options = ("--log-level", args.log_level) if args.log_level else ()
            cluster = Cluster(database, work / "effects.txt", server, options=options)
            cluster.start()
            asyncio.run(chaos(cluster, args, tally))
        except BaseException:
            if cluster is not None:
                for replica in cluster.replicas:
                    print(f"--- {replica.executor_id}\n{replica.log()[-1500:]}")
            raise
        finally:
            if cluster is not None:
                cluster.stop()
            if server is not None:
                server.close()
    report(tally, args, time.monotonic() - began)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--faults",
        type=lambda text: [f for f in text.split(",") if f],
        default=list(FAULTS),
        help=f"which faults, comma-separated (of {','.join(FAULTS)})",
    )
    parser.add_argument("--database", default=None, help="an empty Postgres database's URL")
    parser.add_argument("--keep", default=None, help="a directory for the logs, kept")
    parser.add_argument("--log-level", default=None, help="the replicas' (e.g. info; kept logs)")
    options = parser.parse_args()
    unknown = set(options.faults) - set(FAULTS)
    if unknown or not options.faults:
        parser.error(f"--faults: of {','.join(FAULTS)}")
    sys.exit(main(options))
