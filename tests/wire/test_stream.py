"""The streaming shell: frames leave as they happen, and a failure outside the run
becomes one error frame with a message and a code."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from callwright import Agent
from callwright.events import Event
from callwright.models import ScriptedModel
from callwright.wire._stream import stream_run
from callwright.wire.agui import AGUIEncoder
from callwright.wire.aisdk import AISDKEncoder


@pytest.mark.parametrize(
    ("path", "payload", "progress", "result"),
    [
        (
            "/agui",
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "staged"}],
            },
            "ACTIVITY_SNAPSHOT",
            "TOOL_CALL_RESULT",
        ),
        (
            "/api/chat",
            {
                "id": "c",
                "messages": [
                    {"id": "u", "role": "user", "parts": [{"type": "text", "text": "staged"}]}
                ],
            },
            "data-tool-progress",
            "tool-output-available",
        ),
    ],
)
def test_progress_is_flushed_before_the_result(
    server: Any, path: str, payload: dict[str, Any], progress: str, result: str
) -> None:
    arrived: dict[str, float] = {}
    with (
        httpx.Client(base_url=server.url, timeout=30) as c,
        c.stream("POST", path, json=payload) as r,
    ):
        for line in r.iter_lines():
            if line.startswith("data: {"):
                kind = json.loads(line[6:])["type"]
                arrived.setdefault(kind, time.monotonic())
    # the tool sleeps 0.6 s between its progress report and its result
    assert arrived[result] - arrived[progress] > 0.4


class BrokenEncoder(AGUIEncoder):
    def encode(self, event: Event) -> bytes:
        if event.type == "step-started":
            raise RuntimeError("secret internal detail")
        return super().encode(event)


@pytest.mark.parametrize("encoder", [BrokenEncoder(), AISDKEncoder()])
async def test_server_failure_is_one_error_frame(encoder: Any) -> None:
    if isinstance(encoder, AISDKEncoder):  # break it the same way
        original = encoder.encode

        def encode(event: Event) -> bytes:
            if event.type == "step-started":
                raise RuntimeError("secret internal detail")
            return original(event)

        encoder.encode = encode  # type: ignore[method-assign]
    run = Agent(ScriptedModel([["hi"]])).start("hello")
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        await asyncio.sleep(3600)

    await stream_run(run, encoder, send, receive, headers={"content-type": "text/event-stream"})
    body = b"".join(m.get("body", b"") for m in sent).decode()
    assert "secret internal detail" not in body and "Traceback" not in body
    assert sent[0]["status"] == 200
    assert sent[-1]["more_body"] is False
    last = json.loads(body.strip().split("\n\n")[-1][len("data: ") :])
    if isinstance(encoder, AISDKEncoder):
        assert last == {
            "type": "error",
            "errorText": "[server_error] the server failed while streaming the run",
        }
    else:
        assert last == {
            "type": "RUN_ERROR",
            "message": "the server failed while streaming the run",
            "code": "server_error",
        }
