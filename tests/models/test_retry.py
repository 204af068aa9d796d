"""Retry decisions: what is transient, how long to wait, and that a cancel cuts a wait."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator

import httpx
import openai

from callwright import CancelToken
from callwright.models._retry import (
    RetryPolicy,
    classify,
    retry_after_seconds,
    retrying,
    sleep_unless_cancelled,
)
from callwright.models.base import ErrorPart, ModelEvent, TextPart


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    body = {"error": {"message": f"status {status}"}}
    return openai.APIStatusError(f"status {status}", response=response, body=body)


def test_retry_after_forms() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "2.5"})) == 2.5
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 < (retry_after_seconds(httpx.Headers({"retry-after": later})) or 0) <= 30
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None


def test_classification() -> None:
    limited = classify(status_error(429, {"retry-after": "3"}))
    assert (limited.retryable, limited.code, limited.retry_after) == (True, "rate_limited", 3.0)
    assert classify(status_error(503)).retryable
    bad = classify(status_error(400))
    assert not bad.retryable and bad.code == "http_400" and "status 400" in bad.message
    request = httpx.Request("POST", "http://127.0.0.1:1/")
    assert classify(openai.APIConnectionError(request=request)).code == "connection_error"
    assert classify(openai.APITimeoutError(request=request)).code == "timeout"
    assert not classify(ValueError("bug")).retryable


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert 0.75 <= policy.backoff(0) <= 1.25
    assert 1.5 <= policy.backoff(1) <= 2.5
    assert policy.backoff(10) == 5.0


async def test_a_failure_after_streaming_began_is_not_retried() -> None:
    attempts = 0

    async def attempt() -> AsyncIterator[ModelEvent]:
        nonlocal attempts
        attempts += 1
        yield TextPart("partial")
        raise status_error(503)

    events = [e async for e in retrying(attempt, None, RetryPolicy(base_delay=0.01))]
    assert attempts == 1
    error = ErrorPart("the model provider answered 503: status 503", "http_503")
    assert events == [TextPart("partial"), error]


async def test_transient_failures_are_retried_until_success() -> None:
    attempts = 0

    async def attempt() -> AsyncIterator[ModelEvent]:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise status_error(429)
        yield TextPart("ok")

    events = [e async for e in retrying(attempt, None, RetryPolicy(base_delay=0.01))]
    assert attempts == 3 and events == [TextPart("ok")]


async def test_sleep_returns_at_once_on_cancel() -> None:
    token = CancelToken()
    asyncio.get_running_loop().call_later(0.05, token.cancel, "stop")
    started = time.monotonic()
    assert await sleep_unless_cancelled(30, token) is True
    assert time.monotonic() - started < 1
    assert await sleep_unless_cancelled(0.01, CancelToken()) is False


async def test_retry_wait_is_cut_by_cancel() -> None:
    token = CancelToken()

    async def attempt() -> AsyncIterator[ModelEvent]:
        raise status_error(429, {"retry-after": "20"})
        yield TextPart("never")  # pragma: no cover

    asyncio.get_running_loop().call_later(0.05, token.cancel, "stop")
    started = time.monotonic()
    events = [e async for e in retrying(attempt, token, RetryPolicy())]
    assert events == [] and time.monotonic() - started < 1
