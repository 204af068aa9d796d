"""Nothing a client or a model sends holds the event loop.

Each case runs while a ticker task measures the longest gap between its ticks: the
event loop's latency for every other stream. The bound is the one the issue names,
100 ms; it is the only timed assertion here.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from callwright import Agent, InvalidArgs, Tool, tool
from callwright._jsonschema import MAX_WIDTH
from callwright._threads import ToolThreads
from callwright.demo import calculate
from callwright.events import ToolCallResult, ToolInputError
from callwright.models import ScriptedModel, call

T = TypeVar("T")
LOOP_LATENCY = 0.1

EVIL_PATTERN = "^(a+)+$"  # Python's re: ~3 s at 27 characters, doubling per character
EVIL_ARGUMENT = "a" * 40 + "!"


async def max_gap_while(work: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    """Run ``work`` while a task ticks every 5 ms; return its value and the longest gap.

    Best of three: a regression holds the loop every time, while the machine's own
    scheduling (another process taking both cores) can stretch one gap now and then.
    The cyclic garbage collector is paused meanwhile: a full collection over the test
    process's heap is a stall of its own, not the work's.
    """
    best: tuple[T, float] | None = None
    for _ in range(3):
        value, gap = await _one_gap_while(work)
        if best is None or gap < best[1]:
            best = (value, gap)
        if gap < LOOP_LATENCY:
            break
    assert best is not None
    return best


async def _one_gap_while(work: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    gaps: list[float] = []
    gc.collect()
    gc.disable()
    stop = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)  # the ticker is running before the work starts
    try:
        value = await work()
        await asyncio.sleep(0.02)
    finally:
        stop.set()
        await ticker
        gc.enable()
    return value, max(gaps)


def evil_client_tool() -> Tool:
    return Tool.from_schema(
        {
            "name": "pick",
            "description": "A front-end tool whose schema backtracks in Python's re.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string", "pattern": EVIL_PATTERN}},
                "required": ["word"],
            },
        },
        client=True,
    )


def results(events: list[Any]) -> dict[str, ToolCallResult]:
    return {e.call_id: e for e in events if isinstance(e, ToolCallResult)}


# --- client schemas ---------------------------------------------------------------


async def test_a_backtracking_pattern_is_checked_in_linear_time() -> None:
    pick = evil_client_tool()

    async def check() -> str:
        with pytest.raises(InvalidArgs) as info:
            pick.validate({"word": EVIL_ARGUMENT})
        assert pick.validate({"word": "aaaa"}) == {"word": "aaaa"}
        return info.value.model_text()

    text, gap = await max_gap_while(check)
    assert "does not match" in text and "word" in text
    assert gap < LOOP_LATENCY


async def test_a_model_call_to_a_client_tool_with_a_pathological_pattern_keeps_the_loop_free() -> (
    None
):
    async def run() -> list[Any]:
        model = ScriptedModel([[call("pick", {"word": EVIL_ARGUMENT * 10})], ["sorry"]])
        agent = Agent(model, [])
        return [e async for e in agent.stream("pick", client_tools=[evil_client_tool()])]

    events, gap = await max_gap_while(run)
    refused = [e for e in events if isinstance(e, ToolInputError)]
    assert refused and "does not match" in refused[0].error
    assert gap < LOOP_LATENCY


@pytest.mark.parametrize("pattern", ["^(?=a)a+$", "(?<!x)y", "^(a)\\1$", "(?!secret)\\w+"], ids=str)
def test_patterns_the_linear_engine_cannot_run_refuse_the_schema(pattern: str) -> None:
    blueprint = {
        "name": "pick",
        "parameters": {"type": "object", "properties": {"word": {"pattern": pattern}}},
    }
    with pytest.raises(ValueError, match="lookahead, lookbehind and backreferences"):
        Tool.from_schema(blueprint, client=True)


def test_the_refusal_reaches_a_client_as_a_4xx_tool_error() -> None:
    from callwright.wire._common import WireError, client_tools_from

    definitions = [{"name": "pick", "parameters": {"properties": {"w": {"pattern": "(?=a)"}}}}]
    with pytest.raises(WireError) as info:
        client_tools_from(definitions, "tools")
    assert info.value.status == 400 and info.value.code == "invalid_tool"
    assert "'(?=a)'" in info.value.message


def test_usual_patterns_and_formats_still_validate() -> None:
    t = Tool.from_schema(
        {
            "name": "contact",
            "parameters": {
                "type": "object",
                "properties": {
                    "phone": {"type": "string", "pattern": "^\\+?[0-9 ()-]{7,20}$"},
                    "code": {"type": "string", "pattern": "^[\\u0041-\\u005A]{3}$"},
                    "when": {"type": "string", "format": "date-time"},
                },
                "patternProperties": {"^x-[a-z]+$": {"type": "integer"}},
            },
        }
    )
    ok = {"phone": "+33 1 23 45 67", "code": "EUR", "when": "2025-01-01T00:00:00Z", "x-n": 1}
    assert t.validate(ok) == ok
    for bad in ({"phone": "call me"}, {"code": "eur"}, {"x-n": "one"}):
        with pytest.raises(InvalidArgs):
            t.validate(bad)


def exponential_schema(depth: int) -> dict[str, Any]:
    """anyOf of two references, ``depth`` deep: 2**depth subschemas for one value."""
    defs: dict[str, Any] = {
        f"n{i}": {"anyOf": [{"$ref": f"#/$defs/n{i + 1}"}, {"$ref": f"#/$defs/n{i + 1}"}]}
        for i in range(depth)
    }
    defs[f"n{depth}"] = {"type": "string"}
    return {"type": "object", "properties": {"v": {"$ref": "#/$defs/n0"}}, "$defs": defs}


async def test_an_exponential_schema_is_refused_before_anything_runs() -> None:
    async def make() -> str:
        with pytest.raises(ValueError) as info:
            Tool.from_schema({"name": "bomb", "parameters": exponential_schema(30)})
        return str(info.value)

    message, gap = await max_gap_while(make)
    assert f"more than {MAX_WIDTH} subschemas" in message
    assert gap < LOOP_LATENCY


def test_schemas_that_could_hide_their_cost_are_refused() -> None:
    hidden = [
        {"$defs": {"a": {"$id": "https://example.com/a"}}},
        {"$dynamicRef": "#meta"},
        {"$ref": "https://example.com/remote.json"},
    ]
    for params in hidden:
        with pytest.raises(ValueError):
            Tool.from_schema({"name": "t", "parameters": {"type": "object", **params}})


async def test_arguments_too_large_for_a_wide_schema_are_refused_quickly() -> None:
    wide = {"allOf": [{"type": "integer", "minimum": -i} for i in range(MAX_WIDTH - 1)]}
    t = Tool.from_schema(
        {"name": "sum", "parameters": {"type": "object", "properties": {"n": {"items": wide}}}}
    )
    numbers = list(range(1_000_000))

    async def check() -> str:
        with pytest.raises(InvalidArgs) as info:
            t.validate({"n": numbers})
        assert t.validate({"n": numbers[:100]}) == {"n": numbers[:100]}
        return info.value.model_text()

    text, gap = await max_gap_while(check)
    assert "too large to check" in text
    assert gap < LOOP_LATENCY


async def test_unique_items_is_not_quadratic() -> None:
    t = Tool.from_schema(
        {
            "name": "tags",
            "parameters": {"type": "object", "properties": {"t": {"uniqueItems": True}}},
        }
    )
    distinct = [{"id": i} for i in range(10_000)]  # python-jsonschema: ~3 minutes

    async def check() -> None:
        assert t.validate({"t": distinct}) == {"t": distinct}
        with pytest.raises(InvalidArgs, match="non-unique"):
            t.validate({"t": [*distinct, {"id": 7}]})

    _, gap = await max_gap_while(check)
    assert gap < LOOP_LATENCY


# --- the demo's calculate ---------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    ["((3**1000)**1000)**40", "((3**1000)**1000)**100", "(10**999)*(10**999)*(10**999)**3"],
)
async def test_a_huge_calculation_is_refused_and_the_loop_keeps_ticking(expression: str) -> None:
    async def run() -> list[Any]:
        model = ScriptedModel([[call("calculate", {"expression": expression})], ["too big"]])
        return [e async for e in Agent(model, [calculate]).stream("compute")]

    events, gap = await max_gap_while(run)
    (result,) = results(events).values()
    assert result.state == "output-error" and result.error_kind == "invalid-args"
    assert "digits" in (result.error or "")
    assert gap < LOOP_LATENCY


# --- synchronous tools ------------------------------------------------------------


async def test_a_sync_tool_past_its_timeout_times_out_while_the_loop_ticks() -> None:
    release = threading.Event()
    finished = threading.Event()
    threads: list[str] = []

    @tool(timeout=0.2)
    def stuck() -> str:
        """Block its thread far past its timeout."""
        threads.append(threading.current_thread().name)
        release.wait(10)
        finished.set()
        return "late"

    async def run() -> list[Any]:
        model = ScriptedModel([[call("stuck")], ["gave up"]])
        return [e async for e in Agent(model, [stuck]).stream("go")]

    try:
        events, gap = await max_gap_while(run)
        (result,) = results(events).values()
        assert result.state == "output-error" and result.error_kind == "timed-out"
        assert not finished.is_set()  # the result came while the thread was still blocked
        assert threads and threads[0].startswith("callwright-tool-")
        assert gap < LOOP_LATENCY
    finally:
        release.set()


async def test_the_tool_thread_pool_is_bounded_and_skips_abandoned_queued_work() -> None:
    pool = ToolThreads(max_threads=2)
    release = threading.Event()
    ran: list[int] = []

    def job(i: int) -> int:
        ran.append(i)
        release.wait(10)
        return i

    futures = [pool.submit(job, i) for i in range(10)]
    try:
        for _ in range(100):  # both threads picked up their first job
            if len(ran) == 2:
                break
            await asyncio.sleep(0.01)
        assert pool.started == 2 and sorted(ran) == [0, 1]
        for future in futures[2:5]:
            assert future.cancel()  # queued: a cancelled await never starts them
    finally:
        release.set()
    assert [f.result(5) for f in futures[5:]] == [5, 6, 7, 8, 9]
    assert pool.started == 2
    assert sorted(ran) == [0, 1, 5, 6, 7, 8, 9]


async def test_awaiting_a_queued_call_can_be_cancelled_and_it_never_runs() -> None:
    pool = ToolThreads(max_threads=1)
    release = threading.Event()
    ran: list[str] = []
    pool.submit(release.wait, 10)
    waiting = asyncio.ensure_future(pool.run(ran.append, "late"))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    assert await pool.run(ran.append, "next") is None
    assert ran == ["next"]
