"""What a running tool can see and do: its call, a cancellation token, progress, state.

``CancelToken`` is written here rather than taken from anyio because a tool needs
all three ways to look at cancellation (poll, raise, await) and child tokens per
call; an ``asyncio.Event`` per token plus a list of children is all it takes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .call import Cancelled


class CancelToken:
    """Cooperative cancellation, with child tokens that follow their parent."""

    __slots__ = ("_callbacks", "_children", "_event", "reason")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._children: set[CancelToken] = set()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str = ""

    def is_cancelled(self) -> bool:
        return self._event is not None and self._event.is_set()

    def cancel(self, reason: str = "") -> None:
        if self.is_cancelled():
            return
        self.reason = reason
        if self._event is None:
            self._event = asyncio.Event()
        self._event.set()
        for child in list(self._children):
            child.cancel(reason)
        for callback in list(self._callbacks):
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Called once on cancellation (at once if already cancelled)."""
        if self.is_cancelled():
            callback()
        else:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def raise_if_cancelled(self) -> None:
        if self.is_cancelled():
            raise Cancelled(self.reason)

    async def wait(self) -> None:
        """Returns once cancelled; tools race it against their own work."""
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def __await__(self) -> Any:
        return self.wait().__await__()

    def child(self) -> CancelToken:
        token = CancelToken()
        if self.is_cancelled():
            token.cancel(self.reason)
        else:
            self._children.add(token)
        return token

    def release(self, child: CancelToken) -> None:
        """Forget a finished child so long runs do not accumulate tokens."""
        self._children.discard(child)


ProgressSink = Callable[[str, float | None], None]
UpdateSink = Callable[[Any], None]


def _ignore_progress(text: str, fraction: float | None) -> None:
    return None


def _ignore_update(partial: Any) -> None:
    return None


@dataclass(slots=True)
class ToolContext:
    """Handed to a tool that annotates a parameter with ``ToolContext``.

    ``progress`` and ``update`` reach the UI only, never the model.
    """

    call_id: str
    tool_name: str
    cancel: CancelToken = field(default_factory=CancelToken)
    state: Any = None  # the run's RunState
    deps: Any = None  # whatever the user passed as dependencies
    meta: dict[str, Any] = field(default_factory=dict)  # the call's `_` meta fields
    on_progress: ProgressSink = _ignore_progress
    on_update: UpdateSink = _ignore_update
    on_event: Callable[[Any], None] = _ignore_update  # sub-agent events, forwarded as they come
    scope: dict[str, Any] = field(default_factory=dict)  # the parent context `_scopes` allows
    run: Any = None  # the Run this call belongs to (delegates start sub-runs from it)

    def is_cancelled(self) -> bool:
        return self.cancel.is_cancelled()

    def raise_if_cancelled(self) -> None:
        self.cancel.raise_if_cancelled()

    async def cancelled(self) -> None:
        await self.cancel.wait()

    def progress(self, text: str, fraction: float | None = None) -> None:
        """Report status text, and a 0..1 fraction where the tool knows one."""
        self.on_progress(text, fraction)

    def update(self, partial: Any) -> None:
        """Stream a partial output to the UI."""
        self.on_update(partial)
