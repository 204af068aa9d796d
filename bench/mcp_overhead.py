"""What an MCP tool call costs over a plain ``@tool``: per call, in the same run.

One run of N steps, each calling an ``echo`` tool twice, one after the other
(``strategy="sequential"``): once as a plain ``@tool`` in this process, once as the
``echo`` tool of a local MCP server over stdio (bench/_mcp_echo.py, on the mcp SDK,
2026-07-28 revision). A call's time is from its ``ToolExecutionStart`` to its
``ToolCallResult`` event as the run yields them, so it includes everything callwright
adds around the tool (the executor, the MCP session, the JSON-RPC round trip through
the server process) and nothing of the model. Opening the session (starting the server
and listing its tools) is reported apart: it is paid once per process, when the first
run starts. For scale, the same ``echo`` through the SDK's own ``Client.call_tool`` in a
loop (no callwright) is measured last: the part of the cost that is MCP itself.

    python bench/mcp_overhead.py [--steps N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from callwright import Agent, Limits, tool
from callwright.events import RunStarted, StepStarted, ToolCallResult, ToolExecutionStart
from callwright.mcp import MCPServer
from callwright.models import ModelRequest, ScriptedModel, call

SERVER = Path(__file__).with_name("_mcp_echo.py")


@tool
async def plain_echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def make_agent(steps: int) -> tuple[Agent, MCPServer]:
    def script(request: ModelRequest) -> list[Any]:
        if request.step <= steps:
            s = request.step
            return [
                call("echo", {"text": f"hello {s}"}, id=f"mcp_{s}"),
                call("plain_echo", {"text": f"hello {s}"}, id=f"plain_{s}"),
            ]
        return ["done"]

    server = MCPServer.stdio(sys.executable, [str(SERVER)], name="echo")
    limits = Limits(max_steps=steps + 2, max_tokens=None, max_duration=None, tool_timeout=None)
    model = ScriptedModel(script, record=False)
    agent = Agent(model, [plain_echo], toolsets=[server], strategy="sequential", limits=limits)
    return agent, server


async def measure(steps: int) -> dict[str, Any]:
    agent, _ = make_agent(steps)
    started: dict[str, float] = {}
    took: dict[str, list[float]] = {"mcp": [], "plain": []}
    opened = 0.0
    async with agent:
        t0 = time.perf_counter()
        async for event in agent.stream("go"):
            now = time.perf_counter()
            if isinstance(event, RunStarted):
                t0 = now
            elif isinstance(event, StepStarted) and event.step == 1:
                opened = now - t0  # the session opened and the tools listed (Toolbox.ready)
            elif isinstance(event, ToolExecutionStart):
                started[event.call_id] = now
            elif isinstance(event, ToolCallResult):
                assert event.state == "output-available", event
                kind = "mcp" if event.call_id.startswith("mcp_") else "plain"
                took[kind].append(now - started.pop(event.call_id))
    return {"opened": opened, **took}


async def sdk_alone(calls: int) -> list[float]:
    """The SDK's round trip to the same server, without callwright."""
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    took = []
    async with Client(params, cache=None) as client:
        await client.list_tools()
        for i in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": f"hello {i}"})
            took.append(time.perf_counter() - start)
    return took[1:]


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    us = 1e6
    return (
        f"median {statistics.median(ordered) * us:7.0f} µs   p90 {at(0.9) * us:7.0f} µs   "
        f"p99 {at(0.99) * us:7.0f} µs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="steps (each: one call of each)")
    args = parser.parse_args()
    result = asyncio.run(measure(args.steps))
    alone = asyncio.run(sdk_alone(args.steps))
    mcp, plain = result["mcp"][1:], result["plain"][1:]  # the first of each warms up
    print(f"MCP tool call over stdio vs plain @tool, {len(mcp)} calls each, same run")
    print(f"  plain @tool   {summary(plain)}")
    print(f"  MCP (stdio)   {summary(mcp)}")
    print(f"  SDK alone     {summary(alone)}   (mcp.Client.call_tool, no callwright)")
    extra = (statistics.median(mcp) - statistics.median(plain)) * 1e6
    print(f"  MCP adds      {extra:7.0f} µs per call (median)")
    print(f"  session open  {result['opened'] * 1e3:7.0f} ms (server start + tools/list, once)")


if __name__ == "__main__":
    main()
