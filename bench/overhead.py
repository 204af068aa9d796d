"""Loop overhead: callwright vs pydantic-ai, same machine, same run.

K sequential tool round trips (a no-op tool, a scripted model) for several K,
and one model response with 50 calls. Reports microseconds per round trip /
per call and the ratio to pydantic-ai (FunctionModel). Run: ``make bench``
(or ``python bench/overhead.py``). ``--tracing`` traces callwright's runs into the
OpenTelemetry SDK (spans batched to an exporter that drops them, metrics into an
in-memory reader): the cost of tracing when it is on.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic_ai import Agent as PAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from callwright import Agent, Limits, tool
from callwright.models import ModelRequest, ScriptedModel, call

KS = (25, 100, 200, 400)
WIDE = 50
REPEATS = 9


# --- callwright -------------------------------------------------------------------


@tool
async def noop(i: int) -> str:
    """Do nothing."""
    return "ok"


# The scripted model streams argument text, as a provider does; pydantic-ai's
# FunctionModel is handed dicts. Neither side pays for JSON encoding in the model.


def cw_sequential(k: int) -> Callable[[], Awaitable[Any]]:
    def script(request: ModelRequest) -> list[Any]:
        if request.step <= k:
            return [call("noop", f'{{"i":{request.step}}}', id=f"c{request.step}")]
        return ["done"]

    agent = Agent(
        ScriptedModel(script, record=False),
        [noop],
        limits=Limits(max_steps=k + 2, max_tokens=None, max_duration=None),
    )
    return lambda: agent.run("go")


def cw_wide(n: int) -> Callable[[], Awaitable[Any]]:
    def script(request: ModelRequest) -> list[Any]:
        if request.step == 1:
            return [call("noop", f'{{"i":{i}}}', id=f"c{i}") for i in range(n)]
        return ["done"]

    agent = Agent(ScriptedModel(script, record=False), [noop])
    return lambda: agent.run("go")


# --- pydantic-ai ----------------------------------------------------------------------


def _pai_agent(respond: Callable[[list[ModelMessage]], ModelResponse]) -> PAgent[None, str]:
    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return respond(messages)

    agent: PAgent[None, str] = PAgent(FunctionModel(fn))

    @agent.tool_plain
    async def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    return agent


def pai_sequential(k: int) -> Callable[[], Awaitable[Any]]:
    def respond(messages: list[ModelMessage]) -> ModelResponse:
        step = (len(messages) + 1) // 2
        if step <= k:
            return ModelResponse(parts=[ToolCallPart("noop", {"i": step}, tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = _pai_agent(respond)
    limits = UsageLimits(request_limit=None)
    return lambda: agent.run("go", usage_limits=limits)


def pai_wide(n: int) -> Callable[[], Awaitable[Any]]:
    def respond(messages: list[ModelMessage]) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("noop", {"i": i}, tool_call_id=f"c{i}") for i in range(n)]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = _pai_agent(respond)
    return lambda: agent.run("go")


# --- measuring --------------------------------------------------------------------------


async def side_by_side(
    a: Callable[[], Awaitable[Any]], b: Callable[[], Awaitable[Any]], repeats: int
) -> tuple[float, float]:
    """Median wall times of ``a`` and ``b``, alternating runs so both see the same machine."""
    await a()
    await b()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for make, out in ((a, times[0]), (b, times[1])):
            start = time.perf_counter()
            await make()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def trace_into_the_sdk() -> None:
    """An SDK tracer and meter for callwright's runs; the spans are batched, then dropped."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from callwright import telemetry

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Drop()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.configure(tracer_provider=tracer_provider, meter_provider=meter_provider)


async def main() -> None:
    tracing = "--tracing" in sys.argv
    if tracing:
        trace_into_the_sdk()
    rows = []
    for k in KS:
        cw, pai = await side_by_side(cw_sequential(k), pai_sequential(k), REPEATS)
        rows.append((f"sequential K={k}", "per round trip", cw / k * 1e6, pai / k * 1e6))
    cw, pai = await side_by_side(cw_wide(WIDE), pai_wide(WIDE), REPEATS * 4)
    rows.append((f"{WIDE} calls in one response", "per call", cw / WIDE * 1e6, pai / WIDE * 1e6))

    print(f"python {sys.version.split()[0]}, median of {REPEATS} alternating runs after a warm-up")
    print("callwright tracing: " + ("on (OpenTelemetry SDK)" if tracing else "off"))
    print("| case | unit | callwright µs | pydantic-ai µs | ratio (cw / pai) |")
    print("|---|---|---:|---:|---:|")
    for name, unit, a, b in rows:
        print(f"| {name} | {unit} | {a:.1f} | {b:.1f} | 1/{b / a:.0f} |")
    flat = rows[3][2] / rows[0][2]
    print(f"\ncallwright flatness: K=400 / K=25 per round trip = {flat:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
