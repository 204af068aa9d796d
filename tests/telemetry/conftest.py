"""Runs traced into the OpenTelemetry SDK's in-memory span exporter and metric reader.

``telemetry.configure`` points callwright at providers made for the test (the global
providers stay unset, so no other test is traced) and is reset afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callwright import telemetry
from callwright.telemetry import _trace


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        """The finished spans whose name starts with ``prefix``, in the order they ended."""
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return [s.name for s in self.spans()]

    def points(self, metric: str) -> list[Any]:
        """The data points of one metric (empty when it has none)."""
        data = self.reader.get_metrics_data()
        if data is None:
            return []

        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == metric:
                        return list(found.data.data_points)
        return []

    @staticmethod
    def parent(span: ReadableSpan) -> int | None:
        return span.parent.span_id if span.parent is not None else None

    @staticmethod
    def id(span: ReadableSpan) -> int:
        assert span.context is not None
        return span.context.span_id

    @staticmethod
    def trace(span: ReadableSpan) -> int:
        assert span.context is not None
        return span.context.trace_id

    @staticmethod
    def events(span: ReadableSpan) -> list[str]:
        return [event.name for event in span.events]


@pytest.fixture
def otel(caplog: pytest.LogCaptureFixture) -> Iterator[Otel]:
    """Providers for one test; the API must not have logged an error (a context detached
    in the wrong place, an attribute set on an ended span)."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.configure(tracer_provider=tracer_provider, meter_provider=meter_provider)
    _trace._paused.clear()
    yield Otel(exporter, reader, tracer_provider)
    otel_logs = [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert [r.getMessage() for r in otel_logs if r.levelno >= logging.WARNING] == []
    telemetry.configure()
    _trace._paused.clear()
    tracer_provider.shutdown()
    meter_provider.shutdown()
