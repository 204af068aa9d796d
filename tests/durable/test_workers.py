"""Tool workers: real ``callwright worker`` processes on a real Postgres run the tools
marked ``on_workers`` for a web-side agent in this process.

What must hold: the result arrives, progress and partial outputs arrive in order,
errors come back as error results of the same kind, the run's cancel and a tool's
timeout reach the tool in the worker (it notes ``cancelled``), a retried enqueue
does not run the tool again, and a worker SIGKILLed mid-tool gives, once its calls
are recovered (by a live worker, by another process's ``recover_executor``, or by the
worker restarted with its id), the
interrupted error for a tool that is not idempotent (it ran once) and a second,
successful run for one that is; a Postgres restart mid-tool loses nothing. "Ran" is
counted from the lines the tools append to a side-effects file, whichever process ran
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from callwright import ToolContext
from callwright.call import Cancelled, Decision, InDoubt
from callwright.context import CancelToken, RunScope
from callwright.durable import ToolWorkers, use_tool_workers
from callwright.elicitation import InputAnswer
from callwright.events import Event, ToolCallResult, ToolPartialOutput, ToolProgress
from callwright.messages import ToolResultMessage
from callwright.run import Agent
from callwright.state import RunState
from callwright.usage import Usage

from ._cluster import Replica, ToolWorker, agui_body, frames, until_ended
from .worker_agent import make_agent

AGENT = str(Path(__file__).with_name("worker_agent.py")) + ":make_agent"
RECOVER = """
import sys
from dbos import DBOS
from callwright.durable import recover_executor
from callwright.durable._crossing import dbos_config
DBOS(config=dbos_config(sys.argv[1], "recoverer"))
DBOS.listen_queues([])
DBOS.launch()
print(recover_executor(sys.argv[2]), flush=True)
DBOS.destroy()
"""


@dataclass
class Worker(ToolWorker):
    """A worker of the tool-worker tests' agent."""

    agent: str = AGENT


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def ran(path: Path, word: str, tag: str) -> list[str]:
    """The side-effect lines ``<word> <tag> ... pid=N`` (one per time the tool got there)."""
    return [line for line in lines(path) if line.startswith(f"{word} {tag} ")]


def pid_of(line: str) -> int:
    return int(line.rsplit("pid=", 1)[1])


async def wait_for(check: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


@dataclass
class Web:
    """The web side: the agent with its worker tools replaced by proxies."""

    agent: Agent[Any, Any]
    workers: ToolWorkers
    side_effects: Path

    async def run(self, prompt: str) -> list[Event]:
        return [event async for event in self.agent.stream(prompt)]


def result_of(events: list[Event]) -> ToolCallResult:
    return next(e for e in events if isinstance(e, ToolCallResult))


@pytest.fixture(scope="module")
def deployment(
    postgres_url: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, list[Worker]]]:
    """Two workers on a fresh database, shared by the tests that kill nothing."""
    database = postgres_url.fresh_database()
    effects = tmp_path_factory.mktemp("workers") / "side_effects.txt"
    workers = [Worker(database, f"worker-{n}", effects) for n in "ab"]
    try:
        for worker in workers:
            worker.start()
        yield database, effects, workers
    finally:
        for worker in workers:
            worker.stop()


@pytest.fixture
async def web(
    deployment: tuple[str, Path, list[Worker]], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Web]:
    database, effects, _ = deployment
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    agent = make_agent()
    workers = ToolWorkers(database)
    proxied = ["slow", "slow_idem", "hang", "fail", "count", "transfer", "ask"]
    assert workers.apply(agent.toolbox) == proxied
    yield Web(agent, workers, effects)
    workers.close()


def tag() -> str:
    return uuid.uuid4().hex[:8]


def test_a_proxy_keeps_the_blueprint_and_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent()
    before = {t.name: t for t in agent.toolbox}
    monkeypatch.setenv("CALLWRIGHT_ALL_TOOLS_ON_WORKERS", "1")  # the deployment-wide setting
    workers = use_tool_workers(agent, "sqlite:///unused.sqlite")
    assert workers.all_tools
    assert agent.toolbox.names == list(before)  # the order the model sees stays
    for proxy in agent.toolbox:
        tool = before[proxy.name]
        assert proxy is not tool and proxy.executor is not tool.executor
        blueprint = ("description", "parameters", "requires_approval", "timeout", "idempotent")
        assert [getattr(proxy, f) for f in blueprint] == [getattr(tool, f) for f in blueprint]
    assert workers.apply(agent.toolbox) == []  # applied twice: the proxies stay as they are
    marked_only = make_agent()
    monkeypatch.delenv("CALLWRIGHT_ALL_TOOLS_ON_WORKERS")
    use_tool_workers(marked_only, "sqlite:///unused.sqlite")
    assert marked_only.toolbox.get("where") is not None
    assert marked_only.toolbox.get("where").executor is make_agent().toolbox.get("where").executor


async def test_an_unreachable_database_is_an_error_result() -> None:
    agent = make_agent()
    ToolWorkers("postgresql://postgres@127.0.0.1:1/nowhere").apply(agent.toolbox)
    result = result_of(await _collect(agent.stream('slow {"seconds": 1, "tag": "x"}')))
    assert (result.state, result.error_kind) == ("output-error", "failed")
    assert result.content == "the tool workers could not be reached (OperationalError)"


async def test_the_result_and_progress_in_order(
    web: Web, deployment: tuple[str, Path, list[Worker]]
) -> None:
    t = tag()
    events = await web.run(f'slow {{"seconds": 0.6, "tag": "{t}"}}')
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [e.text for e in progress] == [f"step {i}/6" for i in range(1, 7)]
    assert [round(e.fraction or 0, 3) for e in progress] == [round(i / 6, 3) for i in range(1, 7)]
    result = result_of(events)
    assert (result.state, result.output) == ("output-available", f"{t} finished")
    assert events.index(result) > max(
        i for i, e in enumerate(events) if isinstance(e, ToolProgress)
    )
    (start,) = ran(web.side_effects, "start", t)
    assert pid_of(start) in {w.pid for w in deployment[2]}  # a worker ran it, not this process
    assert len(ran(web.side_effects, "end", t)) == 1


async def test_a_tool_not_marked_runs_in_the_web_process(web: Web) -> None:
    t = tag()
    events = await web.run(f'where {{"tag": "{t}"}}')
    assert result_of(events).output == f"pid {os.getpid()}"


async def test_partial_outputs_in_order(web: Web) -> None:
    t = tag()
    events = await web.run(f'count {{"n": 4, "tag": "{t}"}}')
    partials = [e.output for e in events if isinstance(e, ToolPartialOutput)]
    assert partials == [{"count": i} for i in range(1, 5)]
    assert result_of(events).output == {"count": 4}


@pytest.mark.parametrize(
    ("kind", "error_kind", "text"),
    [
        ("plain", "failed", "plain failure {t}"),
        ("tool", "failed", "tool failure {t}"),
        ("own", "overheated", "Too hot: {t}"),
    ],
)
async def test_an_error_comes_back_as_an_error_result(
    web: Web, kind: str, error_kind: str, text: str
) -> None:
    t = tag()
    events = await web.run(f'fail {{"kind": "{kind}", "tag": "{t}"}}')
    result = result_of(events)
    assert (result.state, result.error_kind) == ("output-error", error_kind)
    assert result.content == text.format(t=t)
    seen = web.agent.model.requests[-1].messages[-1]  # type: ignore[attr-defined]
    assert isinstance(seen, ToolResultMessage)
    assert (seen.content, seen.is_error) == (text.format(t=t), True)
    assert len(ran(web.side_effects, "start", t)) == 1


async def test_an_approved_and_edited_call_runs_on_a_worker(web: Web) -> None:
    """Approval stays on the web side: the run pauses, and the call a human approved, with
    the amount they changed, runs on a worker."""
    t = tag()
    paused = await web.agent.run(f'transfer {{"amount": 500, "tag": "{t}"}}')
    (pending,) = paused.pending
    assert pending.kind == "approval" and ran(web.side_effects, "start", t) == []
    decision = Decision(True, arguments={"amount": 50, "tag": t})
    done = await web.agent.run(messages=paused.messages, decisions={pending.call_id: decision})
    assert done.output == (
        "Done: [The user edited the arguments before running: proposed "
        f'{{"amount":500,"tag":"{t}"}}, ran {{"amount":50,"tag":"{t}"}}.] moved 50'
    )
    (start,) = ran(web.side_effects, "start", t)
    assert "amount=50" in start and pid_of(start) != os.getpid()


async def test_a_question_from_a_worker_pauses_the_run(web: Web) -> None:
    """A tool on a worker asks a human (``InputRequired``): the run pauses on the web side;
    the answer runs the call again on a worker, which reads it from ``ctx.answer``."""
    t = tag()
    paused = await web.agent.run(f'ask {{"tag": "{t}"}}')
    (pending,) = paused.pending
    assert pending.kind == "input" and pending.request is not None
    assert pending.request.message == "How many?"
    answer = InputAnswer("accept", {"n": 3}, pending.request)
    done = await web.agent.run(messages=paused.messages, decisions={pending.call_id: answer})
    assert done.output == "Done: accept {'n': 3}"
    assert len(ran(web.side_effects, "start", t)) == 2  # asked, then went on


async def test_bad_arguments_are_refused_before_any_worker_sees_them(web: Web) -> None:
    t = tag()
    result = result_of(await web.run(f'slow {{"seconds": "soon", "tag": "{t}"}}'))
    assert (result.state, result.error_kind) == ("output-error", "invalid-args")
    assert ran(web.side_effects, "start", t) == []


async def test_the_runs_cancel_reaches_the_tool(web: Web) -> None:
    t = tag()
    run = web.agent.stream(f'slow {{"seconds": 30, "tag": "{t}"}}')
    events: list[Event] = []
    async for event in run:
        events.append(event)
        if isinstance(event, ToolProgress) and event.text == "step 3/300":
            run.cancel("the user stopped it")
    result = result_of(events)
    assert (result.state, result.error_kind) == ("output-error", "cancelled")
    await wait_for(lambda: ran(web.side_effects, "cancelled", t))
    assert ran(web.side_effects, "end", t) == []


async def test_one_cancelled_call_reaches_the_tool_and_the_run_goes_on(web: Web) -> None:
    t = tag()
    run = web.agent.stream(f'slow {{"seconds": 30, "tag": "{t}"}}')
    events: list[Event] = []
    async for event in run:
        events.append(event)
        if isinstance(event, ToolProgress) and event.text == "step 3/300":
            assert run.cancel_call(event.call_id) is True
    result = result_of(events)
    assert (result.state, result.error_kind) == ("output-error", "cancelled")
    assert result.content == "Cancelled: cancelled by the user"
    assert run.result is not None and run.result.status == "completed"
    await wait_for(lambda: ran(web.side_effects, "cancelled", t))
    assert ran(web.side_effects, "end", t) == []


async def test_a_timeout_reaches_the_tool(web: Web) -> None:
    t = tag()
    started = time.monotonic()
    result = result_of(await web.run(f'hang {{"tag": "{t}"}}'))
    assert (result.error_kind, result.content) == ("timed-out", "Timed out after 1 seconds.")
    assert time.monotonic() - started < 10  # the timeout, not the 60 s the tool wants
    await wait_for(lambda: ran(web.side_effects, "cancelled", t))


async def test_concurrent_runs_each_run_their_tool_once(web: Web) -> None:
    tags = [tag() for _ in range(6)]
    results = await asyncio.gather(
        *(web.run(f'slow {{"seconds": 0.5, "tag": "{t}"}}') for t in tags)
    )
    assert [result_of(events).output for events in results] == [f"{t} finished" for t in tags]
    for t in tags:
        assert (len(ran(web.side_effects, "start", t)), len(ran(web.side_effects, "end", t))) == (
            1,
            1,
        )


async def test_a_retried_enqueue_does_not_run_the_tool_again(web: Web) -> None:
    """The same run and call id (a retried request, a recovered segment) attach to the
    call already there: one run of the tool, the same result for both."""
    t = tag()
    agent = web.agent
    run: RunScope[Any] = RunScope(
        f"run-{t}", "thread", agent.toolbox, RunState(), None, CancelToken(), Usage(), agent.model
    )
    ctx = ToolContext[Any](call_id="call_0_0", tool_name="slow", run=run)
    arguments = {"seconds": 0.5, "tag": t}
    first, second = await asyncio.gather(
        web.workers.call("slow", arguments, ctx), web.workers.call("slow", arguments, ctx)
    )
    again = await web.workers.call("slow", arguments, ctx)
    assert [r.content for r in (first, second, again)] == [f"{t} finished"] * 3
    assert len(ran(web.side_effects, "start", t)) == 1
    outside = ToolContext[Any](call_id="call_0_0", tool_name="slow")  # no run: no retries
    assert (await web.workers.call("slow", arguments, outside)).content == f"{t} finished"
    assert len(ran(web.side_effects, "start", t)) == 2


async def test_a_cancel_before_the_call_gives_cancelled(web: Web) -> None:
    ctx = ToolContext[Any](call_id=f"call-{tag()}", tool_name="slow")
    ctx.cancel.cancel("stopped")
    with pytest.raises(Cancelled):
        await web.workers.call("slow", {"seconds": 5, "tag": tag()}, ctx)


# --- a worker killed mid-tool ----------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "recovered_by"),
    [
        ("slow", "a live worker"),
        ("slow_idem", "a live worker"),
        ("slow", "a restart"),
        ("slow", "recover_executor"),
    ],
)
async def test_a_worker_killed_mid_tool(
    postgres_url: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    recovered_by: str,
) -> None:
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    started = [Worker(database, "worker-a", effects).start()]
    if recovered_by == "a live worker":  # it holds a lease, and watches the others'
        started.append(Worker(database, "worker-b", effects).start())
    others: list[Worker] = []
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    t = tag()
    try:
        run = asyncio.ensure_future(
            _collect(agent.stream(f'{tool} {{"seconds": 2, "tag": "{t}"}}'))
        )
        await wait_for(lambda: ran(effects, "start", t), 60)
        (doomed,) = [w for w in started if w.pid == pid_of(ran(effects, "start", t)[0])]
        others = [w for w in started if w is not doomed]
        await asyncio.sleep(0.3)
        doomed.kill()
        killed_at = time.monotonic()
        if recovered_by == "a restart":
            others.append(Worker(database, doomed.executor_id, effects).start())
        elif recovered_by == "recover_executor":  # what a replica's take-over calls
            recovered = subprocess.run(
                [sys.executable, "-c", RECOVER, database, doomed.executor_id],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert "tool:" in recovered.stdout, recovered.stderr
            others.append(Worker(database, "worker-c", effects).start())
        events = await asyncio.wait_for(run, 120)
        took = time.monotonic() - killed_at
    finally:
        workers.close()
        for worker in [*started, *others]:
            worker.stop()
    result = result_of(events)
    starts = ran(effects, "start", t)
    seen = f"{result}\n{lines(effects)}\n" + "\n".join(w.log.read_text() for w in started)
    if tool == "slow_idem":
        assert (result.state, result.output) == ("output-available", f"{t} finished"), seen
        assert len(starts) == 2, seen  # run again on the live worker, to its end
        (end,) = ran(effects, "end", t)
        assert pid_of(end) == others[0].pid
    else:
        assert (result.state, result.error_kind) == ("output-error", "in-doubt"), seen
        assert result.content == InDoubt().model_text()
        assert len(starts) == 1 and ran(effects, "end", t) == [], seen  # ran once, never again
    if recovered_by == "a live worker" and tool == "slow":
        assert took < 10, seen  # seen gone at once (same host), claimed, answered
    assert took < 90, seen  # two processes start in it (a worker, and one that recovers)


async def _collect(run: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in run]


async def test_a_worker_stalled_past_its_lease_cannot_finish_a_call_another_took(
    postgres_url: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker frozen mid-tool (SIGSTOP: alive, but its lease lapses) has its call taken
    by a live worker, which answers in doubt (the tool is not idempotent). Thawed,
    the frozen worker finishes the tool, and its result is refused: the call keeps the
    taker's outcome, and the stalled worker's DBOS says it no longer owns the call."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    stalled = Worker(database, "worker-stalled", effects).start()
    taker: Worker | None = None
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    t = tag()
    try:
        run = asyncio.ensure_future(_collect(agent.stream(f'slow {{"seconds": 2, "tag": "{t}"}}')))
        await wait_for(lambda: ran(effects, "start", t), 60)
        assert stalled.process is not None
        stalled.process.send_signal(signal.SIGSTOP)
        taker = Worker(database, "worker-taker", effects).start()  # takes it once the lease lapses
        events = await asyncio.wait_for(run, 120)
        stalled.process.send_signal(signal.SIGCONT)
        await wait_for(lambda: ran(effects, "end", t), 30)  # the thawed worker's tool ends
        client = await workers.client()
        [call] = await client.list_workflows_async(name="callwright.tool")
        refused = ("no longer owned", "duplicate execution")  # DBOS 3.4's words, and 3.0's
        await wait_for(
            lambda: any(
                call.workflow_id in line and any(word in line for word in refused)
                for line in stalled.log.read_text(errors="replace").splitlines()
            ),
            30,
        )
        kept = await client.retrieve_workflow_async(call.workflow_id)
        outcome = await kept.get_result()
    finally:
        workers.close()
        if stalled.process is not None and stalled.process.poll() is None:
            stalled.process.send_signal(signal.SIGCONT)
        for worker in (stalled, taker):
            if worker is not None:
                worker.stop()
    seen = f"{lines(effects)}\n{stalled.log.read_text(errors='replace')[-3000:]}"
    result = result_of(events)
    assert (result.state, result.error_kind) == ("output-error", "in-doubt"), seen
    assert outcome["error"]["kind"] == "in-doubt", (outcome, seen)
    assert [pid_of(line) for line in ran(effects, "start", t)] == [stalled.pid], seen
    assert [pid_of(line) for line in ran(effects, "end", t)] == [stalled.pid], seen


async def test_a_stopped_worker_finishes_its_calls_first(
    postgres_url: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (a rolling deploy): the worker takes no new call, lets the running one end
    with its result, then exits; it said what it serves on start, and when it stopped."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    worker = Worker(database, "worker-stopping", effects).start()
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    t = tag()
    try:
        run = asyncio.ensure_future(_collect(agent.stream(f'slow {{"seconds": 2, "tag": "{t}"}}')))
        await wait_for(lambda: ran(effects, "start", t), 60)
        assert worker.process is not None
        worker.process.terminate()
        events = await asyncio.wait_for(run, 60)
        exit_code = await asyncio.to_thread(worker.process.wait, 30)
    finally:
        workers.close()
        worker.stop()
    assert result_of(events).output == f"{t} finished"
    assert exit_code == 0
    assert len(ran(effects, "end", t)) == 1
    said = worker.log.read_text().splitlines()
    place = database.rpartition("@")[2]  # host:port/dbname, never the user or a password
    assert said[:4] == [
        f"callwright worker worker-stopping on Postgres {place}",
        "  queue callwright-tools: tools slow, slow_idem, hang, fail, count, transfer, ask "
        "(marked on_workers)",
        "  concurrency 8; on SIGTERM, running calls get 20 s",
        "callwright worker ready",
    ], said
    stopping = said.index("callwright worker stopping: no new calls, running ones get 20 s")
    assert said[-1] == "callwright worker stopped" and stopping < len(said) - 1, said


async def test_a_postgres_restart_mid_tool(
    postgres_url: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker and the web side wait for the database to come back; the call ends
    with its result, and the tool ran once."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    monkeypatch.setenv("SIDE_EFFECTS", str(effects))
    worker = Worker(database, "worker-steady", effects).start()
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    t = tag()
    try:
        run = asyncio.ensure_future(_collect(agent.stream(f'slow {{"seconds": 3, "tag": "{t}"}}')))
        await wait_for(lambda: ran(effects, "start", t), 60)
        await asyncio.to_thread(postgres_url.restart)
        events = await asyncio.wait_for(run, 120)
    finally:
        workers.close()
        worker.stop()
    seen = f"{lines(effects)}\n{worker.log.read_text()}"
    result = result_of(events)
    assert (result.state, result.output) == ("output-available", f"{t} finished"), seen
    assert (len(ran(effects, "start", t)), len(ran(effects, "end", t))) == (1, 1), seen


async def test_one_trace_across_the_worker(
    postgres_url: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's ``execute_tool`` span (exported by ``callwright worker`` over OTLP) is
    a child of the replica's ``execute_tool`` span of the same call."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from callwright import telemetry
    from telemetry.test_otlp import Receiver, attributes

    receiver = Receiver()
    receiver.thread.start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # milliseconds
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    worker = Worker(database, "worker-traced", effects).start()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    agent = make_agent()
    workers = ToolWorkers(database)
    workers.apply(agent.toolbox)
    try:
        result = result_of(await _collect(agent.stream('slow {"seconds": 0.2, "tag": "tr"}')))
        assert result.output == "tr finished"
        await wait_for(lambda: any(s.name == "execute_tool slow" for s in receiver.spans()))
    finally:
        telemetry.configure()
        workers.close()
        worker.stop()
        receiver.server.shutdown()
        receiver.server.server_close()
    (replica,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool slow"]
    (remote,) = [s for s in receiver.spans() if s.name == "execute_tool slow"]
    assert replica.context is not None
    assert int.from_bytes(remote.trace_id, "big") == replica.context.trace_id
    assert int.from_bytes(remote.parent_span_id, "big") == replica.context.span_id
    assert remote.kind == SpanKind.CONSUMER.value + 1  # OTLP's enum counts from unspecified
    seen = attributes(remote)
    assert seen["gen_ai.tool.call.id"] == result.call_id
    assert seen["callwright.worker.executor_id"] == "worker-traced"


class WorkersReplica(Replica):
    """A ``callwright serve --journal postgresql://`` replica of the worker tests' agent."""

    def command(self) -> list[str]:
        command = super().command()
        command[command.index("--agent") + 1] = AGENT
        return command


async def test_a_replica_runs_its_worker_tools_on_workers(
    postgres_url: Any, tmp_path: Path
) -> None:
    """``callwright serve --journal`` and ``callwright worker --journal``, as DEPLOY.md
    starts them: the tool runs in the worker, its progress reaches the AG-UI client."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    replica = WorkersReplica(database, "replica-w", effects)
    worker = Worker(database, "worker-w", effects)
    t = tag()
    try:
        replica.start()
        worker.start()
        body = agui_body(f"thread-{t}", f'slow {{"seconds": 0.5, "tag": "{t}"}}', f"run-{t}")
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(replica.url + "/agui", json=body)
        assert reply.status_code == 200, reply.text
    finally:
        worker.stop()
        replica.stop()
    events = frames(reply.text)
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == f"{t} finished"
    progress = [e for e in events if e["type"].startswith("ACTIVITY")]
    assert progress and events.index(progress[-1]) < events.index(result)
    (start,) = ran(effects, "start", t)
    assert pid_of(start) == worker.pid


async def test_a_replica_killed_while_its_tool_runs_on_a_worker(
    postgres_url: Any, tmp_path: Path
) -> None:
    """The replica dies, the worker does not: another replica continues the run; its call
    attaches to the worker's (same run and call id), so the run gets the result the
    worker went on to produce, and the tool ran once."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    a, b = (WorkersReplica(database, f"replica-{n}", effects) for n in "ab")
    worker = Worker(database, "worker-r", effects)
    t = tag()
    run = f"run-{t}"
    try:
        a.start()
        b.start()
        worker.start()
        async with httpx.AsyncClient(timeout=120) as http:
            await _killed_mid_call(http, a, effects, t, seconds=3)
            events = await until_ended(http, b.url, run)
    finally:
        worker.stop()
        a.stop()
        b.stop()
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == f"{t} finished"  # the worker's, not "interrupted"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(ran(effects, "start", t)) == 1
    assert pid_of(ran(effects, "start", t)[0]) == worker.pid


async def _killed_mid_call(
    http: httpx.AsyncClient, replica: Replica, effects: Path, t: str, *, seconds: float
) -> None:
    """Start run ``run-<t>`` (a worker tool of ``seconds``) on ``replica``; SIGKILL the
    replica once the worker has started the tool."""
    body = agui_body(f"thread-{t}", f'slow {{"seconds": {seconds}, "tag": "{t}"}}', f"run-{t}")
    stream = asyncio.create_task(http.post(replica.url + "/agui", json=body))
    await wait_for(lambda: ran(effects, "start", t), 60)
    replica.kill()
    with contextlib.suppress(httpx.HTTPError):
        await stream


def _tool_workflows(database: str) -> set[str]:
    import psycopg

    with psycopg.connect(database) as db:
        rows = db.execute(
            "SELECT status FROM dbos.workflow_status WHERE name = 'callwright.tool'"
        ).fetchall()
    return {status for (status,) in rows}


async def test_a_tool_workflow_is_deleted_once_old_unless_its_call_may_be_made_again(
    postgres_url: Any, tmp_path: Path
) -> None:
    """``--keep-workflows``: a call's workflow that ended long enough ago is deleted, but
    not while the journal has the call started: here its replica died mid-call, and the
    replica that continues the run (deleting old workflows from its first beat) attaches
    to it and takes the worker's result; the tool ran once. Then it goes."""
    database = postgres_url.fresh_database()
    effects = tmp_path / "side_effects.txt"
    a = WorkersReplica(database, "replica-a", effects)
    b = WorkersReplica(database, "replica-b", effects, options=("--keep-workflows", "1"))
    worker = Worker(database, "worker-p", effects)
    t = tag()
    run = f"run-{t}"
    try:
        a.start()
        worker.start()
        async with httpx.AsyncClient(timeout=120) as http:
            await _killed_mid_call(http, a, effects, t, seconds=1)
            await wait_for(lambda: _tool_workflows(database) == {"SUCCESS"}, 60)
            await asyncio.sleep(1.5)  # older than b's --keep-workflows when b starts
            b.start()
            events = await until_ended(http, b.url, run)
            await wait_for(lambda: not _tool_workflows(database), 30)
    finally:
        worker.stop()
        a.stop()
        b.stop()
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == f"{t} finished"
    assert len(ran(effects, "start", t)) == 1
