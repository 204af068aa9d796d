"""A request body as a JSON object, within the server's limits.

Not Starlette's ``request.json()``: it reads any size of body into memory and
accepts any JSON value at any depth. Here the declared and the streamed size are
both capped, and a body that nests too deep is a 400, never a ``RecursionError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from ..run import json_depth
from ..wire import FileLimits, WireError


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """Request limits; exceeding one is a clear 4xx, never a crash.

    Per-call limits (argument size and nesting, steps per run, time per tool)
    are the agent's ``Limits``.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    """The largest request body read; a larger one is refused with 413."""
    max_messages: int = 2_000
    """The most messages a request may carry (413 beyond)."""
    max_json_depth: int = 64
    """The deepest nesting of the request body (400 beyond)."""
    files: FileLimits = field(default_factory=FileLimits)
    """Files and images in user messages: size, count and media types (raise
    ``max_body_bytes`` with ``files.max_file_bytes``: base64 adds a third)."""


async def read_json(request: Request, limits: ServerLimits) -> dict[str, Any]:
    """The body as a JSON object, or a ``WireError`` saying what is wrong with it."""
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
    try:
        text = b"".join(chunks).decode("utf-8")
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
