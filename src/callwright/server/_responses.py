"""The responses the endpoints return: a live run's stream, a stored run's replay, errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from ..approvals import IssuedApproval, Issuer
from ..events import ApprovalRequested, Event, InputRequested
from ..run import Run
from ..store import Journal, JournalUnavailable, Recorder
from ..wire import WireError
from ..wire._base import HEARTBEAT, SSEEncoder, payloads_of
from ..wire._stream import StreamStopped, stream_run
from ..wire.agui import AGUIEncoder
from ..wire.aisdk import AISDKEncoder
from ._follow import first_frame, follow_live, join_live, shared_read

RUN_ID_HEADER = "x-callwright-run-id"
INTERRUPTED = (
    "this run did not finish: the server stopped or could not write its journal "
    "while it ran (resume it with a new request on its thread)"
)
POLL_SECONDS = 0.05
REPLAY_CHUNKS = 4
"""Stored chunks (up to about 64 KiB of frames each) a replay reads and sends at once."""


def refusal(error: WireError) -> Response:
    """A refused request: its status and ``{"error": {"message", "code"}}``. A 408 closes
    the connection: the rest of its body is not waited for (a slow client would
    otherwise hold the connection by sending it)."""
    headers = {"connection": "close"} if error.status == 408 else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


class Heartbeat:
    """An ASGI ``send`` that sends an SSE comment (``HEARTBEAT``) whenever its response
    has sent nothing for ``seconds``: a model thinking for minutes, a paused tool or a
    replay waiting on a live run no longer looks like a dead connection to a proxy.
    The comment goes straight to the client, never through the journal.

    A comment is sent only while no frame is being sent, and a frame waits for a
    comment in flight: the two never interleave, on any ASGI server. No lock: a frame's
    own send (the hot path) only sets a flag and reads the clock.
    """

    __slots__ = ("_busy", "_last", "_open", "_ping", "_seconds", "_send")

    def __init__(self, send: Send, seconds: float) -> None:
        self._send = send
        self._seconds = seconds
        self._last = time.monotonic()
        self._busy = False
        self._open = False
        self._ping: asyncio.Future[None] | None = None

    async def send(self, message: Message) -> None:
        while self._ping is not None:
            await asyncio.shield(self._ping)
        self._busy = True
        try:
            await self._send(message)
        finally:
            self._busy = False
            self._last = time.monotonic()
        if message["type"] == "http.response.start":
            self._open = True
        elif not message.get("more_body", False):
            self._open = False

    async def beat(self) -> None:
        """Run until cancelled, or until a comment cannot be sent (the client is gone)."""
        while True:
            wait = self._last + self._seconds - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self._busy or not self._open:  # a frame is on its way, or no stream yet
                self._last = time.monotonic()
                continue
            ping = self._ping = asyncio.get_running_loop().create_future()
            try:
                await self._send(
                    {"type": "http.response.body", "body": HEARTBEAT, "more_body": True}
                )
            except Exception:  # the connection broke: the stream's own write sees it
                return
            finally:
                self._ping = None
                ping.set_result(None)
            self._last = time.monotonic()


async def with_heartbeat(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    seconds: float | None,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """``app`` (a streaming response) answering through a ``Heartbeat`` (None: without)."""
    if seconds is None:
        await app(scope, receive, send)
        return
    heartbeat = Heartbeat(send, seconds)
    beating = asyncio.create_task(heartbeat.beat())
    try:
        await app(scope, receive, heartbeat.send)
    finally:
        beating.cancel()


class RunStream(Response):
    """Streams one run (see ``wire._stream``); journals it when it has a recorder, and
    otherwise tells the endpoints' approval verifier of the approvals it issues.

    With a recorder, a journal write that fails stops the run with a
    ``journal_unavailable`` error frame (the frame that ends a replay of a run
    that never finishes is kept when the segment begins, see ``_start``).
    """

    def __init__(
        self,
        run: Run[Any, Any],
        encoder: SSEEncoder,
        issuer: Issuer,
        recorder: Recorder | None = None,
        *,
        heartbeat_seconds: float | None = None,
    ) -> None:
        super().__init__(status_code=200)
        self.run = run
        self.heartbeat_seconds = heartbeat_seconds
        """Silence after which an SSE comment is sent (see ``Heartbeat``; None: never)."""
        self.encoder = encoder
        self.issuer = issuer
        self.recorder = recorder
        self.on_close: Callable[[], None] | None = None
        """Called once the stream has ended, however it ended."""
        self.stream_headers = dict(encoder.headers)
        self.stream_headers[RUN_ID_HEADER] = run.run_id  # what a cancel request names
        if recorder is not None:
            self.stream_headers[RUN_ID_HEADER] = recorder.segment.request_id
            recorder.cut_frame = self._cut_frame

    def _cut_frame(self, cap: int) -> bytes:
        message = f"the rest of this stream was not kept (the journal keeps {cap:,} bytes a run)"
        return self.encoder.error(message, "stream_truncated")

    def _record(self, event: Event, frame: bytes) -> Awaitable[None] | None:
        if self.recorder is not None:
            durable = self.recorder.record(event, frame)
            return None if durable is None else _stop_on_failure(durable)
        if isinstance(event, ApprovalRequested):
            self.issuer.issue(
                event.approval_id, IssuedApproval(event.call_id, event.tool_name, event.arguments)
            )
        elif isinstance(event, InputRequested):  # a tool's question (MCP elicitation)
            issued = IssuedApproval(
                event.call_id, event.tool_name, event.arguments, request=event.request
            )
            self.issuer.issue(event.request.id, issued)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await with_heartbeat(self._stream, self.heartbeat_seconds, scope, receive, send)

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await stream_run(
                self.run,
                self.encoder,
                send,
                receive,
                headers=self.stream_headers,
                trailer=self.encoder.close(),
                on_event=self._record,
            )
        finally:
            if self.on_close is not None:
                self.on_close()
            if self.recorder is not None:
                await self.recorder.finish("cancelled", "the stream ended early")


async def _stop_on_failure(durable: Awaitable[None]) -> None:
    try:
        await durable
    except JournalUnavailable as exc:
        raise StreamStopped(exc.message, "journal_unavailable") from exc


async def replay_response(
    journal: Journal,
    run_id: str,
    after: int,
    principal: str,
    headers: Mapping[str, str],
    wire: type[SSEEncoder],
    heartbeat_seconds: float | None = None,
) -> Response:
    """``GET /runs/{run_id}/events``: the stored frames after the first ``after``, then
    the live ones, with the headers and the end (AI SDK's ``[DONE]``) of the wire the run
    was streamed on (``wire`` until its first frame is kept). Raises ``WireError``: 404
    for an unknown run or another principal's, 410 for a log deleted under the
    journal's retention. While it waits on a live run, a heartbeat comment goes out
    every ``heartbeat_seconds`` of silence."""
    known, done, found = await shared_read(_look_up, journal, run_id, principal)
    if not known:
        if await asyncio.to_thread(journal.expired, run_id, principal):
            raise WireError(f"the events of run {run_id!r} are no longer kept", "expired", 410)
        raise WireError(f"no run {run_id!r} in the journal", "unknown_run", 404)
    if found is not None:
        wire = found
    elif not done:  # one poll for every follower waiting for the run's first frame
        first = await first_frame(journal, run_id, principal)
        wire = (_frame_wire(first) if first is not None else None) or wire
    return _ReplayStream(
        replay(journal, run_id, after, principal, wire.trailer),
        headers={**wire.headers, **headers, RUN_ID_HEADER: run_id},
        heartbeat_seconds=heartbeat_seconds,
    )


class _ReplayStream(StreamingResponse):
    """A replay's response, with heartbeats (see ``Heartbeat``)."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        headers: Mapping[str, str],
        heartbeat_seconds: float | None,
    ) -> None:
        super().__init__(content, headers=headers)
        self.heartbeat_seconds = heartbeat_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = super().__call__
        await with_heartbeat(call, self.heartbeat_seconds, scope, receive, send)


def _look_up(
    journal: Journal, run_id: str, principal: str
) -> tuple[bool, bool, type[SSEEncoder] | None]:
    """Whether the run is known, whether it is done, and the wire its first kept frame
    was written for: one trip to a worker thread for every follower that arrives."""
    if not journal.has_events(run_id, principal):
        return False, False, None
    done = journal.segment_done(run_id, principal)
    first = journal.events_after(run_id, 0, principal, 1)
    return True, done, _frame_wire(first[0][1]) if first else None


def _frame_wire(frame: bytes) -> type[SSEEncoder] | None:
    """The wire a kept frame was written for (AG-UI's event types are upper case, the AI
    SDK's chunk types lower case)."""
    kinds = [p.get("type") for p in payloads_of([frame])]
    if not kinds or not isinstance(kinds[0], str):
        return None
    return AISDKEncoder if kinds[0].islower() else AGUIEncoder


@dataclass(frozen=True, slots=True)
class _Page:
    """A part of a kept log, read and joined off the event loop."""

    done: bool
    """Whether the segment had ended before the part was read (then an empty part is
    the end of its log)."""
    last: int
    """The offset of its last frame (the next read starts after it)."""
    count: int
    """How many non-empty frames it held (sent or skipped)."""
    data: bytes
    """Its frames after the skipped ones, as one piece to send."""


def _read_page(store: Journal, segment: str, last: int, principal: str, skip: int) -> _Page:
    """Up to ``REPLAY_CHUNKS`` stored chunks after offset ``last``, the first ``skip``
    non-empty frames left out; whether the segment had ended is read first, so that no
    frame written before its end is missed."""
    done = store.segment_done(segment, principal)
    rows = store.events_after(segment, last, principal, REPLAY_CHUNKS)
    frames = [frame for _, frame in rows if frame]
    data = b"".join(frames[skip:]) if skip < len(frames) else b""
    return _Page(done, rows[-1][0] if rows else last, len(frames), data)


async def replay(
    store: Journal, segment: str, after: int, principal: str = "", trailer: bytes = b""
) -> AsyncIterator[bytes]:
    """Stored frames after the first ``after`` (non-empty) ones; follows a live run until
    it ends (or is settled by recovery, whose closing frame ends it), then ``trailer``.
    Once caught up with a live run, a replay sends the frames of the run's one shared
    reader (``follow_live``): many followers cost the journal one read per poll.

    A long log is read, cut and joined a bounded part at a time in a worker thread, and
    each part is one write: the event loop is never held for the length of a log, and
    other requests are served between the parts.
    """
    last = 0
    sent = 0
    while True:
        page = await shared_read(_read_page, store, segment, last, principal, max(after - sent, 0))
        last, sent = page.last, sent + page.count
        if page.data:
            yield page.data
        if page.count:  # more may be kept already, unless a running reader has them
            live = join_live(store, segment, principal, last) if sent >= after else None
            if live is None:
                continue
        elif page.done:
            break
        else:
            live = follow_live(store, segment, principal, last) if sent >= after else None
            if live is None:
                await asyncio.sleep(POLL_SECONDS)
                continue
        async for data in live:  # caught up with a live run: its one reader's frames
            yield data
        break
    if trailer:
        yield trailer
