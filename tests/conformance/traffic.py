"""The traffic of the test servers, kept for the conformance checks.

``record(app)`` wraps an ASGI app so that every event-stream response it sends is kept
with the request that asked for it (``EXCHANGES``); ``tests/live_server.Server`` wraps
every app it serves. Only event streams are kept, and only their bytes: the checks run
once per test module (see ``conftest.py``), not per frame.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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
                if streaming and CHECKING[0]:
                    EXCHANGES.append(exchange)
            elif message["type"] == "http.response.body" and streaming:
                exchange.stream.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    exchange.complete = True
            await send(message)

        await app(scope, receive_body, send_stream)

    return recording
