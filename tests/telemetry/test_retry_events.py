"""A provider's transient failure and the retry show on the model turn's span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx
import openai

from callwright import Agent
from callwright.models import FinishPart, ModelEvent, ModelRequest, TextPart
from callwright.models._retry import RetryPolicy, retrying

if TYPE_CHECKING:
    from conftest import Otel


def too_many_requests() -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, headers={"retry-after": "0"}, request=request)
    return openai.APIStatusError("rate limited", response=response, body=None)


class FlakyModel:
    """Fails its first request with a 429, then answers: the adapters' retry path."""

    name = "flaky"
    modes = ("native",)

    def __init__(self) -> None:
        self.attempts = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return retrying(self._attempt, request.cancel, RetryPolicy(base_delay=0.001))

    async def _attempt(self) -> AsyncIterator[ModelEvent]:
        self.attempts += 1
        if self.attempts == 1:
            raise too_many_requests()
        yield TextPart("fine")
        yield FinishPart()


async def test_a_retried_request_is_an_event_on_the_chat_span(otel: Otel) -> None:
    model = FlakyModel()
    result = await Agent(model).run("hello")
    assert result.output == "fine" and model.attempts == 2
    chat = otel.one("chat flaky")
    (retry,) = [e for e in chat.events if e.name == "callwright.model.retry"]
    assert retry.attributes is not None
    assert retry.attributes["callwright.retry.attempt"] == 1
    assert retry.attributes["error.type"] == "rate_limited"
