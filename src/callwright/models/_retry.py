"""Provider errors: retry what is transient, turn the rest into one clear ErrorPart.

The SDKs retry on their own, but they sleep where the run loop cannot reach
them: a cancelled run would wait out a long ``Retry-After``. So the adapters
switch SDK retries off and use ``retrying`` instead, which sleeps racing the
run's cancel token, and ``until_cancelled``, which stops waiting for the next
chunk the moment the run is cancelled. Only a request that has not streamed
anything yet is retried: once deltas reached the UI, a second answer would be
a different one.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .base import ErrorPart, ModelEvent

if TYPE_CHECKING:
    from ..context import CancelToken

T = TypeVar("T")

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})


@dataclass(slots=True)
class RetryPolicy:
    """How often and how long a model request is retried."""

    max_attempts: int = 4
    """Attempts in all: the first try and three retries."""
    base_delay: float = 0.5
    """The first backoff in seconds; each retry doubles it."""
    max_delay: float = 30.0
    """The longest wait in seconds: a longer ``Retry-After`` is cut to this."""

    def backoff(self, attempt: int) -> float:
        """Exponential with jitter: 0.5 s, 1 s, 2 s ... (attempt counts from 0)."""
        delay: float = self.base_delay * (2**attempt)
        return float(min(self.max_delay, delay * (0.75 + random.random() / 2)))


@dataclass(slots=True)
class Failure:
    """What a failed request means: the text and code of its ErrorPart, and whether to retry."""

    message: str
    code: str
    retryable: bool
    retry_after: float | None = None
    """The provider's own ``Retry-After``, in seconds, when it sent one."""


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


@runtime_checkable
class StatusError(Protocol):
    """An HTTP error answer as the openai and anthropic SDKs raise it.

    Both SDKs are generated from one template, so their ``APIStatusError`` classes have
    this shape without sharing a base class; a protocol lets one typed function read
    both without importing either SDK (they are optional extras).
    """

    @property
    def status_code(self) -> int: ...
    @property
    def response(self) -> _Response: ...
    @property
    def body(self) -> object: ...
    @property
    def message(self) -> str: ...


def classify(exc: BaseException) -> Failure:
    """What an exception from the openai / anthropic SDKs or httpx means for a retry.

    The SDKs' timeout and connection errors have no common base either, so they are told
    by their class names (``APITimeoutError``, ``APIConnectionError``, httpx's
    ``ConnectTimeout``, ``NetworkError`` ...).
    """
    name = type(exc).__name__
    if isinstance(exc, StatusError):
        status = exc.status_code
        code = "rate_limited" if status == 429 else f"http_{status}"
        return Failure(
            f"the model provider answered {status}: {_detail(exc)}",
            code,
            status in RETRY_STATUS,
            retry_after_seconds(exc.response.headers),
        )
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return Failure(f"the model provider timed out ({name})", "timeout", True)
    if "Connection" in name or "Network" in name or isinstance(exc, OSError):
        return Failure(f"cannot reach the model provider: {exc}", "connection_error", True)
    return Failure(f"{name}: {exc}", "model_error", False)


def _detail(exc: StatusError) -> str:
    """The provider's own error message: ``{"error": {"message": ...}}`` in both APIs."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return exc.message or str(exc)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms``, then ``retry-after`` as seconds or an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


async def sleep_unless_cancelled(delay: float, cancel: CancelToken | None) -> bool:
    """Sleep; True if the token was cancelled first (then we return at once)."""
    if cancel is None:
        await asyncio.sleep(delay)
        return False
    if cancel.is_cancelled():
        return True
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({waiter}, timeout=delay)
    finally:
        waiter.cancel()
    return cancel.is_cancelled()


async def until_cancelled(stream: AsyncIterator[T], cancel: CancelToken | None) -> AsyncIterator[T]:
    """Yield from ``stream`` but stop waiting for the next item once ``cancel`` fires."""
    if cancel is None:
        async for item in stream:
            yield item
        return
    waiter: asyncio.Future[None] | None = None
    try:
        while not cancel.is_cancelled():
            step: asyncio.Future[Any] = asyncio.ensure_future(anext(stream))
            if waiter is None:
                waiter = asyncio.ensure_future(cancel.wait())
            await asyncio.wait((step, waiter), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
                return
            try:
                item = step.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if waiter is not None:
            waiter.cancel()
        if isinstance(stream, AsyncGenerator):
            await stream.aclose()


async def retrying(
    attempt: Callable[[], AsyncIterator[ModelEvent]],
    cancel: CancelToken | None,
    policy: RetryPolicy,
    *,
    classify_error: Callable[[BaseException], Failure] = classify,
) -> AsyncIterator[ModelEvent]:
    """Run ``attempt`` until it streams; retry transient failures that happen before any event."""
    for n in range(policy.max_attempts):
        started = False
        try:
            async for event in until_cancelled(attempt(), cancel):
                started = True
                yield event
            return
        except Exception as exc:
            failure = classify_error(exc)
            last = n == policy.max_attempts - 1
            if started or not failure.retryable or last:
                if failure.retryable and last and not started:
                    failure.message += f" (gave up after {policy.max_attempts} attempts)"
                yield ErrorPart(failure.message, failure.code)
                return
            delay = failure.retry_after if failure.retry_after is not None else policy.backoff(n)
            _note_retry(n + 1, failure.code, delay)
            if await sleep_unless_cancelled(min(delay, policy.max_delay), cancel):
                return


def _note_retry(attempt: int, code: str, delay: float) -> None:
    """A span event on the current (model turn's) span when tracing is on.

    Imported here: only a failing request pays for it, and without an SDK the
    current span is a no-op.
    """
    from opentelemetry import trace

    trace.get_current_span().add_event(
        "callwright.model.retry",
        {"callwright.retry.attempt": attempt, "error.type": code, "callwright.retry.delay": delay},
    )
