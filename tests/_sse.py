"""What the tests read from a server's event stream: its JSON frames, in order."""

from __future__ import annotations

from typing import Any

import httpx

from callwright.wire._base import payloads_of


def frames(body: str | httpx.Response) -> list[dict[str, Any]]:
    """The ``data: {...}`` frames of an SSE body (or response), parsed; the AI SDK's
    ``[DONE]`` and heartbeat comments are not frames and are skipped."""
    text = body if isinstance(body, str) else body.text
    return payloads_of([text.encode()])
