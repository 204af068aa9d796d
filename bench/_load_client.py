"""The load client of bench/load.py: N AG-UI runs at once, every read timed.

Two clients. The default is a bare asyncio ``Protocol`` per run (one connection each,
``Connection: close``): the request is written once and each read is appended with its
arrival time; the HTTP framing (status, headers, chunked encoding) is decoded after
the clock has stopped. It exists because httpx, the obvious client, was the bottleneck:
at N = 1000 it used 74 to 95 % of the client's core (about 8 ms of CPU per run) while the
callwright server was at 20 % of its own, so the figures measured httpx. ``--client
httpx`` keeps that client for comparison. Both time the same thing: when the bytes of
each SSE frame were read.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gc
import json
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx

from _load_turns import TEXT

PROMPT = "What is the weather in Paris?"
HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


@dataclass
class Stream:
    """One run as the client saw it."""

    started: float = 0.0
    """When its connection was opened (``perf_counter``)."""
    status: int = 0
    body: bytearray = field(default_factory=bytearray)
    """The response body; for the bare client, the whole response until ``decode``."""
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    """(when a read arrived, the length of ``body`` after it), one per read."""
    error: str | None = None
    framed: bool = False
    """Whether ``body`` still holds the HTTP response as read (the bare client's)."""


def request_body(tag: str) -> bytes:
    """An AG-UI ``RunAgentInput`` starting a new thread, as ``@ag-ui/client`` 1.0 sends it."""
    body = {
        "threadId": f"thread-{tag}",
        "runId": f"run-{tag}",
        "protocolVersion": "1.0.0",
        "messages": [{"id": f"msg-{tag}", "role": "user", "content": PROMPT}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    return json.dumps(body).encode()


# --- the bare client --------------------------------------------------------------------------


class _BareRun(asyncio.Protocol):
    """One run on its own connection: write the request, note every read, wait for EOF."""

    def __init__(self, request: bytes, stream: Stream, done: asyncio.Future[None]) -> None:
        self.request, self.stream, self.done = request, stream, done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        body = self.stream.body
        body += data
        self.stream.arrivals.append((time.perf_counter(), len(body)))

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self.stream.error = f"{type(exc).__name__}: {exc}"
        if not self.done.done():
            self.done.set_result(None)


def _bare_request(url: str, body: bytes) -> bytes:
    parts = urlsplit(url)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\nconnection: close\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        + f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _bare_run(url: str, body: bytes, stream: Stream) -> None:
    loop = asyncio.get_running_loop()
    parts = urlsplit(url)
    done: asyncio.Future[None] = loop.create_future()
    stream.framed = True
    stream.started = time.perf_counter()
    request = _bare_request(url, body)
    try:
        transport, _ = await loop.create_connection(
            lambda: _BareRun(request, stream, done), parts.hostname or "127.0.0.1", parts.port or 80
        )
    except OSError as exc:
        stream.error = f"{type(exc).__name__}: {exc}"
        return
    try:
        await done
    finally:
        transport.close()


def decode(stream: Stream) -> None:
    """The bare client's response as status and body, its reads counted in body bytes.

    Hand-written because the response was read raw on purpose (see the module): a
    status line, headers, then chunked or plain body bytes, as uvicorn writes them.
    """
    if not stream.framed:
        return
    raw = bytes(stream.body)
    stream.framed = False
    head_end = raw.find(b"\r\n\r\n")
    if head_end < 0:
        stream.body, stream.arrivals = bytearray(), []
        stream.error = stream.error or "no response"
        return
    head = raw[:head_end].decode("latin-1").lower().split("\r\n")
    stream.status = int(head[0].split()[1])
    pos = head_end + 4
    segments: list[tuple[int, int, int]] = []  # (raw start, body start, size)
    body = bytearray()
    if any(h.startswith("transfer-encoding:") and "chunked" in h for h in head[1:]):
        while (line_end := raw.find(b"\r\n", pos)) >= 0:
            size = int(raw[pos:line_end].split(b";")[0], 16)
            if size == 0:
                break
            segments.append((line_end + 2, len(body), size))
            body += raw[line_end + 2 : line_end + 2 + size]
            pos = line_end + 2 + size + 2
        else:
            stream.error = stream.error or "the chunked body was cut short"
    else:
        segments.append((pos, 0, len(raw) - pos))
        body += raw[pos:]
    starts = [s[0] for s in segments]

    def body_length(read: int) -> int:
        """How many body bytes the first ``read`` bytes of the response held."""
        i = bisect.bisect_right(starts, read) - 1
        if i < 0:
            return 0
        raw_start, body_start, size = segments[i]
        return body_start + min(size, read - raw_start)

    stream.body = body
    stream.arrivals = [(t, body_length(n)) for t, n in stream.arrivals]


# --- httpx ---------------------------------------------------------------------------------------


async def _httpx_run(client: httpx.AsyncClient, url: str, body: bytes, stream: Stream) -> None:
    stream.started = time.perf_counter()
    try:
        async with client.stream("POST", url, content=body, headers=HEADERS) as response:
            stream.status = response.status_code
            async for chunk in response.aiter_raw():
                stream.body += chunk
                stream.arrivals.append((time.perf_counter(), len(stream.body)))
    except (httpx.HTTPError, OSError) as exc:
        stream.error = f"{type(exc).__name__}: {exc}"


# --- both ---------------------------------------------------------------------------------


@dataclass
class Load:
    """What ``drive`` saw."""

    streams: list[Stream]
    start: float
    """When the first run started (``perf_counter``)."""
    client_cpu: float
    """The client's CPU seconds from the first request until every run had ended."""


async def drive(url: str, n: int, timeout: float, client: str = "bare") -> Load:
    """N runs at once, each on its own connection.

    The client's garbage collector is off while the runs stream, so that its pauses do
    not show up as gaps in the server's streams. Runs still streaming after ``timeout``
    seconds are cut off and reported unfinished.
    """
    tag = uuid.uuid4().hex[:8]
    bodies = [request_body(f"{tag}-{i}") for i in range(n)]
    streams = [Stream() for _ in range(n)]
    async with contextlib.AsyncExitStack() as stack:
        if client == "httpx":
            limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
            pool = httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout))
            await stack.enter_async_context(pool)
            one: Callable[[bytes, Stream], Coroutine[Any, Any, None]] = partial(
                _httpx_run, pool, url
            )
        else:
            one = partial(_bare_run, url)
        gc.disable()
        try:
            cpu, start = time.process_time(), time.perf_counter()
            tasks = [asyncio.create_task(one(b, s)) for b, s in zip(bodies, streams, strict=True)]
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            cpu = time.process_time() - cpu
        finally:
            gc.enable()
        for task, stream in zip(tasks, streams, strict=True):
            if task in pending:
                task.cancel()
                stream.error = f"unfinished after {timeout:.0f} s"
        await asyncio.gather(*pending, return_exceptions=True)
    for stream in streams:
        decode(stream)
        if stream.error is None and not stream.body.endswith(b"\n\n"):
            stream.error = "the response ended mid-frame"
    return Load(streams, start, cpu)


# --- reading the streams back ------------------------------------------------------------------


def frames(stream: Stream) -> list[tuple[float, dict[str, Any]]]:
    """Each SSE ``data:`` frame with the time its last byte arrived.

    Frames are split on blank lines (``\\n\\n``, what both servers write); a frame
    arrived with the first read that completed it.
    """
    body = bytes(stream.body)
    out: list[tuple[float, dict[str, Any]]] = []
    pos = read = 0
    while (end := body.find(b"\n\n", pos)) >= 0:
        block, pos = body[pos:end], end + 2
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if not data:
            continue
        while stream.arrivals[read][1] < pos:
            read += 1
        out.append((stream.arrivals[read][0], json.loads(b"\n".join(data))))
    return out


def run_ok(stream: Stream, run: Sequence[tuple[float, dict[str, Any]]]) -> bool:
    """Status 200, the tool's result, the whole answer, and RUN_FINISHED last."""
    if stream.status != 200 or stream.error is not None or not run:
        return False
    types = [payload.get("type") for _, payload in run]
    text = "".join(p["delta"] for _, p in run if p.get("type") == "TEXT_MESSAGE_CONTENT")
    return types[-1] == "RUN_FINISHED" and types.count("TOOL_CALL_RESULT") == 1 and text == TEXT
