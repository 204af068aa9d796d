"""Whether a run is traced: decided once when the run is made, and cheaply when it is not.

Tracing is on when :func:`configure` was given providers, or when the process has a
real (SDK) tracer or meter provider installed globally; it is off when neither is
true or ``configure(enabled=False)`` says so. While ``opentelemetry`` has not even
been imported nothing can have installed a provider, so the check does not import
it: a run that is not traced pays for one dictionary lookup and never loads the
OpenTelemetry API.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..messages import Message
    from ..models.base import Model
    from ._instruments import Hub
    from ._trace import RunTrace

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable the GenAI instrumentations read to record content (``true`` to opt in)."""

_PROVIDER_ENVS = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")


@dataclass(frozen=True, slots=True)
class _Settings:
    enabled: bool | None = None
    tracer_provider: Any = None
    meter_provider: Any = None
    capture_content: bool | None = None


_settings = _Settings()
_hub: Hub | None = None
_hub_key: tuple[int, int] | None = None


def configure(
    *,
    enabled: bool | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Set how runs made from now on report traces and metrics.

    ``tracer_provider`` / ``meter_provider``: report to these instead of the global
    ones (tests, or an application that keeps its own). ``enabled``: ``False`` turns
    tracing off even with a global SDK installed, ``True`` turns it on even without
    one (the spans then go to the API's no-op provider). ``capture_content``: record
    tool arguments and results on spans and in failed-call logs (default: the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` variable, else off).
    Calling ``configure()`` with no arguments restores the defaults.
    """
    global _settings, _hub, _hub_key
    _settings = _Settings(enabled, tracer_provider, meter_provider, capture_content)
    _hub, _hub_key = None, None


def capture_content() -> bool:
    """Whether tool arguments and results may be recorded (opt-in)."""
    if _settings.capture_content is not None:
        return _settings.capture_content
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("true", "1", "yes")


def hub() -> Hub | None:
    """The tracer and instruments runs report to, or None when tracing is off."""
    global _hub, _hub_key
    settings = _settings
    if settings.enabled is False:
        return None
    explicit = settings.tracer_provider is not None or settings.meter_provider is not None
    if not explicit and not settings.enabled and not _sdk_possible():
        return None
    from opentelemetry import metrics, trace

    tracer_provider = settings.tracer_provider or trace.get_tracer_provider()
    meter_provider = settings.meter_provider or metrics.get_meter_provider()
    if not explicit and not settings.enabled and not _real(tracer_provider, meter_provider):
        return None
    key = (id(tracer_provider), id(meter_provider))
    if _hub is None or _hub_key != key:
        from ._instruments import Hub

        _hub, _hub_key = Hub(tracer_provider, meter_provider), key
    return _hub


def trace_run(
    model: Model,
    *,
    agent_name: str | None,
    run_id: str,
    thread_id: str,
    depth: int,
    messages: Sequence[Message],
    traceparent: str | None = None,
) -> RunTrace | None:
    """The tracing of one run segment, or None when tracing is off (the loop's fast path)."""
    current = hub()
    if current is None:
        return None
    from ._trace import RunTrace

    return RunTrace(
        current,
        model=model,
        agent_name=agent_name,
        run_id=run_id,
        thread_id=thread_id,
        depth=depth,
        messages=messages,
        traceparent=traceparent,
        capture=capture_content(),
    )


def _sdk_possible() -> bool:
    """False when no provider can be installed: the API was never imported nor named in env."""
    if "opentelemetry.trace" in sys.modules or "opentelemetry.metrics" in sys.modules:
        return True
    return any(name in os.environ for name in _PROVIDER_ENVS)


def _real(tracer_provider: Any, meter_provider: Any) -> bool:
    """Whether either global provider is an SDK's rather than the API's proxy or no-op."""
    from opentelemetry import metrics, trace

    noop_tracer = isinstance(tracer_provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    noop_meter = isinstance(meter_provider, metrics.NoOpMeterProvider) or (
        type(meter_provider).__name__ == "_ProxyMeterProvider"
    )
    return not (noop_tracer and noop_meter)
