"""End to end: spans and metrics exported over OTLP/HTTP to a real receiver, read back.

The OpenTelemetry Collector cannot be installed here, so the receiver is a small HTTP
server on 127.0.0.1 that decodes what arrives with the ``opentelemetry-proto``
messages (``ExportTraceServiceRequest``, ``ExportMetricsServiceRequest``), as the
Collector's OTLP/HTTP receiver does. The HTTP side is the standard library's: a
test needs one POST handler, not a web framework.
"""

from __future__ import annotations

import gzip
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from callwright import Agent, telemetry, tool
from callwright.models import ScriptedModel, call


class Receiver:
    """An OTLP/HTTP receiver: what arrived at ``/v1/traces`` and ``/v1/metrics``, decoded."""

    def __init__(self) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.content_types: set[str] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.content_types.add(self.headers.get("content-type", ""))
                reply: Any
                if self.path == "/v1/traces":
                    receiver.traces.append(ExportTraceServiceRequest.FromString(body))
                    reply = ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    receiver.metrics.append(ExportMetricsServiceRequest.FromString(body))
                    reply = ExportMetricsServiceResponse()
                else:
                    self.send_error(404)
                    return
                payload = reply.SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.traces
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def metric_names(self) -> set[str]:
        return {
            metric.name
            for request in self.metrics
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    def service_names(self) -> set[str]:
        return {
            attribute.value.string_value
            for request in self.traces
            for resource in request.resource_spans
            for attribute in resource.resource.attributes
            if attribute.key == "service.name"
        }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    running.thread.start()
    yield running
    running.server.shutdown()
    running.server.server_close()


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        out[attribute.key] = getattr(value, value.WhichOneof("value"))
    return out


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_spans_reach_an_otlp_http_receiver(receiver: Receiver) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-test"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces"))
    )
    telemetry.configure(tracer_provider=provider)
    try:
        model = ScriptedModel([[call("add", {"a": 2, "b": 3}, id="c1")], ["5"]])
        result = await Agent(model, [add], name="adder").run("2 + 3", thread_id="t_otlp")
        assert provider.force_flush(10_000)
    finally:
        telemetry.configure()
        provider.shutdown()

    assert receiver.content_types == {"application/x-protobuf"}
    assert receiver.service_names() == {"otlp-test"}
    spans = {span.name: span for span in receiver.spans()}
    assert set(spans) == {"invoke_agent adder", "chat scripted", "execute_tool add"}
    run, tool_span = spans["invoke_agent adder"], spans["execute_tool add"]
    assert run.parent_span_id == b""
    assert tool_span.parent_span_id == run.span_id
    assert spans["chat scripted"].parent_span_id == run.span_id
    assert len({span.trace_id for span in receiver.spans()}) == 1
    assert attributes(run)["gen_ai.conversation.id"] == "t_otlp"
    assert attributes(run)["callwright.run.id"] == result.run_id
    assert attributes(tool_span)["gen_ai.tool.call.id"] == "c1"


SCRIPT = """
import asyncio

from callwright import Agent, tool
from callwright.models import ScriptedModel, call
from callwright.telemetry import configure_otlp

shutdown = configure_otlp(service_name="callwright-e2e")  # the endpoint comes from the env


@tool
async def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b


model = ScriptedModel([[call("add", {"a": 2, "b": 3}, id="c1")], ["5"]])
print(asyncio.run(Agent(model, [add]).run("2 + 3")).output)
shutdown()
"""


def test_configure_otlp_installs_the_sdk_from_the_standard_variables(
    receiver: Receiver, tmp_path: Path
) -> None:
    """A fresh process: ``configure_otlp`` installs the global providers, runs notice them
    on their own, and ``OTEL_EXPORTER_OTLP_ENDPOINT`` says where both signals go."""
    script = tmp_path / "traced.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    deadline = time.monotonic() + 10
    while not (receiver.traces and receiver.metrics) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(span.name for span in receiver.spans()) == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "invoke_agent",
    ]
    assert receiver.service_names() == {"callwright-e2e"}
    assert {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "callwright.tool.calls",
    } <= receiver.metric_names()


ROOT = Path(__file__).resolve().parents[2]


def test_serve_otel_exports_the_runs_it_serves(receiver: Receiver, tmp_path: Path) -> None:
    """``callwright serve --otel URL``: a request to the server, its run's spans at the
    collector."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CALLWRIGHT_SANDBOX": str(tmp_path),
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # milliseconds: export soon after the run
    }
    agent = f"{ROOT / 'tests' / 'playground' / 'agent.py'}:cli_agent"
    command = [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port)]
    command += ["--otel", receiver.url, "--agent", agent, "--log-level", "warning"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
            try:
                httpx.get(url + "/", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        body = {
            "threadId": "thread_serve",
            "runId": "run_serve",
            "messages": [{"id": "u1", "role": "user", "content": "remember this"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        reply = httpx.post(url + "/agui", json=body, timeout=30)
        assert reply.status_code == 200 and "RUN_FINISHED" in reply.text
        deadline = time.monotonic() + 10
        while len(receiver.spans()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(15)
    assert "traces and metrics: OTLP/HTTP to " + receiver.url in server.stdout.read().decode()  # type: ignore[union-attr]
    names = sorted(span.name for span in receiver.spans())
    assert names == ["chat scripted", "chat scripted", "execute_tool calculate", "invoke_agent"]
    run = next(span for span in receiver.spans() if span.name == "invoke_agent")
    assert attributes(run)["gen_ai.conversation.id"] == "thread_serve"
    assert receiver.service_names() == {"callwright"}
