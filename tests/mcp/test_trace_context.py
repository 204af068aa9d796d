"""W3C trace context crosses MCP in ``_meta`` (``traceparent``), both ways.

Into callwright: a 2026-07-28 ``tools/call`` whose ``_meta`` names a trace (a raw
request, so the value is known) runs the agent tool under it: the run's
``invoke_agent`` span is in that trace, a child of the caller's span. Out of
callwright: a call to an MCP server's tool carries the ``execute_tool`` span of the
call as its ``traceparent`` (servers/tasking.py's ``traced`` tool answers with what
its request's ``_meta`` carried).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callwright import Agent, telemetry
from callwright.mcp import MCPServer
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call

MODERN = "2026-07-28"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """callwright traced into memory for one test (the global providers stay unset)."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.configure(tracer_provider=provider)
    yield spans
    telemetry.configure()
    provider.shutdown()


def test_a_callers_trace_context_parents_the_served_run(
    http_server: Any, exporter: InMemorySpanExporter
) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": f"00-{TRACE}-{PARENT}-01",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "helper", "arguments": {"prompt": "hello"}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "helper",
    }
    with httpx.Client(timeout=30) as http:
        response = http.post(http_server.url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert "You said: hello" in response.text
    (run,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert run.context is not None and run.parent is not None
    assert f"{run.context.trace_id:032x}" == TRACE
    assert f"{run.parent.span_id:016x}" == PARENT
    assert run.parent.is_remote


def scripted(tool: str) -> ScriptedModel:
    def turn(request: ModelRequest) -> list[Any]:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results and not isinstance(request.messages[-1], UserMessage):
            return [results[-1].content]
        return [call(tool, {})]

    return ScriptedModel(turn)


async def test_a_call_carries_its_span_to_the_mcp_server(
    tasking: Any, exporter: InMemorySpanExporter
) -> None:
    server = MCPServer.http(tasking.url, name="tasking")
    async with Agent(scripted("traced"), toolsets=[server]) as agent:
        result = await agent.run("trace")
    received = str(result.output)
    (tool,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool traced"]
    assert tool.context is not None
    version, trace_id, parent_id, flags = received.split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    assert trace_id == f"{tool.context.trace_id:032x}"
    assert parent_id == f"{tool.context.span_id:016x}"
