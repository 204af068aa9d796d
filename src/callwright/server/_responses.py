"""The responses the endpoints return: a live run's stream, a stored run's replay, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from ..events import ApprovalRequested, Event
from ..run import Run
from ..store import Journal, Recorder
from ..wire import ApprovalLedger, IssuedApproval, WireError
from ..wire._base import SSEEncoder
from ..wire._stream import stream_run

RUN_ID_HEADER = "x-callwright-run-id"


def refusal(error: WireError) -> Response:
    """A refused request: its status and ``{"error": {"message", "code"}}``."""
    return JSONResponse(error.body(), status_code=error.status)


class RunStream(Response):
    """Streams one run (see ``wire._stream``); journals it when it has a recorder, and
    otherwise remembers the approvals it issues in the ledger."""

    def __init__(
        self,
        run: Run[Any, Any],
        encoder: SSEEncoder,
        ledger: ApprovalLedger,
        recorder: Recorder | None = None,
    ) -> None:
        super().__init__(status_code=200)
        self.run = run
        self.encoder = encoder
        self.ledger = ledger
        self.recorder = recorder
        self.stream_headers = dict(encoder.headers)
        if recorder is not None:
            self.stream_headers[RUN_ID_HEADER] = recorder.segment.request_id

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
                trailer=self.encoder.close(),
                on_event=self._record,
            )
        finally:
            if self.recorder is not None:
                self.recorder.finish_unrecorded("cancelled", "the stream ended early")


async def replay(store: Journal, segment: str, after: int) -> AsyncIterator[bytes]:
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
