"""A request body as a JSON object, and then as a run's input, within the server's limits.

Not Starlette's ``request.json()``: it reads any size of body into memory and
accepts any JSON value at any depth. Here the declared and the streamed size are
both capped, and a body that nests too deep is a 400, never a ``RecursionError``.

Parsing and decoding a body is CPU work proportional to it (a client tool's schema
checks and validator cost ~150 µs at the least, and much more with patterns), so it
runs off the event loop, on a pool of its own of ``DECODE_THREADS`` threads: other
requests are answered meanwhile, and a flood of large bodies queues there instead of
taking every core. The counts of what a body holds are checked before any of it is
decoded. Parsing itself cannot be moved out of the way: ``json.loads`` is one call that
holds every thread, so the body's values are bounded before it, from a count of its bytes
(``ServerLimits.max_json_values``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.requests import Request

from .._threads import ToolThreads
from ..run import json_depth
from ..wire import FileLimits, RunInput, WireError, agui, aisdk
from ..wire._common import (
    MAX_CLIENT_TOOLS,
    MAX_MESSAGES,
    MAX_PARTS,
    MAX_SCHEMA_VALUES,
    MAX_STATE_VALUES,
)

T = TypeVar("T")

DECODE_THREADS = 2
"""Request bodies parsed and decoded at once: CPU work, so about the cores there are."""
_decoding = ToolThreads(DECODE_THREADS)


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """Request limits; exceeding one is a clear 4xx, never a crash.

    Per-call limits (argument size and nesting, steps per run, time per tool)
    are the agent's ``Limits``.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    """The largest request body read; a larger one is refused with 413."""
    max_messages: int = MAX_MESSAGES
    """The most messages a request may carry (413 ``too_many_messages`` beyond)."""
    max_json_depth: int = 64
    """The deepest nesting of the request body (400 beyond)."""
    max_json_values: int = 150_000
    """The most JSON values the request body may hold, bounded before it is parsed by its
    count of ``,``, ``{`` and ``[`` bytes, those inside strings included (413
    ``too_many_values`` beyond). Parsing is one call that holds every thread, about
    0.5 µs a value (and far more for millions of lists, which wake the garbage
    collector): 150,000 keep it under ~100 ms. Text with that many commas (a large CSV
    pasted into a message) needs a higher limit."""
    files: FileLimits = field(default_factory=FileLimits)
    """Files and images in user messages: size, count and media types (raise
    ``max_body_bytes`` with ``files.max_file_bytes``: base64 adds a third)."""
    max_client_tools: int = MAX_CLIENT_TOOLS
    """The most front-end tools a request may declare (413 ``too_many_tools`` beyond,
    before any is decoded)."""
    max_parts: int = MAX_PARTS
    """The most parts a request's messages may hold in all: AI SDK parts, AG-UI content
    parts and tool calls (413 ``too_many_parts`` beyond, before any is decoded)."""
    max_state_values: int = MAX_STATE_VALUES
    """The most JSON values (object entries and list items, at any depth) AG-UI ``state``
    or ``forwardedProps`` may hold, each (413 ``state_too_large`` beyond, before the run
    starts): the run copies, journals and sends back its state on the event loop."""
    max_schema_values: int = MAX_SCHEMA_VALUES
    """The most JSON values one front-end tool's ``parameters`` schema may hold, enum
    entries included (413 ``schema_too_large`` beyond, before any tool is decoded)."""
    body_seconds: float = 30.0
    """The longest a request body may take to arrive, all of it (408 ``body_timeout``
    beyond): a client sending a byte now and then holds a connection no longer. How
    long the headers may take is the reverse proxy's bound (see DEPLOY.md)."""
    heartbeat_seconds: float | None = 15.0
    """How long a run's stream may send nothing before it sends an SSE comment
    (``: ping``), which clients ignore and proxies see as traffic (None: never)."""
    cancel_poll_seconds: float = 0.25
    """With a journal, how often a replica that streams runs looks for requests to stop
    one of their calls that reached another replica (``POST /runs/{run_id}/calls/
    {call_id}/cancel``): a call is stopped this long plus a database round trip after
    the request, at most. One indexed query per interval, only while runs stream."""

    def __post_init__(self) -> None:
        if self.body_seconds <= 0:
            raise ValueError("ServerLimits.body_seconds must be positive")
        if self.heartbeat_seconds is not None and self.heartbeat_seconds <= 0:
            raise ValueError("ServerLimits.heartbeat_seconds must be positive (None: off)")
        if self.cancel_poll_seconds <= 0:
            raise ValueError("ServerLimits.cancel_poll_seconds must be positive")


async def read_json(request: Request, limits: ServerLimits) -> dict[str, Any]:
    """The body as a JSON object, or a ``WireError`` saying what is wrong with it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise _too_large(limits)
    try:
        async with asyncio.timeout(limits.body_seconds):
            data = await _read(request, limits)
    except TimeoutError:
        message = f"the request body did not arrive within {limits.body_seconds:g} s"
        raise WireError(message, "body_timeout", 408) from None
    return await off_loop(_parse, data, limits)


async def _read(request: Request, limits: ServerLimits) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise _too_large(limits)
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_agui(body: dict[str, Any], limits: ServerLimits) -> RunInput:
    """``agui.decode_request`` within ``limits``, off the event loop."""
    return await off_loop(
        lambda: agui.decode_request(
            body,
            files=limits.files,
            max_messages=limits.max_messages,
            max_tools=limits.max_client_tools,
            max_parts=limits.max_parts,
            max_state_values=limits.max_state_values,
            max_schema_values=limits.max_schema_values,
        )
    )


async def decode_chat(body: dict[str, Any], limits: ServerLimits) -> RunInput:
    """``aisdk.decode_request`` within ``limits``, off the event loop."""
    return await off_loop(
        lambda: aisdk.decode_request(
            body,
            files=limits.files,
            max_messages=limits.max_messages,
            max_tools=limits.max_client_tools,
            max_parts=limits.max_parts,
            max_schema_values=limits.max_schema_values,
        )
    )


async def off_loop(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` on the decoding pool (see the module docstring)."""
    return await _decoding.run(fn, *args)


def _parse(data: bytes, limits: ServerLimits) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("the request body is not valid UTF-8", "invalid_utf8") from None
    values = data.count(b",") + data.count(b"{") + data.count(b"[")
    if values > limits.max_json_values:
        message = f"the request body holds more than {limits.max_json_values} values"
        raise WireError(message, "too_many_values", 413)
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
