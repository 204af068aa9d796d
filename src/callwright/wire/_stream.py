"""Streams one run to one HTTP client over raw ASGI, flushing every frame as it happens.

Written against ASGI directly rather than with Starlette's StreamingResponse
because of disconnects: StreamingResponse cancels the producing task when the
client goes away, which tears the run down mid-await. Here a watcher task sees
``http.disconnect`` and calls ``run.cancel()``; the run then winds down the
documented way (tools see their cancel token, get ``cancel_grace`` seconds,
and every call still gets its one result) while the remaining frames are
dropped. A failure outside the run becomes one error frame with a message and a
code; the traceback goes to the log, never to the client. ``on_event`` may
return an awaitable (a journal's durable write): the next event is pulled only
once it is done, and a ``StreamStopped`` it raises ends the stream with its own
error frame.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from ..events import Event
from ..run import Run

log = logging.getLogger("callwright.server")

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]


class StreamStopped(Exception):
    """Raised by ``on_event`` to stop the run and end the stream with this error."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Encoder(Protocol):
    def encode(self, event: Event) -> bytes: ...

    def error(self, message: str, code: str) -> bytes: ...


class _Connection:
    """One client connection: a write that never raises, and the run cancelled once the
    client is gone (a disconnect message, or a write that fails)."""

    def __init__(self, run: Run, send: Send, receive: Receive) -> None:
        self._run = run
        self._send = send
        self._receive = receive
        self.connected = True

    def gone(self) -> None:
        if self.connected:
            self.connected = False
            self._run.cancel("the client disconnected")

    async def watch(self) -> None:
        try:
            while (await self._receive())["type"] != "http.disconnect":
                pass
        except Exception:  # some servers raise instead of sending http.disconnect
            pass
        self.gone()

    async def start(self, headers: dict[str, str]) -> None:
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        await self._send({"type": "http.response.start", "status": 200, "headers": raw})

    async def write(self, body: bytes, more: bool = True) -> None:
        if not self.connected:
            return
        try:
            await self._send({"type": "http.response.body", "body": body, "more_body": more})
        except Exception:  # the connection broke under us (OSError, ClientDisconnected)
            self.gone()


async def stream_run(
    run: Run,
    encoder: Encoder,
    send: Send,
    receive: Receive,
    *,
    headers: dict[str, str],
    trailer: bytes = b"",
    on_event: Callable[[Event, bytes], Awaitable[None] | None] | None = None,
) -> None:
    """Send the run's frames as one SSE response; cancel the run if the client leaves."""
    connection = _Connection(run, send, receive)
    await connection.start(headers)
    watcher = asyncio.create_task(connection.watch())
    events = run.events()
    try:
        try:
            async for event in events:
                frame = encoder.encode(event)
                if on_event is not None:  # before sending: a journal records, then we flush
                    durable = on_event(event, frame)
                    if durable is not None:
                        await durable
                if frame:
                    await connection.write(frame)
        except StreamStopped as exc:
            log.warning("run %s stopped: %s", run.run_id, exc.message)
            await connection.write(encoder.error(exc.message, exc.code))
        except Exception:
            log.exception("run %s failed outside the run loop", run.run_id)
            error = encoder.error("the server failed while streaming the run", "server_error")
            await connection.write(error)
        await connection.write(trailer, more=False)
    finally:
        watcher.cancel()
        close = getattr(events, "aclose", None)
        if close is not None:  # a no-op once drained; unwinds the run if we were cancelled
            await close()
