"""Server load: N concurrent AG-UI runs against a real server process.

Each run is one ``POST /agui`` whose scripted model calls one tool (it returns at once)
and then streams 50 words of text (``_load_turns``). Cases: callwright in memory,
callwright with its SQLite journal (``--db``, a fresh file per measurement),
callwright as a replica of a multi-process deployment (``callwright-pg``: the Postgres
journal and the DBOS runtime, a fresh database per measurement on a Postgres this bench
starts and pins to the server's core, so the server's core pays for the database too),
the Postgres journal alone (``callwright-pgj``: the same database, no DBOS; what the
journal costs apart from the durable-execution layer), and pydantic-ai's AG-UI adapter
(``AGUIAdapter.dispatch_request``) playing the same turns.

The server is a separate process (uvicorn) pinned to one core; this process, the load
client, is pinned to another. The client (HTTP/1.1 on loopback, one connection per run;
see ``_load_client`` for why it is a bare asyncio protocol and not httpx by default)
starts all N runs at once and reads every SSE frame, noting when each read arrives.
Reported per case and N (median of ``--repeats`` measurements, the cases alternating so
each sees the same machine):

* events/s: every frame of every run / the time from the first request to the last frame;
* runs/s: runs that completed correctly, per second (comparable across libraries, whose
  runs differ in frame count);
* p99 gap: the 99th percentile of the gaps between consecutive frames of one stream, all
  streams pooled (frames that arrive in one read share a time, so a gap of 0 is common);
* p99 first: the 99th percentile of the time from a run's request to its first frame;
* peak RSS: the server's ``VmHWM`` (start-up, a warm-up of 20 runs and the load);
* server CPU µs/event: the server process's CPU time (all its threads) per frame; less
  sensitive than events/s to how much of its core other processes take;
* database CPU µs/event: the same for the bench's Postgres (every process of it);
* server waiting: how long its threads were ready to run but other processes held the
  core, over the wall time (summed over threads; 0 on an idle machine);
* client CPU: the client's CPU time over the wall time (near 100 % would mean the client,
  not the server, set the pace).

``--source REV`` serves callwright's ``src/`` as of a commit (exported with ``git
archive``; the default is HEAD, so the figure names its commit); ``--source worktree``
serves the checkout as it is. Give it twice to compare two commits in one sitting.

Run: ``python bench/load.py`` (N = 200 and 1000, 3 repeats, pydantic-ai once: its
runs cost about 1 ms of server CPU per event, so one N = 1000 measurement takes a
minute or more), ``--quick`` for a smoke run (N = 20, one repeat). Needs the ``bench`` extra for the
pydantic-ai case (``--cases callwright,callwright-db`` runs without it). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import io
import itertools
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from _load_client import Stream, drive, frames, run_ok

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CASES = ("callwright", "callwright-db", "callwright-pg", "callwright-pgj", "pydantic-ai")
WARMUP_RUNS = 20
PROMPT = "What is the weather in Paris?"


# --- what is measured ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One server configuration."""

    label: str
    """How the tables name it, e.g. ``callwright --db @1a2b3c4``."""
    kind: str
    """One of ``CASES``."""
    source: str | None = None
    """The callwright commit served (None: the working tree, or not callwright)."""
    pythonpath: str | None = None
    """Where that commit's ``src/`` was exported to."""

    def argv(self, fd: int, tmp: Path, core: int) -> list[str]:
        if self.kind == "pydantic-ai":
            return [sys.executable, str(BENCH / "_load_pai_app.py"), "--fd", str(fd)]
        argv = [sys.executable, str(BENCH / "_load_app.py"), "--fd", str(fd)]
        if self.kind == "callwright-db":
            argv += ["--db", str(tmp / "runs.db")]
        elif self.kind == "callwright-pg":
            argv += ["--database", postgres_database(core)]
        elif self.kind == "callwright-pgj":
            argv += ["--database", postgres_database(core), "--journal-only"]
        return argv


_postgres: Any = None


def postgres_database(core: int) -> str:
    """A fresh database on the Postgres this bench starts (as the tests do), its processes
    pinned to the server's core."""
    global _postgres
    if _postgres is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from _postgres import PostgresServer

        _postgres = PostgresServer()
        atexit.register(_postgres.close)
    url: str = _postgres.fresh_database()
    postmaster = int((_postgres.data / "postmaster.pid").read_text().split()[0])
    for pid in [postmaster, *children(postmaster)]:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, {core})
    return url


def database_cpu_seconds() -> float:
    """CPU time of the bench's Postgres (the postmaster and every process it forked; 0
    when none runs): a replica's database is part of what its events cost."""
    if _postgres is None:
        return 0.0
    postmaster = int((_postgres.data / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for pid in [postmaster, *children(postmaster)]:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def children(parent: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(stat.parent.name))
    return found


@dataclass
class Measurement:
    """One case at one N, once."""

    case: str
    n: int
    runs_ok: int
    frames: int
    fewest_frames: int
    """The fewest frames any one run got (0 if one got none)."""
    wall_s: float
    events_per_s: float
    runs_per_s: float
    p99_gap_ms: float
    p99_first_ms: float
    peak_rss_mb: float
    idle_rss_mb: float
    """The server's RSS after start-up and the warm-up, before the load."""
    server_cpu_us: float
    """The server's CPU time per event, in µs: what the load cost it, whatever share of
    its core the rest of the machine left it."""
    database_cpu_us: float
    """Postgres's CPU time per event, in µs (0 without a database server)."""
    server_waiting: float
    """How long the server's threads were ready to run but waited for the core, over the
    wall time: a shared machine's noise (0 on an idle one). Summed over threads, so it
    passes 100 % when two threads (the loop and a journal writer) wait at once."""
    client_cpu: float
    errors: list[str] = field(default_factory=list)
    """The first few failures, for the log."""


# --- the server process -------------------------------------------------------------------


class ServerProcess:
    """The server under test: a child process on a listening socket bound here.

    The harness binds 127.0.0.1 and hands the socket over (``--fd``), so there is no
    free-port race and connections queue until the server accepts them. Its CPU time and
    peak RSS come from ``/proc/<pid>``: two small file reads, where psutil would be a
    dependency for the same two numbers.
    """

    def __init__(self, case: Case, tmp: Path, core: int, backlog: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(backlog)
        sock.set_inheritable(True)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/agui"
        env = dict(os.environ)
        if case.pythonpath is not None:
            env["PYTHONPATH"] = case.pythonpath
        self.log = (tmp / "server.log").open("w+b")
        try:
            self.proc = subprocess.Popen(
                case.argv(sock.fileno(), tmp, core),
                pass_fds=[sock.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                env=env,
                preexec_fn=lambda: os.sched_setaffinity(0, {core}),
            )
        finally:
            sock.close()

    def status(self, key: str) -> float:
        """A ``VmHWM``/``VmRSS`` line of /proc/<pid>/status, in MB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {key} for the server")

    def cpu_seconds(self) -> float:
        """CPU time of the whole process (every thread), from /proc/<pid>/stat."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def runqueue_seconds(self) -> float:
        """How long its live threads have been ready to run but waiting for the core
        (/proc/<pid>/task/*/schedstat): the share other processes took."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            with contextlib.suppress(OSError):
                total += int((task / "schedstat").read_text().split()[1])
        return total / 1e9

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


# --- figures ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarise(
    case: str, streams: list[Stream], start: float, figures: dict[str, float]
) -> Measurement:
    """One measurement's figures from the raw streams (after the clock has stopped)."""
    runs = [frames(s) for s in streams]
    times = [t for run in runs for t, _ in run]
    wall = (max(times) - start) if times else float("nan")
    gaps = [b[0] - a[0] for run in runs for a, b in itertools.pairwise(run)]
    first = [run[0][0] - s.started for s, run in zip(streams, runs, strict=True) if run]
    ok = [run_ok(s, run) for s, run in zip(streams, runs, strict=True)]
    errors = [
        s.error or f"status {s.status}, {len(r)} frames"
        for s, r, k in zip(streams, runs, ok, strict=True)
        if not k
    ]
    return Measurement(
        case=case,
        n=len(streams),
        runs_ok=sum(ok),
        frames=len(times),
        fewest_frames=min(len(run) for run in runs),
        wall_s=wall,
        events_per_s=len(times) / wall,
        runs_per_s=sum(ok) / wall,
        p99_gap_ms=percentile(gaps, 0.99) * 1e3,
        p99_first_ms=percentile(first, 0.99) * 1e3,
        peak_rss_mb=figures["peak"],
        idle_rss_mb=figures["idle"],
        server_cpu_us=figures["cpu"] / len(times) * 1e6 if times else float("nan"),
        database_cpu_us=figures["database"] / len(times) * 1e6 if times else float("nan"),
        server_waiting=figures["waited"] / wall,
        client_cpu=figures["client"] / wall,
        errors=errors[:3],
    )


# --- one measurement ----------------------------------------------------------------------


async def measure(
    case: Case, n: int, cores: tuple[int, int], timeout: float, client: str
) -> Measurement:
    """Start the server, warm it up, run N at once, read its peak RSS, stop it."""
    with tempfile.TemporaryDirectory(prefix="cw-load-") as tmp:
        server = ServerProcess(case, Path(tmp), cores[0], backlog=max(2 * n, 128))
        try:
            warm = await drive(server.url, min(n, WARMUP_RUNS), timeout, client)
            bad = [
                s.error or f"status {s.status}" for s in warm.streams if not run_ok(s, frames(s))
            ]
            if bad:
                raise RuntimeError(f"{case.label}: warm-up failed: {bad[0]}\n{server.output()}")
            idle = server.status("VmRSS")
            cpu, waited = server.cpu_seconds(), server.runqueue_seconds()
            on_postgres = case.kind in ("callwright-pg", "callwright-pgj")
            database = database_cpu_seconds() if on_postgres else 0.0
            load = await drive(server.url, n, timeout, client)
            figures = {
                "cpu": server.cpu_seconds() - cpu,
                "database": database_cpu_seconds() - database if on_postgres else 0.0,
                "waited": server.runqueue_seconds() - waited,
                "peak": server.status("VmHWM"),
                "idle": idle,
                "client": load.client_cpu,
            }
        finally:
            server.stop()
    return summarise(case.label, load.streams, load.start, figures)


# --- the cases ----------------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def export_source(rev: str, into: Path) -> tuple[str, str]:
    """callwright's ``src/`` at ``rev``, unpacked under ``into``: (short commit, path)."""
    commit = git("rev-parse", "--short", rev)
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src/callwright"],
        capture_output=True,
        check=True,
    ).stdout
    target = into / commit
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(target, filter="data")
    return commit, str(target / "src")


LABELS = {
    "callwright": "callwright",
    "callwright-db": "callwright --db",
    "callwright-pg": "callwright --database (DBOS)",
    "callwright-pgj": "callwright --database (journal only)",
}


def make_cases(kinds: Sequence[str], sources: Sequence[str], tmp: Path) -> list[Case]:
    cases: list[Case] = []
    several = len(sources) > 1
    for source in sources:
        if source == "worktree":
            commit, path = None, None
        else:
            commit, path = export_source(source, tmp)
        suffix = f" @{commit or 'worktree'}" if several else ""
        for kind in kinds:
            if kind != "pydantic-ai":
                label = LABELS[kind] + suffix
                cases.append(Case(label, kind, commit, path))
    if "pydantic-ai" in kinds:
        cases.append(Case("pydantic-ai AG-UI", "pydantic-ai"))
    return cases


def describe_source(sources: Sequence[str]) -> str:
    """Which callwright code was served, and whether the checkout had local changes."""
    parts = []
    for source in sources:
        if source == "worktree":
            dirty = git("status", "--porcelain", "--", "src/callwright")
            state = (
                f"with uncommitted changes in {len(dirty.splitlines())} files" if dirty else "clean"
            )
            parts.append(f"working tree on {git('rev-parse', '--short', 'HEAD')} ({state})")
        else:
            parts.append(f"commit {git('rev-parse', '--short', source)} (exported)")
    return ", ".join(parts)


# --- reporting ----------------------------------------------------------------------------


def table(results: dict[tuple[str, int], list[Measurement]]) -> str:
    lines = [
        "| case | N | events/s (min–max) | runs/s | p99 gap ms | p99 first ms "
        "| server CPU µs/event | database CPU µs/event | server waiting | peak RSS MB "
        "| client CPU | runs ok |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (case, n), ms in results.items():
        if not ms:
            continue

        def med(name: str, ms: list[Measurement] = ms) -> float:
            return float(statistics.median(getattr(m, name) for m in ms))

        rate = [m.events_per_s for m in ms]
        ok = f"{sum(m.runs_ok for m in ms)}/{sum(m.n for m in ms)}"
        lines.append(
            f"| {case} | {n} | {med('events_per_s'):,.0f} ({min(rate):,.0f}–{max(rate):,.0f}) "
            f"| {med('runs_per_s'):,.0f} | {med('p99_gap_ms'):.1f} | {med('p99_first_ms'):.0f} "
            f"| {med('server_cpu_us'):.0f} | {med('database_cpu_us'):.0f} "
            f"| {med('server_waiting'):.0%} "
            f"| {med('peak_rss_mb'):.0f} | {med('client_cpu'):.0%} "
            f"| {ok} |"
        )
    return "\n".join(lines)


def ratios(results: dict[tuple[str, int], list[Measurement]]) -> str:
    """Journaled / in-memory events/s, paired by repeat (the two ran back to back), and the
    same ratio from the server's CPU time per event: what events/s would show if the
    server had its core to itself and never waited on the disk. On Postgres also per
    core: events per CPU-second of the server and its database together (the goal's
    "per core": a replica's events cost its own core and the database's). Goals: 70 %
    for the SQLite journal (events/s), 50 % per core for a replica on Postgres."""
    lines = []
    for (case, n), journaled in results.items():
        goal = 0.70 if "--db" in case else 0.50 if "--database" in case else None
        if goal is None:
            continue
        memory_label = case.replace(LABELS["callwright-db"], "callwright")
        memory_label = memory_label.replace(LABELS["callwright-pg"], "callwright")
        memory_label = memory_label.replace(LABELS["callwright-pgj"], "callwright")
        memory = results.get((memory_label, n), [])
        pairs = list(zip(journaled, memory, strict=False))
        if not pairs:
            continue
        rate = [j.events_per_s / m.events_per_s for j, m in pairs]
        cpu = [m.server_cpu_us / j.server_cpu_us for j, m in pairs]
        core = [m.server_cpu_us / (j.server_cpu_us + j.database_cpu_us) for j, m in pairs]
        mid = statistics.median(rate)
        line = (
            f"{case} / in memory, N={n}: {mid:.0%} of the events/s "
            f"(per repeat: {', '.join(f'{r:.0%}' for r in rate)}); by server CPU per event "
            f"{statistics.median(cpu):.0%} (per repeat: {', '.join(f'{c:.0%}' for c in cpu)})"
        )
        if any(j.database_cpu_us for j, _ in pairs):
            line += (
                f"; per core, the database's CPU counted (events per CPU-second) "
                f"{statistics.median(core):.0%} "
                f"(per repeat: {', '.join(f'{c:.0%}' for c in core)})"
            )
            mid = statistics.median(core)
        lines.append(line + f"; goal >= {goal:.0%}: {'met' if mid >= goal else 'NOT met'}")
    return "\n".join(lines)


def header(args: argparse.Namespace, cores: tuple[int, int]) -> str:
    try:
        from importlib.metadata import version

        pai = version("pydantic-ai-slim")
    except Exception:
        pai = "not installed"
    load = os.getloadavg()
    return (
        f"Python {platform.python_version()}, httpx {httpx.__version__}, pydantic-ai-slim {pai}; "
        f"{os.cpu_count()} cores, server on core {cores[0]}, client on core {cores[1]}; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
        f"callwright: {describe_source(args.source)}\n"
        f"median of {args.repeats} measurement(s) per row ({min(args.pai_repeats, args.repeats)} "
        f"for pydantic-ai), cases alternating; each server fresh, warmed with {WARMUP_RUNS} runs"
    )


# --- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[200, 1000], help="the Ns")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated: {CASES}")
    parser.add_argument("--source", action="append", help="callwright commit, or 'worktree'")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--pai-repeats",
        type=int,
        default=1,
        help="repeats of the pydantic-ai case (at most --repeats): ~1 ms of CPU per event",
    )
    parser.add_argument("--timeout", type=float, default=240, help="seconds per measurement")
    parser.add_argument("--max-seconds", type=float, default=1200, help="for the whole bench")
    parser.add_argument(
        "--client", choices=("bare", "httpx"), default="bare", help="see _load_client.py"
    )
    parser.add_argument("--quick", action="store_true", help="N=20, one repeat")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.repeats = [20], 1
    args.source = args.source or ["HEAD"]
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases: {sorted(unknown)}")
    return args


def progress(m: Measurement, repeat: int, repeats: int) -> str:
    return (
        f"[{repeat + 1}/{repeats}] {m.case} N={m.n}: {m.events_per_s:,.0f} events/s, "
        f"p99 gap {m.p99_gap_ms:.1f} ms, {m.server_cpu_us:.0f} µs CPU/event, "
        f"server waiting {m.server_waiting:.0%}, "
        f"peak RSS {m.peak_rss_mb:.0f} MB, {m.runs_ok}/{m.n} ok {'; '.join(m.errors)}"
    )


def pick_cores() -> tuple[int, int]:
    """The server's core and the client's: the first two this process may use."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[0], allowed[1] if len(allowed) > 1 else allowed[0]


@contextlib.contextmanager
def pinned(core: int) -> Iterator[None]:
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


async def run_all(
    args: argparse.Namespace, cases: list[Case], cores: tuple[int, int]
) -> dict[tuple[str, int], list[Measurement]]:
    """Every case at every N, ``repeats`` times, rotating the order of the cases."""
    results: dict[tuple[str, int], list[Measurement]] = {
        (c.label, n): [] for n in args.runs for c in cases
    }
    deadline = time.monotonic() + args.max_seconds
    for repeat in range(args.repeats):
        order = cases[repeat % len(cases) :] + cases[: repeat % len(cases)]
        for n in args.runs:
            for case in order:
                if case.kind == "pydantic-ai" and repeat >= args.pai_repeats:
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    print(f"stopped: --max-seconds {args.max_seconds:.0f} reached", file=sys.stderr)
                    return results
                m = await measure(case, n, cores, min(args.timeout, left), args.client)
                results[(case.label, n)].append(m)
                print(progress(m, repeat, args.repeats), file=sys.stderr, flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cores = pick_cores()
    with tempfile.TemporaryDirectory(prefix="cw-load-src-") as tmp:
        cases = make_cases(args.cases, args.source, Path(tmp))
        print(header(args, cores) + "\n", flush=True)
        with pinned(cores[1]):
            results = asyncio.run(run_all(args, cases, cores))
    print(table(results))
    print()
    print(ratios(results))
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json is not None:
        rows = [asdict(m) for ms in results.values() for m in ms]
        args.json.write_text(json.dumps(rows, indent=1))
    failed = any(m.runs_ok < m.n for ms in results.values() for m in ms)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
