"""The recording hook: a real server's event streams reach the checks, broken ones fail."""

from __future__ import annotations

import json
from typing import Any

import httpx

import conformance
from conformance.traffic import CHECKING, EXCHANGES
from live_server import Server

BROKEN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "never started"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers any request with ``BROKEN`` as an event stream."""
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for event in BROKEN:
        frame = f"data: {json.dumps(event)}\n\n".encode()
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def test_a_served_stream_is_recorded_and_its_faults_found() -> None:
    start = len(EXCHANGES)
    CHECKING[0] += 1
    try:
        with Server(app) as server:
            body = {"threadId": "t", "runId": "r", "protocolVersion": "1.1", "messages": []}
            httpx.post(server.url + "/agui", json=body, timeout=10).raise_for_status()
    finally:
        CHECKING[0] -= 1
    (exchange,) = EXCHANGES[start:]
    del EXCHANGES[start:]
    assert exchange.complete and json.loads(exchange.body)["runId"] == "r"
    found = conformance.problems([exchange])
    assert found == ["POST /agui: TEXT_MESSAGE_CONTENT for m, which is not open"], found


def test_nothing_is_kept_while_no_check_collects() -> None:
    before = len(EXCHANGES)
    with Server(app) as server:
        httpx.post(server.url + "/agui", json={}, timeout=10)
    assert len(EXCHANGES) == before
