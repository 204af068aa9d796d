"""The HTTP shell: ``POST /agui`` (AG-UI), ``POST /api/chat`` (AI SDK), ``GET /``.

Deliberately thin: each endpoint decodes the request with ``callwright.wire``,
checks approval claims against the approvals this server issued, starts a run
with ``Agent.start`` and streams the encoded events. Nothing here knows what a
tool or a model is. Refusals are 4xx JSON bodies ``{"error": {"message",
"code"}}``; a front-end tool named like a server tool is refused with 409
``tool_conflict`` unless the app is created with ``allow_client_override``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .events import ApprovalRequested, Event
from .run import Agent, Run
from .toolbox import ToolConflict
from .wire import agui, aisdk
from .wire._common import (
    ApprovalLedger,
    IssuedApproval,
    MemoryApprovalLedger,
    RunInput,
    WireError,
    resolve_claims,
)
from .wire._stream import Encoder, stream_run

# Replaced by the playground page; until then GET / says where the endpoints are.
PLAYGROUND_PLACEHOLDER = """<!doctype html>
<html><head><meta charset="utf-8"><title>callwright</title></head>
<body><h1>callwright</h1>
<p>AG-UI: <code>POST /agui</code> &middot; AI SDK UI message stream: <code>POST /api/chat</code></p>
</body></html>
"""

AGUI_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-accel-buffering": "no",
}


class _RunStream(Response):
    """A response that streams one run (see ``wire._stream``)."""

    def __init__(
        self,
        run: Run,
        encoder: Encoder,
        headers: dict[str, str],
        ledger: ApprovalLedger,
        trailer: bytes = b"",
    ) -> None:
        super().__init__(status_code=200)
        self.run = run
        self.encoder = encoder
        self.stream_headers = headers
        self.ledger = ledger
        self.trailer = trailer

    def _record(self, event: Event) -> None:
        if isinstance(event, ApprovalRequested):
            self.ledger.issue(
                event.approval_id, IssuedApproval(event.call_id, event.tool_name, event.arguments)
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await stream_run(
            self.run,
            self.encoder,
            send,
            receive,
            headers=self.stream_headers,
            trailer=self.trailer,
            on_event=self._record,
        )


def create_app(
    agent: Agent,
    *,
    ledger: ApprovalLedger | None = None,
    allow_client_override: bool = False,
    ai_sdk_version: int = 6,
) -> Starlette:
    """A Starlette app serving ``agent`` to AG-UI and AI SDK front ends.

    ``ai_sdk_version`` is the ``ai`` major version assumed when a request has no
    ``x-ai-sdk-version`` header. ``ledger`` remembers issued approvals (in
    memory by default; pass a durable one to survive restarts).
    """
    if ai_sdk_version not in aisdk.SUPPORTED_VERSIONS:
        raise ValueError(f"ai_sdk_version must be one of {aisdk.SUPPORTED_VERSIONS}")
    approvals: ApprovalLedger = ledger if ledger is not None else MemoryApprovalLedger()

    def start(run_input: RunInput) -> Run:
        if run_input.client_tools:  # refuse a conflict before any approval is used up
            try:
                agent.toolbox.with_client_tools(
                    run_input.client_tools, allow_override=allow_client_override
                )
            except ToolConflict as exc:
                raise WireError(str(exc), "tool_conflict", 409) from None
        decisions = resolve_claims(run_input.claims, run_input.messages, approvals, agent.toolbox)
        return agent.start(
            None,
            messages=run_input.messages,
            decisions=decisions,
            client_tools=run_input.client_tools,
            allow_client_override=allow_client_override,
            state=run_input.state,
            run_id=run_input.run_id,
            thread_id=run_input.thread_id,
        )

    async def agui_endpoint(request: Request) -> Response:
        try:
            body = await _json(request)
            run = start(agui.decode_request(body))
        except WireError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        encoder = agui.AGUIEncoder(protocol_1=agui.wants_protocol_1(body), toolbox=run.toolbox)
        return _RunStream(run, encoder, AGUI_HEADERS, approvals)

    async def chat_endpoint(request: Request) -> Response:
        try:
            version = aisdk.client_version(request.headers, ai_sdk_version)
            body = await _json(request)
            run = start(aisdk.decode_request(body))
        except WireError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        encoder = aisdk.AISDKEncoder(version=version, message_id=aisdk.continued_message_id(body))
        return _RunStream(run, encoder, aisdk.HEADERS, approvals, encoder.close())

    async def playground(request: Request) -> Response:
        return HTMLResponse(PLAYGROUND_PLACEHOLDER)

    return Starlette(
        routes=[
            Route("/agui", agui_endpoint, methods=["POST"]),
            Route("/api/chat", chat_endpoint, methods=["POST"]),
            Route("/", playground, methods=["GET"]),
        ]
    )


async def _json(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except ValueError:
        raise WireError("the request body is not valid JSON", "invalid_json") from None
