"""The HTTP shell: ``POST /agui`` (AG-UI), ``POST /api/chat`` (AI SDK), ``GET /``.

Deliberately thin: each endpoint decodes the request with ``callwright.wire``,
checks approval claims against the approvals this server issued, starts a run
with ``Agent.start`` and streams the encoded events. Nothing here knows what a
tool or a model is. Refusals are 4xx JSON bodies ``{"error": {"message",
"code"}}``; a front-end tool named like a server tool is refused with 409
``tool_conflict`` unless the app is created with ``allow_client_override``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .call import Decision
from .events import ApprovalRequested, Event
from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .playground import PAGE, SCRIPT, asset
from .run import Agent, Run, json_depth
from .store import (
    Answer,
    ApprovalSigner,
    Journal,
    Recorder,
    Rejected,
    start_journaled,
)
from .toolbox import ToolConflict
from .wire import agui, aisdk
from .wire._common import (
    ApprovalClaim,
    ApprovalLedger,
    IssuedApproval,
    MemoryApprovalLedger,
    RunInput,
    WireError,
    resolve_claims,
)
from .wire._stream import Encoder, stream_run

log = logging.getLogger("callwright.server")

# The page and its bundle change with each release; a stale cached copy would speak to a
# newer server.
NO_CACHE = {"cache-control": "no-cache"}

AGUI_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-accel-buffering": "no",
}


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """Request limits; exceeding one is a clear 4xx, never a crash.

    Per-call limits (argument size and nesting, steps per run, time per tool)
    are the agent's ``Limits``.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    max_messages: int = 2_000
    max_json_depth: int = 64


class _RunStream(Response):
    """A response that streams one run (see ``wire._stream``), journaled when a journal is set."""

    def __init__(
        self,
        run: Run,
        encoder: Encoder,
        headers: dict[str, str],
        ledger: ApprovalLedger,
        trailer: bytes = b"",
        recorder: Recorder | None = None,
    ) -> None:
        super().__init__(status_code=200)
        self.run = run
        self.encoder = encoder
        self.stream_headers = headers
        self.ledger = ledger
        self.trailer = trailer
        self.recorder = recorder
        if recorder is not None:
            self.stream_headers = {**headers, "x-callwright-run-id": recorder.segment.request_id}

    def _record(self, event: Event, frame: bytes) -> None:
        if self.recorder is not None:
            self.recorder.record(event, frame)
        elif isinstance(event, ApprovalRequested):
            self.ledger.issue(
                event.approval_id, IssuedApproval(event.call_id, event.tool_name, event.arguments)
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await stream_run(
                self.run,
                self.encoder,
                send,
                receive,
                headers=self.stream_headers,
                trailer=self.trailer,
                on_event=self._record,
            )
        finally:
            if self.recorder is not None:
                self.recorder.finish_unrecorded("cancelled", "the stream ended early")


def create_app(
    agent: Agent,
    *,
    ledger: ApprovalLedger | None = None,
    journal: Journal | None = None,
    signer: ApprovalSigner | None = None,
    limits: ServerLimits | None = None,
    allow_client_override: bool = False,
    ai_sdk_version: int = 6,
) -> Starlette:
    """A Starlette app serving ``agent`` to AG-UI and AI SDK front ends.

    ``ai_sdk_version`` is the ``ai`` major version assumed when a request has no
    ``x-ai-sdk-version`` header. With a ``journal`` (``callwright serve --db``)
    the server keeps each thread's history, pending calls and events durably,
    trusts its journal over the client's copy, and honours an answer only for a
    call it is waiting on. Without one, ``signer`` makes approvals stateless
    (signed approval ids: no database, but no replay protection), and otherwise
    ``ledger`` remembers issued approvals in memory.
    """
    if journal is not None and signer is not None:
        raise ValueError("use a journal or a signer, not both")
    if ai_sdk_version not in aisdk.SUPPORTED_VERSIONS:
        raise ValueError(f"ai_sdk_version must be one of {aisdk.SUPPORTED_VERSIONS}")
    approvals: ApprovalLedger = ledger if ledger is not None else MemoryApprovalLedger()
    bounds = limits or ServerLimits()
    if journal is not None:
        journal.recover({t.name for t in agent.toolbox if t.idempotent})

    def check_tools(run_input: RunInput) -> None:
        if run_input.client_tools:  # refuse a conflict before any approval is used up
            try:
                agent.toolbox.with_client_tools(
                    run_input.client_tools, allow_override=allow_client_override
                )
            except ToolConflict as exc:
                raise WireError(str(exc), "tool_conflict", 409) from None
        if len(run_input.messages) > bounds.max_messages:
            raise WireError(
                f"too many messages ({len(run_input.messages)} > {bounds.max_messages})",
                "too_many_messages",
                413,
            )

    def start(run_input: RunInput) -> tuple[Run, Recorder | None]:
        check_tools(run_input)
        if journal is not None:
            return start_from_journal(journal, run_input)
        if signer is not None:
            decisions = resolve_signed_claims(run_input.claims, run_input.messages, signer)
        else:
            decisions = resolve_claims(
                run_input.claims, run_input.messages, approvals, agent.toolbox
            )
        run = agent.start(
            None,
            messages=run_input.messages,
            decisions=decisions,
            client_tools=run_input.client_tools,
            allow_client_override=allow_client_override,
            state=run_input.state,
            run_id=run_input.run_id,
            thread_id=run_input.thread_id,
            approval_ids=signer.new_id if signer is not None else None,
        )
        return run, None

    def start_from_journal(store: Journal, run_input: RunInput) -> tuple[Run, Recorder]:
        thread_id = run_input.thread_id
        if not thread_id:
            raise WireError("a thread id is required (threadId / id)", "missing_thread_id")
        try:
            return start_journaled(
                store,
                agent,
                thread_id,
                run_input.run_id or f"req_{uuid.uuid4().hex}",
                *journal_input(store, thread_id, run_input),
                client_tools=run_input.client_tools,
                allow_client_override=allow_client_override,
                state=run_input.state,
            )
        except Rejected as exc:
            raise WireError(exc.message, exc.code, exc.status) from None

    async def agui_endpoint(request: Request) -> Response:
        try:
            body = await _json(request, bounds)
            run, recorder = start(agui.decode_request(body))
        except WireError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        encoder = agui.AGUIEncoder(protocol_1=agui.wants_protocol_1(body), toolbox=run.toolbox)
        return _RunStream(run, encoder, AGUI_HEADERS, approvals, recorder=recorder)

    async def chat_endpoint(request: Request) -> Response:
        try:
            version = aisdk.client_version(request.headers, ai_sdk_version)
            body = await _json(request, bounds)
            run, recorder = start(aisdk.decode_request(body))
        except WireError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)
        encoder = aisdk.AISDKEncoder(version=version, message_id=aisdk.continued_message_id(body))
        return _RunStream(
            run, encoder, aisdk.HEADERS, approvals, encoder.close(), recorder=recorder
        )

    async def replay_endpoint(request: Request) -> Response:
        """Resume a dropped stream: the frames after the first ``after`` ones, then live ones."""
        if journal is None:
            return JSONResponse(
                WireError("no journal: start the server with --db", "no_journal", 404).body(),
                status_code=404,
            )
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            after = -1
        if after < 0:
            error = WireError("after must be a non-negative integer", "invalid_request")
            return JSONResponse(error.body(), status_code=400)
        segment = request.path_params["run_id"]
        if not journal.has_events(segment):
            error = WireError(f"no run {segment!r} in the journal", "unknown_run", 404)
            return JSONResponse(error.body(), status_code=404)
        return StreamingResponse(
            _replay(journal, segment, after),
            headers={**AGUI_HEADERS, "x-callwright-run-id": segment},
        )

    async def playground(request: Request) -> Response:
        return HTMLResponse(asset(PAGE), headers=NO_CACHE)

    async def playground_script(request: Request) -> Response:
        return Response(asset(SCRIPT), media_type="text/javascript", headers=NO_CACHE)

    return Starlette(
        routes=[
            Route("/agui", agui_endpoint, methods=["POST"]),
            Route("/api/chat", chat_endpoint, methods=["POST"]),
            Route("/runs/{run_id}/events", replay_endpoint, methods=["GET"]),
            Route("/", playground, methods=["GET"]),
            Route("/playground.js", playground_script, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (unknown path, wrong method) in our error shape."""
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    error = WireError(str(exc.detail), code, exc.status_code)
    return JSONResponse(error.body(), status_code=exc.status_code, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    """A bug: logged with its traceback, answered with a message and a code only."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    error = WireError("the server failed to handle the request", "server_error", 500)
    return JSONResponse(error.body(), status_code=500)


async def _json(request: Request, limits: ServerLimits) -> Any:
    """The body as JSON, within the size and nesting limits."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise _too_large(limits)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise _too_large(limits)
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("the request body is not valid UTF-8", "invalid_utf8") from None
    try:
        body = json.loads(text)
    except RecursionError:
        raise _too_deep(limits) from None
    except ValueError:
        raise WireError("the request body is not valid JSON", "invalid_json") from None
    if json_depth(body) > limits.max_json_depth:
        raise _too_deep(limits)
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object", "invalid_request")
    return body


def _too_large(limits: ServerLimits) -> WireError:
    return WireError(
        f"the request body exceeds {limits.max_body_bytes} bytes", "body_too_large", 413
    )


def _too_deep(limits: ServerLimits) -> WireError:
    return WireError(
        f"the request body nests deeper than {limits.max_json_depth} levels", "too_deep"
    )


def resolve_signed_claims(
    claims: list[ApprovalClaim], messages: list[Message], signer: ApprovalSigner
) -> dict[str, Decision]:
    """Decisions whose approval id carries our signature for a call of the last reply."""
    calls = next((m.tool_calls for m in reversed(messages) if isinstance(m, AssistantMessage)), [])
    decisions: dict[str, Decision] = {}
    for claim in claims:
        match = next(
            (
                part
                for part in calls
                if claim.call_id in (None, part.id)
                and signer.check_id(claim.approval_id, part.id, part.name, part.arguments)
            ),
            None,
        )
        if match is None:
            raise WireError(
                f"approval {claim.approval_id!r} is not signed by this server for a call "
                "of the last assistant message (or its arguments changed)",
                "bad_signature",
                403,
            )
        decisions[match.id] = claim.decision
    return decisions


def journal_input(
    store: Journal, thread_id: str, run_input: RunInput
) -> tuple[list[Message], list[Answer]]:
    """What a request adds to a journaled thread: new user messages and answers.

    The client's copy of the history is not trusted: only its trailing user
    messages are new; its approvals and client-tool results become answers that
    the journal checks against the calls it is waiting on.
    """
    messages = run_input.messages
    new: list[Message] = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage):
            break
        new.insert(0, message)
    if not store.history(thread_id) and not store.pending(thread_id):
        prior = messages[: len(messages) - len(new)]
        if any(isinstance(m, ToolResultMessage) for m in prior):
            orphan = next(m for m in prior if isinstance(m, ToolResultMessage))
            raise WireError(
                f"no call {orphan.call_id!r} was issued in this thread",
                "unknown_call",
                404,
            )
        new = [m for m in prior if not isinstance(m, AssistantMessage) or not m.tool_calls] + new
    answers = [
        Answer(
            "approval",
            claim.call_id,
            claim.approval_id,
            claim.decision.approved,
            claim.decision.reason,
            arguments=claim.decision.arguments,
        )
        for claim in run_input.claims
    ]
    known = {m.call_id for m in store.history(thread_id) if isinstance(m, ToolResultMessage)}
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.call_id not in known:
            answers.append(
                Answer(
                    "client",
                    message.call_id,
                    tool_name=message.tool_name or None,
                    result=message.content,
                    is_error=message.is_error,
                )
            )
    return new, answers


async def _replay(store: Journal, segment: str, after: int) -> AsyncIterator[bytes]:
    """Stored frames after the first ``after`` (non-empty) ones; follows a live run."""
    last = 0
    sent = 0
    while True:
        done = store.segment_done(segment)  # read before the events, so none is missed
        for offset, frame in store.events_after(segment, last):
            last = offset
            if frame:
                sent += 1
                if sent > after:
                    yield frame
        if done:
            return
        await asyncio.sleep(0.05)
