"""Send traces and metrics to an OTLP/HTTP collector: the SDK wiring ``serve --otel`` uses.

The SDK and the exporter are the ``otel`` extra (``pip install 'callwright[otel]'``);
callwright itself needs only ``opentelemetry-api``. The standard ``OTEL_*``
variables keep their meaning: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and the per-signal
``..._TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"


def configure_otlp(
    endpoint: str | None = None, *, service_name: str = "callwright"
) -> Callable[[], None]:
    """Install global tracer and meter providers that export over OTLP/HTTP.

    ``endpoint`` is the collector's base URL (``http://localhost:4318``); the
    signals go to ``/v1/traces`` and ``/v1/metrics`` under it. Without one the
    exporters read the ``OTEL_EXPORTER_OTLP_*`` variables (default
    ``http://localhost:4318``). ``service_name`` applies unless ``OTEL_SERVICE_NAME``
    is set. Returns a function that flushes and shuts both providers down (call it
    when the process stops; spans are exported in batches). The global providers
    can be installed once per process.
    """
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise RuntimeError(
            "exporting traces needs the OpenTelemetry SDK: pip install 'callwright[otel]'"
        ) from exc
    base = endpoint.rstrip("/") if endpoint else None
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    resource = Resource.create(attributes)
    tracer_provider = TracerProvider(resource=resource)
    spans = OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None)
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
