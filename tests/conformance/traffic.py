"""The traffic of the test servers, kept for the conformance checks.

``record(app)`` wraps an ASGI app so that every event-stream response it sends is kept
with the request that asked for it (``EXCHANGES``); ``tests/live_server.Server`` wraps
every app it serves. The servers a test cannot wrap (``callwright serve`` replicas in
their own processes) are recorded from the client side instead: ``record_clients``
keeps the event streams httpx's clients read. Only event streams are kept, and only
their bytes: the checks run once per test module (see ``conftest.py``), not per frame.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

Scope = dict[str, Any]
Message = dict[str, Any]


@dataclass
class Exchange:
    """One request and the event stream the server answered it with."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    """The request's headers, names lower-cased."""
    body: bytes
    response_headers: dict[str, str] = field(default_factory=dict)
    stream: bytearray = field(default_factory=bytearray)
    complete: bool = False
    """Whether the server ended the response itself (not cut by a client that left)."""

    def json_body(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


EXCHANGES: list[Exchange] = []
CHECKING = [0]
"""How many checks are collecting (``conformance_check``): without one nothing is kept,
so the folders that do not check their streams do not pile them up."""
CLIENT_SIDE = {"on": False}
"""Whether the streams are being recorded by the clients (``record_clients``): the
in-process servers then keep nothing, so that no stream is checked twice."""


def record(app: Any) -> Any:
    """``app``, keeping each event-stream response it sends in ``EXCHANGES``."""

    async def recording(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        exchange = Exchange(
            scope["method"],
            scope["path"],
            scope.get("query_string", b"").decode("latin-1"),
            headers,
            b"",
        )
        body = bytearray()
        streaming = False

        async def receive_body() -> Message:
            message: Message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                exchange.body = bytes(body)
            return message

        async def send_stream(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start":
                exchange.response_headers = {
                    k.decode("latin-1").lower(): v.decode("latin-1")
                    for k, v in message.get("headers", [])
                }
                content_type = exchange.response_headers.get("content-type", "")
                streaming = content_type.startswith("text/event-stream")
                if streaming and CHECKING[0] and not CLIENT_SIDE["on"]:
                    EXCHANGES.append(exchange)
            elif message["type"] == "http.response.body" and streaming:
                exchange.stream.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    exchange.complete = True
            await send(message)

        await app(scope, receive_body, send_stream)

    return recording


def record_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until ``monkeypatch`` is undone, every event stream an httpx client (sync or async)
    reads is kept in ``EXCHANGES``: what a server in another process sent. A stream the
    client stopped reading, or that broke (a replica killed under it), is not complete."""
    sync_send = httpx.HTTPTransport.handle_request
    async_send = httpx.AsyncHTTPTransport.handle_async_request

    def handle(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        response = sync_send(self, request)
        exchange = _client_exchange(request, response)
        if exchange is not None:
            response.stream = _SyncRecording(response.stream, exchange)
        return response

    async def handle_async(
        self: httpx.AsyncHTTPTransport, request: httpx.Request
    ) -> httpx.Response:
        response = await async_send(self, request)
        exchange = _client_exchange(request, response)
        if exchange is not None:
            response.stream = _AsyncRecording(response.stream, exchange)
        return response

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", handle)
    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", handle_async)
    monkeypatch.setitem(CLIENT_SIDE, "on", True)


def _client_exchange(request: httpx.Request, response: httpx.Response) -> Exchange | None:
    """The exchange to keep for ``response``, appended to ``EXCHANGES``; None if it is
    not an event stream (or nothing collects)."""
    content_type = response.headers.get("content-type", "")
    if not CHECKING[0] or not content_type.startswith("text/event-stream"):
        return None
    try:
        body = request.content
    except httpx.RequestNotRead:
        body = b""
    exchange = Exchange(
        request.method,
        request.url.path,
        request.url.query.decode("latin-1"),
        {k.lower(): v for k, v in request.headers.items()},
        body,
        {k.lower(): v for k, v in response.headers.items()},
    )
    EXCHANGES.append(exchange)
    return exchange


class _SyncRecording(httpx.SyncByteStream):
    def __init__(self, stream: Any, exchange: Exchange) -> None:
        self.stream = stream
        self.exchange = exchange

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            self.exchange.stream.extend(chunk)
            yield chunk
        self.exchange.complete = True

    def close(self) -> None:
        self.stream.close()


class _AsyncRecording(httpx.AsyncByteStream):
    def __init__(self, stream: Any, exchange: Exchange) -> None:
        self.stream = stream
        self.exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            self.exchange.stream.extend(chunk)
            yield chunk
        self.exchange.complete = True

    async def aclose(self) -> None:
        await self.stream.aclose()
